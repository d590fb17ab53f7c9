"""Wrong: the atomics are right but output is never cleared, so the partial
sums are added to whatever output held before the call (NaN in this judge,
garbage or a previous result on a real GPU)."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_atomic_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    sum_atomic_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK)
