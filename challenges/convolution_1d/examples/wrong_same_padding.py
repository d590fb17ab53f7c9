"""Wrong: the window is centred on each output as in a "same" convolution,
input[i + j - K//2] with zeros outside the input, instead of starting at
input[i]. The output length is right, but every output is shifted by K//2
and the first ones see padding. Right only for kernel_size 1."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_centred_kernel(x_ptr, w_ptr, y_ptr, input_size, n_out, kernel_size, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_out
    half = kernel_size // 2
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, kernel_size):
        src = i + j - half
        x = tl.load(x_ptr + src, mask=mask & (src >= 0) & (src < input_size), other=0.0)
        acc += x * tl.load(w_ptr + j)
    tl.store(y_ptr + i, acc, mask=mask)


def solve(input: torch.Tensor, kernel: torch.Tensor, output: torch.Tensor, input_size: int, kernel_size: int):
    n_out = input_size - kernel_size + 1
    BLOCK = 256
    conv1d_centred_kernel[(triton.cdiv(n_out, BLOCK),)](input, kernel, output, input_size, n_out, kernel_size,
                                                        BLOCK=BLOCK)
