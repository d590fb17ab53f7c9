"""Entry point of the worker child: `python -m judge.worker --fd N`.

Limits are set before anything of the submission's runs, so it cannot raise
them; torch and Triton are imported before the first request so that their
seconds overlap with the judge's own start.
"""

from __future__ import annotations

import argparse
import os
import socket


def _stay_init(ns) -> None:
    """In a PID namespace of its own the worker starts as process 1, which
    ignores the signals it sends itself and adopts every orphan. It forks:
    the parent stays the namespace's init (reaps, and exits with the
    worker's status, 128 + signal for a signal, as the sandbox tools
    report), the child is the worker. When the init exits, the kernel kills
    everything left in the namespace."""
    pid = os.fork()
    if pid == 0:
        return
    os.close(ns.fd)
    for fd in (0, 1, 2):  # the drains of stdout and stderr end with the worker, not with us
        try:
            os.close(fd)
        except OSError:
            pass
    while True:
        try:
            done, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if done == pid:
            os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))

def _die_with_parent() -> None:
    """SIGKILL when the process that started this one dies (a batch lane
    killed with -9 left its worker running for minutes: it has a session of
    its own, so no signal to the lane's group reached it)."""
    import ctypes
    import signal
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="judge worker (internal)")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--memory-limit", type=int, default=0, help="bytes of host memory")
    parser.add_argument("--memory-rlimit", choices=["AS", "DATA"], default="AS")
    parser.add_argument("--file-limit", type=int, default=0, help="bytes of any one file written (RLIMIT_FSIZE)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="warm this device up first")
    parser.add_argument("--jail", help="JSON: build a read-only file system first (judge.worker.jail)")
    parser.add_argument("--user", type=int, help="switch to this user once the jail is built "
                                                  "(judge.worker.privileges)")
    ns = parser.parse_args(argv)
    _die_with_parent()
    if ns.jail:
        # First of all, before Python reads another file: the jail covers /tmp.
        from judge.worker import jail
        jail.enter_from_argument(ns.jail)
    from judge.worker import privileges
    if ns.user is not None:
        privileges.drop(ns.user)  # before torch: nothing else has run, no thread exists
    else:
        privileges.drop_capabilities()
    if os.getpid() == 1:
        _stay_init(ns)
    import resource
    if ns.memory_limit:
        # Soft and hard alike, before any submission code runs, so it cannot
        # raise them. CUDA reserves a huge address space at start, so a CUDA
        # worker is bounded by RLIMIT_DATA instead (bench/results: probe).
        which = getattr(resource, f"RLIMIT_{ns.memory_rlimit}")
        resource.setrlimit(which, (ns.memory_limit, ns.memory_limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if ns.file_limit:  # a write past it fails (EFBIG: Python ignores SIGXFSZ); the judge watches the sum
        resource.setrlimit(resource.RLIMIT_FSIZE, (ns.file_limit, ns.file_limit))
    from judge.worker import kernel_output
    kernel_output.install()  # before CUDA starts: the driver's printf goes where the file cannot redirect it
    # Every submission needs these: importing them now, before the first
    # request, overlaps the seconds it takes with the judge's own start.
    import time
    began = time.monotonic()
    if ns.device == "cuda":
        from judge import cuda_early
        cuda_early.start()  # the GPU's context, made while torch imports
    import torch  # noqa: F401  pyflakes: ignore
    import triton  # noqa: F401  pyflakes: ignore
    imported = time.monotonic()
    if ns.device == "cuda":
        cuda_early.wait()  # made before anything else runs: no thread of the judge's outlives the start
    from judge.worker import native_code, tritonkey, warmup
    tritonkey.install()  # the judge's hash of Triton's files: not computed again here
    native_code.install()  # Triton's C builds checked and loaded from sealed memfds, from the warm-up on
    warmup.warm(ns.device)  # before any request: nothing of a submission has run
    from judge.worker import arming
    arming.import_own_modules()  # sealed on the load, before the file runs
    # Where a worker's start went (reported with its load: a diagnosis only).
    startup = {"import_s": round(imported - began, 3), "warmup_s": round(time.monotonic() - imported, 3)}
    from judge.worker import server
    from judge.worker.courier import Courier, own_codes
    # The judge's line, read and written by the courier's threads alone
    # (barred to this thread once the file is about to load); a reply goes
    # out from the worker's own code only (its request loop, the timer's).
    link = Courier(socket.socket(fileno=ns.fd), allowed=own_codes("judge.worker.server", "judge.timing"))
    server.Worker(link, startup).serve()


if __name__ == "__main__":
    main()
