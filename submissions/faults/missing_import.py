"""Fault: imports a module that does not exist.

Loading the file raises ModuleNotFoundError.
Expected verdict: compile_error.
"""
import torch
import triton_fast_matmul_that_does_not_exist as tfm


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    tfm.matmul(a, b, out=c)
