"""Correct: since 0 < α < 1, leaky ReLU is max(x, α·x); 2048 elements per
program, masked."""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, alpha * x), mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 2048
    leaky_relu_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, 0.01, BLOCK=BLOCK, num_warps=8)
