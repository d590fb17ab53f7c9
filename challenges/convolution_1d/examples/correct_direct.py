"""Direct convolution: each program computes BLOCK consecutive outputs and
walks the taps one at a time, adding input[i + j]·kernel[j] to a float32
accumulator per output. Neighbouring lanes load neighbouring inputs, so
every tap's load is coalesced and mostly served from cache."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_direct_kernel(x_ptr, w_ptr, y_ptr, n_out, kernel_size, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_out
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, kernel_size):
        w = tl.load(w_ptr + j)
        acc += tl.load(x_ptr + i + j, mask=mask, other=0.0) * w
    tl.store(y_ptr + i, acc, mask=mask)


def solve(input: torch.Tensor, kernel: torch.Tensor, output: torch.Tensor, input_size: int, kernel_size: int):
    n_out = input_size - kernel_size + 1
    BLOCK = 512
    conv1d_direct_kernel[(triton.cdiv(n_out, BLOCK),)](input, kernel, output, n_out, kernel_size,
                                                      BLOCK=BLOCK, num_warps=4)
