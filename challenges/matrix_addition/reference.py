"""The truth of matrix addition and the baseline it is timed against. Runs in
the judge (trusted), never in the submission's worker."""

from __future__ import annotations

import torch


def reference(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """C = A + B (N×N), in float64; the judge rounds it to float32."""
    return {"c": inputs["a"].double() + inputs["b"].double()}


def baselines(inputs: dict[str, torch.Tensor]) -> dict:
    """torch.add into a preallocated C: what the performance points are measured against."""
    a, b = inputs["a"], inputs["b"]
    c = torch.empty_like(a)
    return {"torch": lambda: torch.add(a, b, out=c)}


def checksum(inputs: dict[str, torch.Tensor]) -> tuple[float, float]:
    """sum(C) = sum(A) + sum(B), with sum(|A|) + sum(|B|) as its scale."""
    a, b = inputs["a"].double(), inputs["b"].double()
    return float(a.sum() + b.sum()), float(a.abs().sum() + b.abs().sum())
