"""Not allowed: the copy made by the launch's grid function, compiled with
eval under globals of its own, so that its frame is neither the file's nor
Triton's and the copy seemed to be Triton's own work below the launch. The
audit hook tells whose code it is by the code itself: the file's."""

import torch
import triton
import triton.language as tl


@triton.jit
def idle(ptr, BLOCK: tl.constexpr):
    pass


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    grid = eval("lambda meta: (b.copy_(a), (1,))[1]", {"a": a, "b": b})
    idle[grid](b, BLOCK=16)
