"""Wrong: each program computes the maximum and the sum of ITS OWN block and
normalises with them, so every block sums to 1 on its own. Right when N fits
in one block (all of LeetGPU's small cases), wrong beyond."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_block_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + offs, e / tl.sum(e, axis=0), mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    softmax_block_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK)
