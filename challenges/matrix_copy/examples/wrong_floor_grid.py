"""Wrong: the grid is sized with floor division, N*N // BLOCK, so the last
partial block (and, below one block, the whole matrix) is never copied."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(a_ptr, b_ptr, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    tl.store(b_ptr + offs, tl.load(a_ptr + offs, mask=mask), mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    BLOCK = 256
    grid = (max(1, (N * N) // BLOCK),)
    copy_kernel[grid](a, b, N * N, BLOCK=BLOCK)
