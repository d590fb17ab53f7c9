"""Deterministic sum in two launches: the first writes one partial sum per
block into a scratch buffer, the second (one program) adds the partials up
tile by tile and stores the total. No atomics, so the result is the same on
every run."""

import torch
import triton
import triton.language as tl


@triton.jit
def partial_sums_kernel(x_ptr, partial_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def total_kernel(partial_ptr, out_ptr, P, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, P, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offs, mask=offs < P, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 4096
    P = triton.cdiv(N, BLOCK)
    partials = torch.empty(P, device=input.device, dtype=torch.float32)
    partial_sums_kernel[(P,)](input, partials, N, BLOCK=BLOCK, num_warps=8)
    total_kernel[(1,)](partials, output, P, BLOCK=1024)
