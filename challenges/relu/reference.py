"""The truth of ReLU and the baseline it is timed against. Runs in the judge
(trusted), never in the submission's worker."""

from __future__ import annotations

import torch


def reference(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """output = max(0, input), in float64 (exact: values are kept or zeroed).
    Negative inputs give +0.0."""
    x = inputs["input"].double()
    return {"output": torch.where(x > 0, x, torch.zeros_like(x))}


def baselines(inputs: dict[str, torch.Tensor]) -> dict:
    """torch's clamp at 0 into a preallocated output."""
    x = inputs["input"]
    out = torch.empty_like(x)
    return {"torch": lambda: torch.clamp_min(x, 0.0, out=out)}


def checksum(inputs: dict[str, torch.Tensor]) -> tuple[float, float]:
    """sum(output) = sum of the positive inputs, with sum(|input|) as its scale."""
    x = inputs["input"].double()
    return float(x.clamp_min(0).sum()), float(x.abs().sum())
