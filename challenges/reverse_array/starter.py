"""Starter for the reverse_array challenge: reverse a float32 array in place.

`input` is a contiguous float32 tensor of length N on the GPU.
Fill in the kernel body, then check it with:  judge submit this_file.py
"""

import torch
import triton
import triton.language as tl


@triton.jit
def reverse_kernel(input, N, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    # TODO: each program owns BLOCK_SIZE pairs (i, N - 1 - i) from the first
    # half of the array; load both ends, then store them swapped, masking
    # the pairs past the middle.


# input is a tensor on the GPU
def solve(input: torch.Tensor, N: int):
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(N // 2, BLOCK_SIZE),)
    reverse_kernel[grid](input, N, BLOCK_SIZE=BLOCK_SIZE)
