"""Entry point of the worker child: `python -m judge.worker --fd N`.

Limits are set before anything of the submission's runs, so it cannot raise
them; torch and Triton are imported before the first request so that their
seconds overlap with the judge's own start.
"""

from __future__ import annotations

import argparse
import socket

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="judge worker (internal)")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--memory-limit", type=int, default=0, help="bytes of host memory")
    parser.add_argument("--memory-rlimit", choices=["AS", "DATA"], default="AS")
    ns = parser.parse_args(argv)
    import resource
    if ns.memory_limit:
        # Soft and hard alike, before any submission code runs, so it cannot
        # raise them. CUDA reserves a huge address space at start, so a CUDA
        # worker is bounded by RLIMIT_DATA instead (bench/results: probe).
        which = getattr(resource, f"RLIMIT_{ns.memory_rlimit}")
        resource.setrlimit(which, (ns.memory_limit, ns.memory_limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Every submission needs these: importing them now, before the first
    # request, overlaps the seconds it takes with the judge's own start.
    import torch  # noqa: F401  pyflakes: ignore
    import triton  # noqa: F401  pyflakes: ignore
    from judge.worker.server import Worker
    sock = socket.socket(fileno=ns.fd)
    Worker(sock).serve()


if __name__ == "__main__":
    main()
