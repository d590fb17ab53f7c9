"""Copy as a flat array of N*N elements: a contiguous row-major matrix is one
long vector, so each program copies 4096 consecutive elements (16 KiB),
masked at the end. Memory-bound: one read and one write per element."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_flat_kernel(a_ptr, b_ptr, total, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    tl.store(b_ptr + offs, tl.load(a_ptr + offs, mask=mask), mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    total = N * N
    BLOCK = 4096
    grid = (triton.cdiv(total, BLOCK),)
    copy_flat_kernel[grid](a, b, total, BLOCK=BLOCK, num_warps=8)
