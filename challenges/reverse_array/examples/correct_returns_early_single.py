"""Reverse in place, returning before any launch when there is nothing to
reverse (N = 1): the case needs no work, so no kernel is needed for it.
Otherwise one program per 1024 pairs (i, N-1-i) of the first half."""

import torch
import triton
import triton.language as tl


@triton.jit
def swap_ends_kernel(x_ptr, N, BLOCK: tl.constexpr):
    front = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = front < N // 2
    back = N - 1 - front
    first = tl.load(x_ptr + front, mask=inside)
    last = tl.load(x_ptr + back, mask=inside)
    tl.store(x_ptr + front, last, mask=inside)
    tl.store(x_ptr + back, first, mask=inside)


def solve(input: torch.Tensor, N: int):
    if N < 2:
        return
    swap_ends_kernel[(triton.cdiv(N // 2, 1024),)](input, N, BLOCK=1024)
