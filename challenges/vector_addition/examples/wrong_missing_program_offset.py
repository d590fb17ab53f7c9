"""Wrong: the offsets forget `program_id * BLOCK`, so every program works on
the first block and everything past element 255 is never written."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # bug: no tl.program_id(0) * BLOCK
    mask = offs < n
    x = tl.load(a_ptr + offs, mask=mask)
    y = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, x + y, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    BLOCK = 256
    add_kernel[(triton.cdiv(N, BLOCK),)](a, b, c, N, BLOCK=BLOCK)
