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


def warm(device: str) -> None:
    """Compile and run a small matrix product (the shape of kernel most
    challenges call: float32 pointers, int32 sizes, a tl.dot) and a
    masked elementwise kernel. Any failure is left to the grading: a
    worker that cannot run Triton will say so on its first case."""
    if device != "cuda":
        return
    try:
        import torch

        from judge.worker import warmup_kernels as kernels
        torch.cuda.init()
        a = torch.ones((16, 16), device="cuda")
        b = torch.ones((16, 16), device="cuda")
        c = torch.empty((16, 16), device="cuda")
        kernels.product[(1, 1)](a, b, c, 16, 16, 16, BLOCK=16)
        kernels.scale[(1,)](a, c, 256, BLOCK=256)
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a warm-up is an optimisation, never a verdict
        pass
