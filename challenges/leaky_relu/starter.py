"""Starter for the leaky_relu challenge: output = x if x > 0 else 0.01·x, in float32.

input and output are contiguous float32 tensors of length N on the GPU.
Fill in the kernel body, then check it with:  judge submit this_file.py
"""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(input_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    # TODO: compute this program's offsets, mask those past n_elements,
    # load the input, and store x where x > 0, else 0.01 * x.


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(N, BLOCK_SIZE),)
    leaky_relu_kernel[grid](input, output, N, BLOCK_SIZE=BLOCK_SIZE)
