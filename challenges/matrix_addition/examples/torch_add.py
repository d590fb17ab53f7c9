"""Not allowed: the right values, but torch does the addition and no Triton
kernel is launched."""

import torch


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    c.copy_(a + b)
