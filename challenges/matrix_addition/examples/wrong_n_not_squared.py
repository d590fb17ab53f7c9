"""Wrong: treats N as the number of elements (as in vector addition), so
only the first N of the N·N elements are added; the rest of c is never
written."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(a_ptr + offs, mask=mask)
    y = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, x + y, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    BLOCK = 1024
    add_kernel[(triton.cdiv(N, BLOCK),)](a, b, c, N, BLOCK=BLOCK)  # bug: N, not N * N
