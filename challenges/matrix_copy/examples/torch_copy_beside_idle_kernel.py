"""Not allowed: b.copy_(a) does the whole job, and a Triton kernel that does
nothing is launched only so that one is. Torch's copies are refused in solve
in this challenge (challenge.toml [rules]): the copy is what is asked for."""

import torch
import triton
import triton.language as tl


@triton.jit
def idle(ptr):
    pass


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    b.copy_(a)
    idle[(1,)](b)
