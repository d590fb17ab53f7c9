"""Bitwise equality with the truth: integer outputs, and float outputs that a
correct kernel only moves (copies, transposes, permutations, ReLU)."""

from __future__ import annotations

from typing import ClassVar, Literal, TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ..compare import NONFINITE, Comparison, Trial, basic_stats, mismatch_list

if TYPE_CHECKING:  # imported where used: loading a challenge must not wait for torch
    import torch


class Exact(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["exact"] = "exact"
    summary: ClassVar[str] = "bitwise equal to the exact result"

    def compare(self, trials: list[Trial]) -> Comparison:
        import torch
        got = torch.cat([t.got.reshape(-1) for t in trials])
        ref = torch.cat([t.expected.float32().reshape(-1).to(got.dtype) for t in trials])
        if got.is_floating_point():
            bad = ~((got == ref) | (torch.isnan(got) & torch.isnan(ref)))
        else:
            bad = got != ref
        count, first = mismatch_list(bad, trials, lambda t: t.expected.float32())
        stats = basic_stats(trials)
        if not count:
            message = "bitwise equal to the expected output"
        elif stats.nonfinite:
            message = NONFINITE.format(stats.nonfinite)
        else:
            message = f"{count} of {stats.elements} elements differ from the expected output"
        return Comparison(passed=count == 0, policy=self.kind, mismatches=count, first_mismatches=first,
                          stats=stats, bound_ratio=0.0 if not count else float("inf"), norm_ratio=None,
                          diagnosis=None, message=message)
