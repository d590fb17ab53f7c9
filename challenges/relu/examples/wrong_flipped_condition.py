"""Wrong: the condition is flipped, so negatives pass through and positives
become zero."""

import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.where(x < 0, x, 0.0)  # bug: should keep x where x > 0
    tl.store(y_ptr + offs, y, mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    relu_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK)
