"""Wrong: a textbook convolution that reverses the kernel,
output[i] = Σ_j input[i + j]·kernel[K - 1 - j]. The challenge (like deep
learning libraries) applies the kernel as given. Symmetric kernels such as
[0.25, 0.5, 0.25] pass; [1, 0, -1] already changes sign."""

import torch
import triton
import triton.language as tl


@triton.jit
def conv1d_flipped_kernel(x_ptr, w_ptr, y_ptr, n_out, kernel_size, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n_out
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for j in range(0, kernel_size):
        w = tl.load(w_ptr + (kernel_size - 1 - j))
        acc += tl.load(x_ptr + i + j, mask=mask, other=0.0) * w
    tl.store(y_ptr + i, acc, mask=mask)


def solve(input: torch.Tensor, kernel: torch.Tensor, output: torch.Tensor, input_size: int, kernel_size: int):
    n_out = input_size - kernel_size + 1
    BLOCK = 256
    conv1d_flipped_kernel[(triton.cdiv(n_out, BLOCK),)](input, kernel, output, n_out, kernel_size, BLOCK=BLOCK)
