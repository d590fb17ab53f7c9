"""The truth of leaky ReLU (slope 0.01) and the baseline it is timed
against. Runs in the judge (trusted), never in the submission's worker."""

from __future__ import annotations

import torch

ALPHA = 0.01


def reference(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """output = x where x > 0, else 0.01·x, in float64 (the judge rounds it
    to float32)."""
    x = inputs["input"].double()
    return {"output": torch.where(x > 0, x, ALPHA * x)}


def baselines(inputs: dict[str, torch.Tensor]) -> dict:
    """torch's leaky_relu into a preallocated output."""
    x = inputs["input"]
    out = torch.empty_like(x)
    return {"torch": lambda: torch._C._nn.leaky_relu(x, ALPHA, out=out)}


def checksum(inputs: dict[str, torch.Tensor]) -> tuple[float, float]:
    """sum(output) from the inputs, with sum(|input|) as its scale."""
    x = inputs["input"].double()
    return float(torch.where(x > 0, x, ALPHA * x).sum()), float(x.abs().sum())
