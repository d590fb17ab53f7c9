"""Reference tiled matrix products in Triton, for the judge.

Conventions: A is M x N, B is N x K, C = A @ B is M x K; the inner (reduced)
dimension is N. Inputs are 2-D float32 tensors with any strides.

Public API
----------
matmul(a, b, mode="ieee", out=None)
    "ieee"  : fp32 tiles, fp32 accumulation, IEEE fp32 products (no TF32).
    "tf32"  : same with TF32 tensor-core inputs (the speed baseline).
    "exact" : fp32 tiles widened to fp64, fp64 accumulation; returns float64.
              A product of two fp32 values is exact in fp64, so this is the
              judge's truth up to fp64 rounding of the sums (~N * 2**-53
              relative to |A||B|), whatever the summation order.
exact_with_scales(a, b) -> (exact, abs_product, sq_product)
    One pass over A and B giving three float64 M x K results: A.B, |A|.|B|
    and (A*A).(B*B), for the judge's error bounds.

Kernels are decorated at import time: set TRITON_INTERPRET=1 before importing
this module to run them on CPU tensors with the Triton interpreter.

On Hopper, "ieee" and "tf32" take a persistent TMA kernel instead
(reference.matmul_hopper); other GPUs, inputs TMA cannot address and the
interpreter take the generic kernel here.
"""

import torch
import triton
import triton.language as tl

from reference import matmul_hopper as hopper

__all__ = ["matmul", "exact_with_scales", "MODES"]

MODES = ("ieee", "tf32", "exact")

# How fp64 tiles are multiplied. True: tl.dot on float64 tiles (on an H100
# with triton 3.6 this lowers to fp64 tensor-core mma.sync, ~58 TFLOP/s).
# False: broadcast-multiply then tl.sum over the inner axis (~70x slower on
# GPU), a fallback for targets where fp64 tl.dot does not compile. Flip it
# here; both give fp64-rounded sums of exact products.
_F64_USE_DOT = True


@triton.jit
def _tile_ids(M, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped ordering of the 1-D grid: GROUP_M consecutive row-blocks are
    # walked together so the B column panels they share stay in L2.
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_k = tl.cdiv(K, BLOCK_K)
    pids_per_group = GROUP_M * num_pid_k
    first_m = (pid // pids_per_group) * GROUP_M
    group_size = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % pids_per_group) % group_size
    pid_k = (pid % pids_per_group) // group_size
    return pid_m, pid_k


@triton.jit
def _dot64(a, b, acc, USE_DOT: tl.constexpr):
    # acc += a @ b for float64 tiles a (BM x BN) and b (BN x BK).
    if USE_DOT:
        acc = tl.dot(a, b, acc, input_precision="ieee", out_dtype=tl.float64)
    else:
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    return acc


@triton.jit
def _matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_an, stride_bn, stride_bk, stride_cm, stride_ck,
    PRECISION: tl.constexpr,  # "ieee" or "tf32"; ignored when EXACT
    EXACT: tl.constexpr,  # widen tiles to fp64 and accumulate in fp64
    F64_USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr,  # rows of C per program
    BLOCK_K: tl.constexpr,  # columns of C per program
    BLOCK_N: tl.constexpr,  # step along the inner dimension N
    GROUP_M: tl.constexpr,
):
    pid_m, pid_k = _tile_ids(M, K, BLOCK_M, BLOCK_K, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    offs_n = tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_k = offs_k < K
    # 64-bit row/column offsets: strided views of large tensors can pass 2**31.
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + offs_n[None, :] * stride_an
    b_ptrs = b_ptr + offs_n[:, None] * stride_bn + offs_k.to(tl.int64)[None, :] * stride_bk

    if EXACT:
        acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float64)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float32)
    for n0 in range(0, N, BLOCK_N):
        # Out-of-range elements load as 0 and add nothing to the sums.
        mask_n = offs_n < N - n0
        a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_n[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=0.0)
        if EXACT:
            acc = _dot64(a.to(tl.float64), b.to(tl.float64), acc, F64_USE_DOT)
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_N * stride_an
        b_ptrs += BLOCK_N * stride_bn

    c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_k.to(tl.int64)[None, :] * stride_ck
    tl.store(c_ptrs, acc, mask=mask_m[:, None] & mask_k[None, :])


@triton.jit
def _exact_scales_kernel(
    a_ptr, b_ptr, c_ptr, abs_ptr, sq_ptr, M, N, K,
    stride_am, stride_an, stride_bn, stride_bk, stride_cm, stride_ck,
    F64_USE_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Same tiling as _matmul_kernel; each A and B tile is loaded once and
    # feeds three fp64 accumulators. The three outputs share strides.
    pid_m, pid_k = _tile_ids(M, K, BLOCK_M, BLOCK_K, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    offs_n = tl.arange(0, BLOCK_N)
    mask_m = offs_m < M
    mask_k = offs_k < K
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + offs_n[None, :] * stride_an
    b_ptrs = b_ptr + offs_n[:, None] * stride_bn + offs_k.to(tl.int64)[None, :] * stride_bk

    acc = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float64)
    acc_abs = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float64)
    acc_sq = tl.zeros((BLOCK_M, BLOCK_K), dtype=tl.float64)
    for n0 in range(0, N, BLOCK_N):
        mask_n = offs_n < N - n0
        a = tl.load(a_ptrs, mask=mask_m[:, None] & mask_n[None, :], other=0.0).to(tl.float64)
        b = tl.load(b_ptrs, mask=mask_n[:, None] & mask_k[None, :], other=0.0).to(tl.float64)
        acc = _dot64(a, b, acc, F64_USE_DOT)
        acc_abs = _dot64(tl.abs(a), tl.abs(b), acc_abs, F64_USE_DOT)
        # Squares of fp32 values are exact in fp64 (48 significant bits).
        acc_sq = _dot64(a * a, b * b, acc_sq, F64_USE_DOT)
        a_ptrs += BLOCK_N * stride_an
        b_ptrs += BLOCK_N * stride_bn

    offs_c = offs_m.to(tl.int64)[:, None] * stride_cm + offs_k.to(tl.int64)[None, :] * stride_ck
    mask_c = mask_m[:, None] & mask_k[None, :]
    tl.store(c_ptr + offs_c, acc, mask=mask_c)
    tl.store(abs_ptr + offs_c, acc_abs, mask=mask_c)
    tl.store(sq_ptr + offs_c, acc_sq, mask=mask_c)



def _interpreted() -> bool:
    # Under TRITON_INTERPRET=1, triton.jit returned an InterpretedFunction.
    return type(_matmul_kernel).__name__ == "InterpretedFunction"


def _config(kind: str, device: torch.device, M: int, N: int, K: int) -> dict:
    """Tile sizes and launch options for kind in {"ieee", "tf32", "exact", "scales"}."""
    if device.type != "cuda":
        # Interpreter: each program and each tl op costs Python overhead while
        # numpy does the arithmetic, so use few, large tiles (up to 256 x 256,
        # stepping 128 along N), shrunk to the matrix so small shapes stay cheap.
        def fit(n, cap):
            return max(16, min(cap, triton.next_power_of_2(n)))

        bm, bk, bn = fit(M, 256), fit(K, 256), fit(N, 128)
        if kind not in ("ieee", "tf32") and not _F64_USE_DOT:
            # The broadcast form builds a BM x BN x BK fp64 temporary.
            bm, bk, bn = min(bm, 64), min(bk, 64), min(bn, 64)
        return dict(BLOCK_M=bm, BLOCK_K=bk, BLOCK_N=bn, GROUP_M=8, num_warps=4, num_stages=1)
    # CUDA: measured on an H100 (torch 2.11, triton 3.6) at 4096^3.
    if kind == "tf32":  # tensor cores, ~145 TFLOP/s
        return dict(BLOCK_M=256, BLOCK_K=128, BLOCK_N=32, GROUP_M=8, num_warps=8, num_stages=4)
    if kind == "ieee":  # CUDA-core FMAs, no tensor cores: ~43 TFLOP/s
        return dict(BLOCK_M=128, BLOCK_K=128, BLOCK_N=32, GROUP_M=8, num_warps=8, num_stages=3)
    if not _F64_USE_DOT:  # the 3-D temporary lives in registers: ~0.8 TFLOP/s
        return dict(BLOCK_M=32, BLOCK_K=64, BLOCK_N=8, GROUP_M=8, num_warps=4, num_stages=2)
    if kind == "exact":  # fp64 tensor cores (DMMA): ~58 TFLOP/s
        return dict(BLOCK_M=64, BLOCK_K=64, BLOCK_N=16, GROUP_M=8, num_warps=4, num_stages=4)
    # "scales": three fp64 accumulators; larger tiles spill registers.
    # ~8.3 ms at 4096^3, i.e. ~50 TFLOP/s over the three products.
    return dict(BLOCK_M=64, BLOCK_K=32, BLOCK_N=16, GROUP_M=8, num_warps=4, num_stages=3)


def _check_inputs(a, b):
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        if t.dtype != torch.float32:
            raise ValueError(f"{name} must be float32, got {t.dtype}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"inner dimensions differ: a is {tuple(a.shape)} (M x N), b is {tuple(b.shape)} (N x K)")
    if a.device != b.device:
        raise ValueError(f"a and b are on different devices: {a.device} and {b.device}")
    if a.device.type != "cuda" and not _interpreted():
        raise ValueError(
            f"tensors on {a.device} need the Triton interpreter: set TRITON_INTERPRET=1 "
            "before importing reference.matmul, or pass CUDA tensors")


def _check_out(out, shape, dtype, device, mode):
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if tuple(out.shape) != shape or out.dtype != dtype or out.device != device:
        raise ValueError(
            f"out for mode {mode!r} must be {dtype} of shape {shape} on {device}, "
            f"got {out.dtype} of shape {tuple(out.shape)} on {out.device}")


def _grid(M, K, cfg):
    return (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(K, cfg["BLOCK_K"]),)


def _launch_args(cfg):
    return {k: cfg[k] for k in ("BLOCK_M", "BLOCK_K", "BLOCK_N", "GROUP_M", "num_warps", "num_stages")}



def matmul(a: torch.Tensor, b: torch.Tensor, mode: str = "ieee", out: torch.Tensor = None) -> torch.Tensor:
    """C = A @ B with A (M x N) and B (N x K) float32.

    Returns float32 for "ieee" and "tf32", float64 for "exact"; writes into
    `out` (any strides, right shape, dtype and device) when given.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    _check_inputs(a, b)
    M, N = a.shape
    K = b.shape[1]
    dtype = torch.float64 if mode == "exact" else torch.float32
    if out is None:
        out = torch.empty((M, K), dtype=dtype, device=a.device)
    else:
        _check_out(out, (M, K), dtype, a.device, mode)
    if M == 0 or K == 0:
        return out
    if N == 0:  # empty sum
        return out.zero_()
    if hopper.fast_path(a, b, mode):
        return hopper.fast_matmul(a, b, out, mode)
    cfg = _config(mode, a.device, M, N, K)
    _matmul_kernel[_grid(M, K, cfg)](
        a, b, out, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
        PRECISION="tf32" if mode == "tf32" else "ieee",
        EXACT=mode == "exact",
        F64_USE_DOT=_F64_USE_DOT,
        **_launch_args(cfg),
    )
    return out


def exact_with_scales(a: torch.Tensor, b: torch.Tensor):
    """(A.B, |A|.|B|, (A*A).(B*B)) as three float64 M x K tensors, in one pass."""
    _check_inputs(a, b)
    M, N = a.shape
    K = b.shape[1]
    outs = [torch.empty((M, K), dtype=torch.float64, device=a.device) for _ in range(3)]
    if M == 0 or K == 0 or N == 0:
        return tuple(o.zero_() for o in outs)
    exact, abs_product, sq_product = outs
    cfg = _config("scales", a.device, M, N, K)
    _exact_scales_kernel[_grid(M, K, cfg)](
        a, b, exact, abs_product, sq_product, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), exact.stride(0), exact.stride(1),
        F64_USE_DOT=_F64_USE_DOT,
        **_launch_args(cfg),
    )
    return exact, abs_product, sq_product
