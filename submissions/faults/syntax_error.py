"""Fault: the file is not valid Python (missing colon after def).

Expected verdict: compile_error.
"""
import torch


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int)
    c.zero_()
