"""Float32 and reduced-precision matrix products emulated in torch on the
CPU, each with a known summation order or input rounding: the test bench of
the tolerance policies (no Triton needed, fast at any size we use)."""

from __future__ import annotations

import torch


def tf32_truncate(x: torch.Tensor) -> torch.Tensor:
    return (x.contiguous().view(torch.int32) & -8192).view(torch.float32)


def tf32_nearest(x: torch.Tensor) -> torch.Tensor:
    bits = x.contiguous().view(torch.int32)
    bits = bits + 0xFFF + ((bits >> 13) & 1)
    return (bits & -8192).view(torch.float32)


def bf16_truncate(x: torch.Tensor) -> torch.Tensor:
    return (x.contiguous().view(torch.int32) & -65536).view(torch.float32)


def bf16_nearest(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).to(torch.float32)


def sequential_fma(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """acc = fma(a[:, t], b[t, :], acc) for t = 0..n-1, rounded to float32
    after each step: the order of a naive kernel, the worst common one."""
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    a64, b64 = a.double(), b.double()
    for t in range(a.shape[1]):
        acc = (acc.double() + a64[:, t:t + 1] * b64[t:t + 1, :]).float()
    return acc


def split_k(a: torch.Tensor, b: torch.Tensor, parts: int = 4) -> torch.Tensor:
    """Sequential partial sums over `parts` slices of the inner dimension,
    then added in float32 (as atomics would)."""
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    for idx in torch.tensor_split(torch.arange(a.shape[1]), parts):
        if idx.numel():
            out = out + sequential_fma(a[:, idx], b[idx, :])
    return out


def tiled(a: torch.Tensor, b: torch.Tensor, depth: int = 32) -> torch.Tensor:
    """Blocks of `depth` products summed by the float32 library, then
    accumulated in float32: the order of a tl.dot kernel."""
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    for n0 in range(0, a.shape[1], depth):
        out = out + a[:, n0:n0 + depth] @ b[n0:n0 + depth, :]
    return out


FP32_KERNELS = {"sequential": sequential_fma, "split_k": split_k, "tiled": tiled,
                "library": lambda a, b: a @ b}

REDUCED_KERNELS = {
    "tf32_truncate": lambda a, b: tiled(tf32_truncate(a), tf32_truncate(b)),
    "tf32_nearest": lambda a, b: tiled(tf32_nearest(a), tf32_nearest(b)),
    "bf16_truncate": lambda a, b: tiled(bf16_truncate(a), bf16_truncate(b)),
    "bf16_nearest": lambda a, b: tiled(bf16_nearest(a), bf16_nearest(b)),
}


def tf32x3(a: torch.Tensor, b: torch.Tensor, rounding=tf32_nearest, depth: int = 32) -> torch.Tensor:
    """3xTF32 (tl.dot(..., input_precision="tf32x3")): each float32 split
    into a TF32 head and a TF32 tail, the tail·tail product dropped, the
    three partial products of a tile added to the float32 accumulator tails
    first."""
    a_big, b_big = rounding(a), rounding(b)
    a_small, b_small = rounding(a - a_big), rounding(b - b_big)
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    for n0 in range(0, a.shape[1], depth):
        s = slice(n0, n0 + depth)
        out = out + a_small[:, s] @ b_big[s, :]
        out = out + a_big[:, s] @ b_small[s, :]
        out = out + a_big[:, s] @ b_big[s, :]
    return out
