"""Wrong: the grid is sized for blocks of 1024 but the kernel is launched
with BLOCK=512, so each program covers only the first half of its share and
the second half is never written (from N > 512 on)."""

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
    grid = (triton.cdiv(N, 1024),)
    relu_kernel[grid](input, output, N, BLOCK=512)  # bug: grid and block disagree
