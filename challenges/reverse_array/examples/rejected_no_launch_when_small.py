"""Launches nothing for arrays shorter than 64 elements and leaves them as
they are: right only for N = 1, where nothing needs to move. Any other short
case needed work and got no kernel. Expected: rejected (no Triton kernel
launched), not wrong_answer."""

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
    if N < 64:
        return
    swap_ends_kernel[(triton.cdiv(N // 2, 1024),)](input, N, BLOCK=1024)
