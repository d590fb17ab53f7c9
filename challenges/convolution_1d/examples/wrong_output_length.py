"""Wrong: the number of outputs is taken as input_size - kernel_size (the
"+ 1" forgotten), so the last output, whose window ends at the last input
element, is never written. With kernel_size == input_size nothing is."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, y_ptr, n_out, kernel_size, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_out
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, kernel_size):
        acc += tl.load(x_ptr + i + j, mask=mask, other=0.0) * tl.load(w_ptr + j)
    tl.store(y_ptr + i, acc, mask=mask)


def solve(input: torch.Tensor, kernel: torch.Tensor, output: torch.Tensor, input_size: int, kernel_size: int):
    n_out = input_size - kernel_size
    BLOCK = 256
    grid = (max(1, triton.cdiv(n_out, BLOCK)),)
    conv1d_kernel[grid](input, kernel, output, n_out, kernel_size, BLOCK=BLOCK)
