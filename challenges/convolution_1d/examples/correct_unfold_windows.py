"""Accepted: input.unfold(0, kernel_size, 1) is a view (the windows as rows,
strides (1, 1), no data moved); the kernel reads the windows through those
strides and does every multiply-add itself."""

import torch
import triton
import triton.language as tl


@triton.jit
def window_dot(kernel_ptr, windows_ptr, output_ptr, n_out, taps, row_stride, tap_stride,
               ROWS: tl.constexpr, TAPS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    total = tl.zeros([ROWS], dtype=tl.float32)
    for start in range(0, taps, TAPS):
        tap = start + tl.arange(0, TAPS)
        weight = tl.load(kernel_ptr + tap, mask=tap < taps, other=0.0)
        window = tl.load(windows_ptr + rows[:, None] * row_stride + tap[None, :] * tap_stride,
                         mask=(rows[:, None] < n_out) & (tap[None, :] < taps), other=0.0)
        total += tl.sum(window * weight[None, :], axis=1)
    tl.store(output_ptr + rows, total, mask=rows < n_out)


def solve(input: torch.Tensor, kernel: torch.Tensor, output: torch.Tensor, input_size: int, kernel_size: int):
    windows = input.unfold(0, kernel_size, 1)
    n_out = windows.shape[0]
    window_dot[(triton.cdiv(n_out, 64),)](kernel, windows, output, n_out, kernel_size,
                                          windows.stride(0), windows.stride(1), ROWS=64, TAPS=32)
