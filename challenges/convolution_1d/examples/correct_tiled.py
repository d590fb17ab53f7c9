"""Tiled convolution: each program computes BLOCK outputs and takes the taps
TAPS at a time, loading a BLOCK × TAPS window tile input[i + j] (rows
overlap, so the loads hit cache) and a TAPS-long slice of the kernel, and
reducing the products along the taps with tl.sum. Fewer, wider steps than
one tap at a time, and each step's sum is a tree."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_tiled_kernel(x_ptr, w_ptr, y_ptr, n_out, kernel_size, BLOCK: tl.constexpr, TAPS: tl.constexpr):
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    out_mask = i < n_out
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j0 in range(0, kernel_size, TAPS):
        j = j0 + tl.arange(0, TAPS)
        tap_mask = j < kernel_size
        w = tl.load(w_ptr + j, mask=tap_mask, other=0.0)
        window = tl.load(x_ptr + i[:, None] + j[None, :], mask=out_mask[:, None] & tap_mask[None, :], other=0.0)
        acc += tl.sum(window * w[None, :], axis=1)
    tl.store(y_ptr + i, acc, mask=out_mask)


def solve(input: torch.Tensor, kernel: torch.Tensor, output: torch.Tensor, input_size: int, kernel_size: int):
    n_out = input_size - kernel_size + 1
    BLOCK = 128
    TAPS = 16 if kernel_size <= 16 else 64
    conv1d_tiled_kernel[(triton.cdiv(n_out, BLOCK),)](input, kernel, output, n_out, kernel_size,
                                                     BLOCK=BLOCK, TAPS=TAPS, num_warps=4)
