"""Kernels a fresh worker compiles to warm Triton up (judge.worker.warmup).
In a module of their own: @triton.jit reads its source from a file."""

import triton
import triton.language as tl


@triton.jit
def product(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inner = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        a = tl.load(a_ptr + rows[:, None] * N + (start + inner)[None, :],
                    mask=(rows[:, None] < M) & ((start + inner)[None, :] < N), other=0.0)
        b = tl.load(b_ptr + (start + inner)[:, None] * K + cols[None, :],
                    mask=((start + inner)[:, None] < N) & (cols[None, :] < K), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rows[:, None] * K + cols[None, :], acc, mask=(rows[:, None] < M) & (cols[None, :] < K))


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2.0, mask=mask)
