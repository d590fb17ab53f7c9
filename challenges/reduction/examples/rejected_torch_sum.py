"""Rejected: a Triton kernel is launched, but the sum itself comes from
torch.sum, which the challenge forbids."""

import torch
import triton
import triton.language as tl


@triton.jit
def store_kernel(src_ptr, out_ptr):
    tl.store(out_ptr, tl.load(src_ptr))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    total = torch.sum(input).reshape(1)
    store_kernel[(1,)](total, output)
