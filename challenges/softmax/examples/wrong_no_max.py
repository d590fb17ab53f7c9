"""Wrong: the textbook formula exp(x) / Σ exp(x) without subtracting the
maximum. Fine for small inputs; as soon as an input exceeds ~88.7, exp
overflows float32 to inf and the outputs become inf/inf = NaN (or 0)."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_naive_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    lane = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + lane
        x = tl.load(x_ptr + offs, mask=offs < N, other=float("-inf"))
        s += tl.exp(x)
    S = tl.sum(s, axis=0)
    for start in range(0, N, BLOCK):
        offs = start + lane
        mask = offs < N
        x = tl.load(x_ptr + offs, mask=mask, other=0.0)
        tl.store(y_ptr + offs, tl.exp(x) / S, mask=mask)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    softmax_naive_kernel[(1,)](input, output, N, BLOCK=1024)
