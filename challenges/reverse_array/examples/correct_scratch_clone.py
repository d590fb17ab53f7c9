"""Reversal through a scratch copy: input.clone(), then one
kernel writes input[i] = tmp[N-1-i] for all i (no races: reads come from
the clone)."""
import torch
import triton
import triton.language as tl


@triton.jit
def gather_rev(src, dst, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < N
    tl.store(dst + i, tl.load(src + (N - 1 - i), mask=m), mask=m)


def solve(input, N):
    tmp = input.clone()
    gather_rev[(triton.cdiv(N, 2048),)](tmp, input, N, BLOCK=2048, num_warps=8)
