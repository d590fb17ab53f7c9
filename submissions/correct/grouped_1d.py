"""Matrix multiplication with a 1D grid and grouped (swizzled) tile order.

Programs are numbered so that GROUP_SIZE_M consecutive row-tiles are visited
for each column-tile before moving on, which keeps tiles of B hot in L2.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_grouped_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_an,
    stride_bn, stride_bk,
    stride_cm, stride_ck,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_k = tl.cdiv(K, BLOCK_K)

    # A "band" is GROUP_SIZE_M row-tiles tall and spans every column-tile.
    # Within a band, programs go down a column before moving right.
    band_size = GROUP_SIZE_M * tiles_k
    band = pid // band_size
    first_m = band * GROUP_SIZE_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_SIZE_M)
    local = pid % band_size
    pid_m = first_m + local % band_rows
    pid_k = local // band_rows

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    inner = tl.arange(0, BLOCK_N)
    row_ok = rows < M
    col_ok = cols < K

    a_ptrs = a_ptr + rows[:, None] * stride_am + inner[None, :] * stride_an
    b_ptrs = b_ptr + inner[:, None] * stride_bn + cols[None, :] * stride_bk

    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        n_ok = (start + inner) < N
        a_tile = tl.load(a_ptrs, mask=row_ok[:, None] & n_ok[None, :], other=0.0)
        b_tile = tl.load(b_ptrs, mask=n_ok[:, None] & col_ok[None, :], other=0.0)
        acc += tl.dot(a_tile, b_tile, input_precision="ieee")
        a_ptrs += BLOCK_N * stride_an
        b_ptrs += BLOCK_N * stride_bn

    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_ck
    tl.store(c_ptrs, acc, mask=row_ok[:, None] & col_ok[None, :])


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 32, 64
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(K, BLOCK_K),)
    matmul_grouped_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        GROUP_SIZE_M=8,
        num_warps=4, num_stages=3,
    )
