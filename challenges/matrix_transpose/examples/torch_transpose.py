"""Not allowed: the right values, but torch does the transposing copy and no
Triton kernel is launched."""

import torch


def solve(input: torch.Tensor, output: torch.Tensor, rows: int, cols: int):
    output.copy_(input.t())
