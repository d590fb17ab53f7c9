"""Autotuned matrix multiplication.

@triton.autotune picks a tile configuration per (M, N, K); every config is
fully masked, so small tiles serve tiny shapes and large tiles big ones.
"""
import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 32, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 32, "BLOCK_K": 128}, num_warps=8, num_stages=3),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_autotuned_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_an,
    stride_bn, stride_bk,
    stride_cm, stride_ck,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    inner = tl.arange(0, BLOCK_N)

    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        n = start + inner
        a_tile = tl.load(
            a_ptr + rows[:, None] * stride_am + n[None, :] * stride_an,
            mask=(rows[:, None] < M) & (n[None, :] < N),
            other=0.0,
        )
        b_tile = tl.load(
            b_ptr + n[:, None] * stride_bn + cols[None, :] * stride_bk,
            mask=(n[:, None] < N) & (cols[None, :] < K),
            other=0.0,
        )
        acc += tl.dot(a_tile, b_tile, input_precision="ieee")

    tl.store(
        c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_ck,
        acc,
        mask=(rows[:, None] < M) & (cols[None, :] < K),
    )


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    # The grid depends on the chosen config, so it is computed from META.
    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(K, meta["BLOCK_K"]))

    matmul_autotuned_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
    )
