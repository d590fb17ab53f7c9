"""Wrong: one program walks the WHOLE array tile by tile and swaps every i
with N-1-i. Each pair is visited twice (once from each end), so the second
swap undoes the first: only pairs that fall in the same tile end up
reversed. Right for N up to one tile, wrong beyond."""

import torch
import triton
import triton.language as tl


@triton.jit
def swap_all_kernel(x_ptr, N, BLOCK_SIZE: tl.constexpr):
    for start in range(0, N, BLOCK_SIZE):
        i = start + tl.arange(0, BLOCK_SIZE)
        mask = i < N
        a = tl.load(x_ptr + i, mask=mask)
        b = tl.load(x_ptr + (N - 1 - i), mask=mask)
        tl.store(x_ptr + i, b, mask=mask)
        tl.store(x_ptr + (N - 1 - i), a, mask=mask)


def solve(input: torch.Tensor, N: int):
    swap_all_kernel[(1,)](input, N, BLOCK_SIZE=256)
