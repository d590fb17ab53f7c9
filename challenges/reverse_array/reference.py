"""The truth of reverse_array, and the library call it is timed against.
Runs in the judge (trusted)."""

from __future__ import annotations

import torch


def reference(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`input` is in/out: its expected final value is its initial value reversed."""
    return {"input": torch.flip(inputs["input"].to(torch.float64), dims=[0])}


def baselines(inputs: dict[str, torch.Tensor]) -> dict:
    """torch's reversal written back into the same buffer (GPU only). The
    buffer is a copy, so the judge's inputs stay as they were."""
    x = inputs["input"].clone()
    return {"torch": lambda: x.copy_(torch.flip(x, dims=[0]))}
