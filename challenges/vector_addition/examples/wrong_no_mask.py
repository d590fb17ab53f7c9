"""Wrong: no mask at all. The last block reads and writes past the end of
the vectors (up to 1023 elements): the store lands in the judge's guard band
around c."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(a_ptr + offs)
    y = tl.load(b_ptr + offs)
    tl.store(c_ptr + offs, x + y)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    BLOCK = 1024
    add_kernel[(triton.cdiv(N, BLOCK),)](a, b, c, N, BLOCK=BLOCK)
