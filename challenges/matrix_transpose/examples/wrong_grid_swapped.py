"""Wrong: the kernel treats axis 0 as row tiles, but the grid is sized
(column tiles, row tiles). Tiles are masked, so nothing is written out of
bounds; but when the two counts differ, some tiles are never launched and
their part of the output is never written."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    tile = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask)
    tl.store(y_ptr + c[None, :] * rows + r[:, None], tile, mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, rows: int, cols: int):
    BLOCK = 16
    grid = (triton.cdiv(cols, BLOCK), triton.cdiv(rows, BLOCK))  # bug: axes swapped
    transpose_kernel[grid](input, output, rows, cols, BLOCK=BLOCK)
