"""Warming a fresh worker before it knows its submission.

A worker's first Triton kernel pays once for what every later one reuses:
the CUDA context, Triton's compiler passes and their libraries loaded, the
small C helpers Triton builds with the host compiler into the worker's own
cache. Paid inside the first case that would be seconds of a grading; paid
here, before the `load` request, it overlaps with the judge's own start
(and, in a batch, with the previous file's grading: judge.grader.prestart).
Nothing here depends on a submission, and nothing of one has run yet.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path


def warm(device: str) -> bool:
    """Compile and run a small matrix product (the shape of kernel most
    challenges call: float32 pointers, int32 sizes, a tl.dot) and a
    masked elementwise kernel; True when they ran. Any failure is left to
    the grading: a worker that cannot run Triton will say so on its first
    case."""
    if device != "cuda":
        return False
    try:
        import torch

        from judge import check_sums
        from judge.worker import warmup_kernels as kernels
        torch.cuda.init()
        a = torch.ones((16, 16), device="cuda")
        b = torch.ones((16, 16), device="cuda")
        c = torch.empty((16, 16), device="cuda")
        kernels.product[(1, 1)](a, b, c, 16, 16, 16, BLOCK=16)
        kernels.scale[(1,)](a, c, 256, BLOCK=256)
        check_sums.prepare(c)  # the timer's check sums (judge.timing): compiled and their launcher kept,
        # before any submission
        torch.cuda.synchronize()
        return True
    except Exception:  # noqa: BLE001 - a warm-up is an optimisation, never a verdict
        return False


def build_seed(seed: Path) -> int:
    """The judge's seed for graded workers' Triton caches (judge.warm_cache):
    warm a scratch cache, then move it into place in one rename. Runs judge
    code only."""
    seed.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=seed.name + ".building-", dir=seed.parent))
    # The rest of the environment is a worker's already (judge.warm_cache.start_build).
    os.environ.update(TRITON_CACHE_DIR=str(scratch / "cache"), HOME=str(scratch), PYTHONDONTWRITEBYTECODE="1")
    try:
        if warm("cuda"):
            os.rename(scratch / "cache", seed)
            return 0
    except OSError:  # another builder was first
        pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description="build the judge's Triton cache seed (judge.warm_cache)")
    parser.add_argument("--seed", type=Path, required=True)
    from judge.worker import launcher_source, tritonkey
    tritonkey.install()  # the workers' key too, so that they find what this process compiles
    launcher_source.install()  # the workers' launcher texts (fenced), so that they find these launchers
    sys.exit(build_seed(parser.parse_args().seed))
