"""Not allowed: the right values, but torch computes the leaky ReLU and no
Triton kernel is launched."""

import torch
import torch.nn.functional as F


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    output.copy_(F.leaky_relu(input, 0.01))
