"""Wrong: a 2-D tiled copy that mixes up the strides of the destination and
writes b[j][i] = a[i][j]. Identity, zero and other symmetric matrices pass;
anything else does not."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_tile_kernel(a_ptr, b_ptr, N, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < N) & (cols[None, :] < N)
    tile = tl.load(a_ptr + rows[:, None] * N + cols[None, :], mask=mask)
    tl.store(b_ptr + rows[:, None] + cols[None, :] * N, tile, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    BLOCK = 32
    grid = (triton.cdiv(N, BLOCK), triton.cdiv(N, BLOCK))
    copy_tile_kernel[grid](a, b, N, BLOCK=BLOCK)
