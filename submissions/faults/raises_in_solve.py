"""Fault: solve raises a Python exception before launching anything.

The kernel is valid, but solve refuses every input with a ValueError.
Expected verdict: runtime_error.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    raise ValueError(f"refusing to multiply {M}x{N} by {N}x{K}")
