"""Not allowed: the right values, but torch computes the ReLU and no Triton
kernel is launched."""

import torch


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    output.copy_(torch.relu(input))
