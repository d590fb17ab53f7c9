"""Copy with 2-D tiles: a grid of (row tiles, column tiles), each program
copies a 32×64 tile addressed through the matrices' strides, masked on both
the rows and the columns past N."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_tile_kernel(a_ptr, b_ptr, N, stride_a, stride_b, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < N) & (cols[None, :] < N)
    tile = tl.load(a_ptr + rows[:, None] * stride_a + cols[None, :], mask=mask)
    tl.store(b_ptr + rows[:, None] * stride_b + cols[None, :], tile, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    BLOCK_M, BLOCK_N = 32, 64
    grid = (triton.cdiv(N, BLOCK_M), triton.cdiv(N, BLOCK_N))
    copy_tile_kernel[grid](a, b, N, a.stride(0), b.stride(0), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
