"""Wrong: 2-D tiles, but B is loaded with its row and column indices
swapped, so c = A + Bᵀ. Right only when B is symmetric."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_tile_kernel(a_ptr, b_ptr, c_ptr, N, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < N) & (cols[None, :] < N)
    x = tl.load(a_ptr + rows[:, None] * N + cols[None, :], mask=mask)
    y = tl.load(b_ptr + cols[None, :] * N + rows[:, None], mask=mask)  # bug: indices swapped
    tl.store(c_ptr + rows[:, None] * N + cols[None, :], x + y, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    BLOCK = 32
    grid = (triton.cdiv(N, BLOCK), triton.cdiv(N, BLOCK))
    add_tile_kernel[grid](a, b, c, N, BLOCK=BLOCK)
