"""Softmax in two launches spread over the whole GPU. The first gives each
block of 4096 elements its own maximum and its sum of exp(x - block max).
The second: every program reads all the block results (at most 123 of them
at N = 500,000), combines them into the global maximum M and sum
S = Σ_b s_b·exp(m_b - M), and writes exp(x - M) / S for its own block."""

import torch
import triton
import triton.language as tl


@triton.jit
def block_stats_kernel(x_ptr, m_ptr, s_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=float("-inf"))
    m = tl.max(x, axis=0)
    tl.store(m_ptr + pid, m)
    tl.store(s_ptr + pid, tl.sum(tl.exp(x - m), axis=0))


@triton.jit
def normalise_kernel(x_ptr, y_ptr, m_ptr, s_ptr, N, P, BLOCK: tl.constexpr, P_BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    b = tl.arange(0, P_BLOCK)
    mb = tl.load(m_ptr + b, mask=b < P, other=float("-inf"))
    sb = tl.load(s_ptr + b, mask=b < P, other=0.0)
    M = tl.max(mb, axis=0)
    S = tl.sum(sb * tl.exp(mb - M), axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"))
    tl.store(y_ptr + offs, tl.exp(x - M) / S, mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 4096
    P = triton.cdiv(N, BLOCK)
    m = torch.empty(P, device=input.device, dtype=torch.float32)
    s = torch.empty(P, device=input.device, dtype=torch.float32)
    block_stats_kernel[(P,)](input, m, s, N, BLOCK=BLOCK, num_warps=8)
    normalise_kernel[(P,)](input, output, m, s, N, P, BLOCK=BLOCK,
                           P_BLOCK=max(16, triton.next_power_of_2(P)), num_warps=8)
