"""Wrong: the flat copy without a mask. When N*N is not a multiple of the
block, the last block reads past the end of a and writes past the end of b:
the judge sees b's guard band change and rejects the submission (on a real
GPU this corrupts whatever lies after b, or faults)."""

import torch
import triton
import triton.language as tl


@triton.jit
def copy_unmasked_kernel(a_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(b_ptr + offs, tl.load(a_ptr + offs))


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    BLOCK = 1024
    grid = (triton.cdiv(N * N, BLOCK),)
    copy_unmasked_kernel[grid](a, b, BLOCK=BLOCK)
