"""Sum with one atomic per program: each program accumulates CHUNKS tiles of
BLOCK elements lane by lane in float32 (a vector of partial sums), reduces
the vector with tl.sum (a tree), and adds it to output[0] atomically. With
8 × 2048 elements per program the perf case needs 256 programs and 256
atomics; output is zeroed first because it starts as garbage."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_chunks_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr, CHUNKS: tl.constexpr):
    pid = tl.program_id(0)
    base = pid.to(tl.int64) * (BLOCK * CHUNKS)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c in tl.static_range(CHUNKS):
        offs = base + c * BLOCK + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK, CHUNKS = 2048, 8
    output.zero_()
    grid = (triton.cdiv(N, BLOCK * CHUNKS),)
    sum_chunks_kernel[grid](input, output, N, BLOCK=BLOCK, CHUNKS=CHUNKS, num_warps=8)
