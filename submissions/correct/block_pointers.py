"""Matrix multiplication with tensor block pointers.

Tiles are addressed with tl.make_block_ptr and stepped along the inner
dimension with tl.advance; boundary_check with zero padding replaces masks.
"""
import torch
import triton
import triton.language as tl


@triton.jit
def matmul_block_ptr_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_an,
    stride_bn, stride_bk,
    stride_cm, stride_ck,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)

    a_block = tl.make_block_ptr(
        base=a_ptr, shape=(M, N), strides=(stride_am, stride_an),
        offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )
    b_block = tl.make_block_ptr(
        base=b_ptr, shape=(N, K), strides=(stride_bn, stride_bk),
        offsets=(0, pid_k * BLOCK_K), block_shape=(BLOCK_N, BLOCK_K), order=(1, 0),
    )

    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for _ in range(0, tl.cdiv(N, BLOCK_N)):
        a_tile = tl.load(a_block, boundary_check=(0, 1), padding_option="zero")
        b_tile = tl.load(b_block, boundary_check=(0, 1), padding_option="zero")
        acc += tl.dot(a_tile, b_tile, input_precision="ieee")
        a_block = tl.advance(a_block, (0, BLOCK_N))
        b_block = tl.advance(b_block, (BLOCK_N, 0))

    c_block = tl.make_block_ptr(
        base=c_ptr, shape=(M, K), strides=(stride_cm, stride_ck),
        offsets=(pid_m * BLOCK_M, pid_k * BLOCK_K), block_shape=(BLOCK_M, BLOCK_K), order=(1, 0),
    )
    tl.store(c_block, acc, boundary_check=(0, 1))


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    BLOCK_M, BLOCK_N, BLOCK_K = 64, 32, 64
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(K, BLOCK_K))
    matmul_block_ptr_kernel[grid](
        a, b, c,
        M, N, K,
        a.stride(0), a.stride(1),
        b.stride(0), b.stride(1),
        c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
        num_warps=4, num_stages=3,
    )
