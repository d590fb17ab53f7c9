"""What the judge needs from each reference: the truth and its error scales.

Each function takes the case's inputs (name -> tensor) and returns, per
output name, a judge.compare.Expected. Challenges name theirs in
challenge.toml (`reference = "reference.expected:matmul"`).
"""

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


def matmul(inputs: dict[str, torch.Tensor], need_fp32: bool = False) -> dict[str, Expected]:
    a, b = inputs["a"], inputs["b"]
    exact, abs_product, sq_product = _exact(a, b)
    fp32 = None
    if need_fp32:
        # LeetGPU's reference: the library's float32 product, TF32 off.
        if a.is_cuda:
            torch.backends.cuda.matmul.allow_tf32 = False
        fp32 = torch.matmul(a, b)
    return {"c": Expected(exact=exact, abs_scale=abs_product, sq_scale=sq_product,
                          terms=a.shape[1], fp32=fp32)}
