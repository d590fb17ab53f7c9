"""Wrong: the tile is stored at the same row-major offsets it was loaded
from, so the output holds the input's values in the input's layout (a
reshape, not a transpose). Right only for a single row or column."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    offs = r[:, None] * cols + c[None, :]
    tile = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tile, mask=mask)  # bug: should go to c * rows + r


def solve(input: torch.Tensor, output: torch.Tensor, rows: int, cols: int):
    BLOCK = 32
    grid = (triton.cdiv(rows, BLOCK), triton.cdiv(cols, BLOCK))
    transpose_kernel[grid](input, output, rows, cols, BLOCK=BLOCK)
