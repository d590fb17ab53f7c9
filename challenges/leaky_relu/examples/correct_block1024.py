"""Correct: one program per 1024 elements, tl.where(x > 0, x, 0.01 * x), masked."""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.01 * x), mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    leaky_relu_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK, num_warps=4)
