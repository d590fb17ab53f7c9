"""Correct: the contiguous N×N matrices as flat vectors of N·N floats, one
program per 1024 elements, the last block masked."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(a_ptr + offs, mask=mask)
    y = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, x + y, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    BLOCK = 1024
    n_elements = N * N
    add_kernel[(triton.cdiv(n_elements, BLOCK),)](a, b, c, n_elements, BLOCK=BLOCK, num_warps=4)
