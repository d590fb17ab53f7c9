"""Correct: each program handles 4 consecutive blocks of 2048 elements
(fewer, fatter programs for the 25M-element performance case)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr, PER_PROGRAM: tl.constexpr):
    start = tl.program_id(0) * (BLOCK * PER_PROGRAM)
    for i in tl.static_range(PER_PROGRAM):
        offs = start + i * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(a_ptr + offs, mask=mask)
        y = tl.load(b_ptr + offs, mask=mask)
        tl.store(c_ptr + offs, x + y, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    BLOCK, PER_PROGRAM = 2048, 4
    grid = (triton.cdiv(N, BLOCK * PER_PROGRAM),)
    add_kernel[grid](a, b, c, N, BLOCK=BLOCK, PER_PROGRAM=PER_PROGRAM, num_warps=8)
