"""Fault: solve kills its own process with os._exit(0).

No exception, no result: the process just ends (with status 0) mid-test.
Expected verdict: runtime_error.
"""
import os

import torch


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    os._exit(0)
