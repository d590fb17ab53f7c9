"""Starter for the reduction challenge: output[0] = sum of input.

input is a float32 tensor of length N, output a float32 tensor of length 1,
both on the GPU. Fill in the kernel body, then check it with:
    judge submit this_file.py
"""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_kernel(input, output, N, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    # TODO: load this program's block (masked), reduce it with tl.sum, and
    # add the partial sum to output[0] (tl.atomic_add), or write it to a
    # buffer of partial sums that a second kernel adds up.


# input, output are tensors on the GPU
def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK_SIZE = 1024
    output.zero_()  # output starts as garbage
    grid = (triton.cdiv(N, BLOCK_SIZE),)
    sum_kernel[grid](input, output, N, BLOCK_SIZE=BLOCK_SIZE)
