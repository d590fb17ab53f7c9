"""Fault: solve never returns (a busy Python loop).

Expected verdict: time_limit_exceeded.
"""
import torch


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    while True:
        pass
