"""Correct: one program per 1024 elements, max(x, 0) with the last block masked."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    relu_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK, num_warps=4)
