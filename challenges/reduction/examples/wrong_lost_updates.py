"""Wrong: every program reduces its block correctly, then STORES its partial
sum into output[0] instead of adding it atomically. The programs overwrite
each other: what remains is one block's sum (whichever wrote last)."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_store_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    sum_store_kernel[(triton.cdiv(N, BLOCK),)](input, output, N, BLOCK=BLOCK)
