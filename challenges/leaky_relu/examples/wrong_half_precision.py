"""Wrong: computes in float16 to "save bandwidth inside the kernel". Values
up to 1000 fit in float16, but its ~5e-4 relative rounding is far outside
the 1e-6 tolerance."""

import torch
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float16)  # bug: precision lost here
    y = tl.where(x > 0, x, x * 0.01)
    tl.store(y_ptr + offs, y.to(tl.float32), mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    leaky_relu_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK)
