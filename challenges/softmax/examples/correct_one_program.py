"""Softmax with a single program: an online pass keeps a running maximum m
and a running sum s of exp(x - m) lane by lane (rescaling s whenever m
grows), the lanes are combined, then a second pass writes exp(x - M) / S.
Simple and exact enough, but one program uses one SM: slow on a big GPU."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_one_program_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    lane = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + lane
        x = tl.load(x_ptr + offs, mask=offs < N, other=float("-inf"))
        m_new = tl.maximum(m, x)
        # lanes that have seen nothing yet keep m = -inf: avoid (-inf) - (-inf)
        safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + tl.exp(x - safe)
        m = m_new
    M = tl.max(m, axis=0)
    S = tl.sum(s * tl.exp(m - M), axis=0)
    for start in range(0, N, BLOCK):
        offs = start + lane
        mask = offs < N
        x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"))
        tl.store(y_ptr + offs, tl.exp(x - M) / S, mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    softmax_one_program_kernel[(1,)](input, output, N, BLOCK=1024)
