"""Starter for the matrix_transpose challenge: output = inputᵀ in float32.

input is rows × cols and output is cols × rows, both contiguous and
row-major float32 tensors on the GPU.
Fill in the kernel body, then check it with:  judge submit this_file.py
"""

import torch
import triton
import triton.language as tl


@triton.jit
def matrix_transpose_kernel(input_ptr, output_ptr, rows, cols,
                            stride_ir, stride_ic, stride_or, stride_oc,
                            BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    # TODO: load a BLOCK_R × BLOCK_C tile of the input (masking rows >= rows
    # and columns >= cols), and store it transposed: input[i, j] goes to
    # output[j, i].


def solve(input: torch.Tensor, output: torch.Tensor, rows: int, cols: int):
    stride_ir, stride_ic = cols, 1
    stride_or, stride_oc = rows, 1
    BLOCK_R, BLOCK_C = 32, 32
    grid = (triton.cdiv(rows, BLOCK_R), triton.cdiv(cols, BLOCK_C))
    matrix_transpose_kernel[grid](input, output, rows, cols,
                                  stride_ir, stride_ic, stride_or, stride_oc,
                                  BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C)
