"""Starter for the convolution_1d challenge: a valid 1-D convolution,
output[i] = sum over j of input[i + j] * kernel[j], for
i = 0 .. input_size - kernel_size.

input, kernel and output are float32 tensors on the GPU.
Fill in the kernel body, then check it with:  judge submit this_file.py
"""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(input, kernel, output, input_size, kernel_size, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    # TODO: this program computes BLOCK_SIZE consecutive outputs. Loop over
    # the kernel's taps, accumulate input[i + j] * kernel[j] in float32 and
    # store the outputs, masking those past input_size - kernel_size.


# input, kernel, output are tensors on the GPU
def solve(input: torch.Tensor, kernel: torch.Tensor, output: torch.Tensor, input_size: int, kernel_size: int):
    BLOCK_SIZE = 1024
    n_out = input_size - kernel_size + 1
    grid = (triton.cdiv(n_out, BLOCK_SIZE),)
    conv1d_kernel[grid](input, kernel, output, input_size, kernel_size, BLOCK_SIZE=BLOCK_SIZE)
