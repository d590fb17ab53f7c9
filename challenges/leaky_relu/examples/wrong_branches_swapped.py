"""Wrong: the two branches of tl.where are swapped: positives are scaled by
0.01 and negatives pass through."""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, 0.01 * x, x), mask=mask)  # bug: branches swapped


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    leaky_relu_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK)
