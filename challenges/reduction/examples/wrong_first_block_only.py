"""Wrong: a single program sums one block of 1024 elements and stops; every
element past the first block is ignored. Right for N ≤ 1024 only."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_one_block_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    sum_one_block_kernel[(1,)](input, output, N, BLOCK=1024)
