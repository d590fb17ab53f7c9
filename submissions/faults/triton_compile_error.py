"""Fault: the Triton kernel does not compile.

tl.arange(0, 48) has a length that is not a power of two, which Triton rejects
at compile time (and the interpreter rejects at launch).
Expected verdict: compile_error.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def fill_zero_kernel(c_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, 48)  # BUG: 48 is not a power of 2
    tl.store(c_ptr + offs, 0.0, mask=offs < numel)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    numel = M * K
    fill_zero_kernel[(triton.cdiv(numel, 48),)](c, numel, BLOCK=48)
