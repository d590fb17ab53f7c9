"""The truth of matrix transpose and the baseline it is timed against. Runs
in the judge (trusted), never in the submission's worker."""

from __future__ import annotations

import torch


def reference(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """output = inputᵀ, a (cols × rows) contiguous matrix (float64; values
    are only moved, so rounding back to float32 is exact)."""
    return {"output": inputs["input"].double().t().contiguous()}


def baselines(inputs: dict[str, torch.Tensor]) -> dict:
    """torch's transposing copy into a preallocated output."""
    x = inputs["input"]
    out = torch.empty(x.shape[1], x.shape[0], device=x.device, dtype=x.dtype)
    return {"torch": lambda: out.copy_(x.t())}


def checksum(inputs: dict[str, torch.Tensor]) -> tuple[float, float]:
    """A transpose keeps the sum: sum(input), with sum(|input|) as its scale."""
    x = inputs["input"].double()
    return float(x.sum()), float(x.abs().sum())
