"""The truth of matrix multiplication, with its error scales, and the
baselines it is timed against. Runs in the judge (trusted): the exact
product comes from the reference Triton kernel in reference/matmul.py,
which widens float32 tiles to float64 so every product is exact."""

from __future__ import annotations

import torch

from judge.compare import Expected


def _exact(a: torch.Tensor, b: torch.Tensor):
    """The reference kernels are compiled or interpreted as decided when they
    were imported; CPU tensors on a machine whose kernels are compiled (a GPU
    machine grading with --device cpu) borrow the GPU."""
    from reference import matmul as ref

    if a.device.type == "cpu" and not ref._interpreted():
        return tuple(t.cpu() for t in ref.exact_with_scales(a.cuda(), b.cuda()))
    return ref.exact_with_scales(a, b)


def _exact_only(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    from reference import matmul as ref

    if a.device.type == "cpu" and not ref._interpreted():
        return ref.matmul(a.cuda(), b.cuda(), mode="exact").cpu()
    return ref.matmul(a, b, mode="exact")


def matmul(inputs: dict[str, torch.Tensor], need_fp32: bool = False, need_scales: bool = True) -> dict[str, Expected]:
    a, b = inputs["a"], inputs["b"]
    if not need_scales:
        # The exact product alone (a sampled timed call's check: judge.timed):
        # a quarter of the time of the one that also sums |A|·|B| and A²·B².
        return {"c": Expected(exact=_exact_only(a, b), terms=a.shape[1])}
    exact, abs_product, sq_product = _exact(a, b)
    fp32 = None
    if need_fp32:
        # LeetGPU's reference: the library's float32 product, TF32 off.
        if a.is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = False
        fp32 = torch.matmul(a, b)
    return {"c": Expected(exact=exact, abs_scale=abs_product, sq_scale=sq_product,
                          terms=a.shape[1], fp32=fp32)}


def cublas_call(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, tf32: bool):
    """A call of torch.matmul(a, b, out=c) with cuBLAS's TF32 switch set to
    `tf32` during the call only."""
    def call():
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            torch.matmul(a, b, out=c)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
    return call


def matmul_baselines(inputs: dict[str, torch.Tensor]) -> dict:
    """Calls to time on the performance case: cuBLAS with TF32 on and off, and
    the reference kernel in both float32 modes, all writing a preallocated C."""
    from reference.matmul import matmul as reference_matmul

    a, b = inputs["a"], inputs["b"]
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=torch.float32)

    return {
        "cublas_tf32": cublas_call(a, b, c, tf32=True),
        "cublas_fp32": cublas_call(a, b, c, tf32=False),
        "reference_tf32": lambda: reference_matmul(a, b, mode="tf32", out=c),
        "reference_ieee": lambda: reference_matmul(a, b, mode="ieee", out=c),
    }


def matmul_checksum(inputs: dict[str, torch.Tensor]) -> tuple[float, float]:
    """The sum of all elements of A·B, (1ᵀA)(B1), without the product, and
    the same for |A|·|B| as its scale: how the judge checks every timed call."""
    a, b = inputs["a"].double(), inputs["b"].double()
    return float(a.sum(0) @ b.sum(1)), float(a.abs().sum(0) @ b.abs().sum(1))
