"""Correct: 4096 elements per program, tl.where(x > 0, x, 0)."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x, 0.0)
    tl.store(y_ptr + offs, y, mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 4096
    relu_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK, num_warps=8)
