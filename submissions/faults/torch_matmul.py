"""Fault: solve uses torch.matmul and launches no Triton kernel.

The values are right, but the challenge requires a Triton kernel.
Expected verdict: rejected.
"""
import torch


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    c.copy_(torch.matmul(a, b))
