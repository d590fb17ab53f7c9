"""Correct but simple: each program reads 256 consecutive elements of one
input row and writes them down one output column (strided stores)."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_rows_kernel(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = j < cols
    v = tl.load(x_ptr + i * cols + j, mask=mask)
    tl.store(y_ptr + j * rows + i, v, mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, rows: int, cols: int):
    BLOCK = 256
    transpose_rows_kernel[(rows, triton.cdiv(cols, BLOCK))](input, output, rows, cols, BLOCK=BLOCK)
