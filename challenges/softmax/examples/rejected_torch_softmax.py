"""Rejected: torch.softmax does the work; the Triton kernel only copies its
result into output. The challenge forbids torch compute inside solve."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    result = torch.softmax(input, dim=0)
    copy_kernel[(triton.cdiv(N, 1024),)](result, output, N, BLOCK=1024)
