"""Fault: the entry point is misnamed (solution instead of solve).

The code would work, but the judge looks for a function called solve.
Expected verdict: invalid_submission.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    inner = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        n = start + inner
        a_tile = tl.load(a_ptr + rows[:, None] * N + n[None, :],
                         mask=(rows[:, None] < M) & (n[None, :] < N), other=0.0)
        b_tile = tl.load(b_ptr + n[:, None] * K + cols[None, :],
                         mask=(n[:, None] < N) & (cols[None, :] < K), other=0.0)
        acc += tl.dot(a_tile, b_tile, input_precision="ieee")
    tl.store(c_ptr + rows[:, None] * K + cols[None, :], acc,
             mask=(rows[:, None] < M) & (cols[None, :] < K))


def solution(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    grid = (triton.cdiv(M, 32), triton.cdiv(K, 32))
    matmul_kernel[grid](a, b, c, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
