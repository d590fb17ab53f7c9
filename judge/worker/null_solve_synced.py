"""The judge's second stand-in (judge.timecheck): judge/worker/null_solve.py's
one empty launch, then torch.cuda.synchronize(), as a solve that waits for
its own kernels does. The host then cannot queue the timer's next call
ahead of the GPU, so the timer's own host work runs in series with every
call; timed like any submission, this stand-in shows what that costs."""

import torch
import triton


@triton.jit
def _nothing(flag):
    pass


def solve(*args):
    _nothing[(1,)](1)
    torch.cuda.synchronize()
