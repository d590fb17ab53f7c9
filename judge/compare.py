"""Comparison: what the trusted side knows of each output, the result of
comparing a submission's output with it, and policies built from checkers.

A policy (named in challenge.toml) is a list of checkers, each a small
plug-in of judge.checkers that looks at every trial of a case and says
whether its outputs are close enough; the policy passes when all pass, and
the first that fails speaks for it. This module is the one place that turns
outputs into a pass or a fail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:  # imported where used: loading a challenge must not wait for torch
    import torch

SHOWN_MISMATCHES = 5
NONFINITE = "{} NaN/inf outputs where the expected value is finite"


@dataclass
class Expected:
    """What the trusted side knows about one output of one trial."""

    exact: torch.Tensor  # the truth, float64 (or the output's integer dtype)
    abs_scale: torch.Tensor | None = None  # Σ|p_t| per element, for sums of products (|A|·|B| for matmul)
    sq_scale: torch.Tensor | None = None  # Σ p_t² per element
    terms: int = 1  # n, the number of products summed per element
    fp32: torch.Tensor | None = None  # a float32 library result (LeetGPU's reference), when it differs

    def float32(self) -> torch.Tensor:
        """The float32 reference LeetGPU compares with: the library's float32
        result when the reference gave one, else the truth rounded to float32."""
        import torch
        if self.fp32 is not None:
            return self.fp32
        return self.exact.to(torch.float32) if self.exact.is_floating_point() else self.exact


@dataclass
class Trial:
    got: torch.Tensor  # what the submission wrote
    expected: Expected


class Mismatch(BaseModel):
    trial: int
    index: tuple[int, ...]
    got: float
    expected: float


class Stats(BaseModel):
    """Error statistics of a case, pooled over its trials. The last four are
    the error-bound checkers' (None for the others)."""

    elements: int
    nonfinite: int  # NaN/inf where the truth is finite
    max_abs_err: float
    max_rel_err: float  # |err| / |exact| over elements with exact != 0
    elementwise_fp32: float | None = None  # max |err| / (u·√n·Σ|p|)
    normwise_fp32: float | None = None  # RMS over elements of |err| / (u·√n·√(E²/3 + Σp²/2))
    input_rounding: float | None = None  # v: estimated unit roundoff of the inputs used
    spread: float | None = None  # fraction of elements above 4× their normwise float32 level


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool
    policy: str
    mismatches: int
    first_mismatches: list[Mismatch]
    stats: Stats
    bound_ratio: float  # worst elementwise error over the checker's bound (≤ 1 passes)
    norm_ratio: float | None  # normwise statistic over its threshold (≤ 1 passes)
    diagnosis: str | None
    message: str


# --- helpers the checkers share --------------------------------------------------

def flat(trials: list[Trial], which=lambda t: t.expected.exact) -> tuple[torch.Tensor, torch.Tensor]:
    """(got, reference) of every trial, flattened and widened to float64."""
    import torch
    got = torch.cat([t.got.reshape(-1).to(torch.float64) for t in trials])
    ref = torch.cat([which(t).reshape(-1).to(torch.float64) for t in trials])
    return got, ref


def basic_stats(trials: list[Trial]) -> Stats:
    import torch
    got, exact = flat(trials)
    finite = torch.isfinite(got)
    nonfinite = int((~finite & torch.isfinite(exact)).sum())
    err = torch.where(finite, got - exact, torch.zeros_like(got)).abs()
    nz = exact != 0
    rel = err[nz] / exact[nz].abs()
    worst = math.inf if nonfinite else None
    return Stats(elements=got.numel(), nonfinite=nonfinite,
                 max_abs_err=worst or (float(err.max()) if got.numel() else 0.0),
                 max_rel_err=worst or (float(rel.max()) if rel.numel() else 0.0))


def mismatch_list(mask: torch.Tensor, trials: list[Trial], shown_expected) -> tuple[int, list[Mismatch]]:
    """How many elements `mask` marks, and the first few as (trial, index, got, expected)."""
    import torch
    count = int(mask.sum())
    first: list[Mismatch] = []
    if count:
        flat_idx = torch.nonzero(mask).reshape(-1)[:SHOWN_MISMATCHES].tolist()
        offsets = [0]
        for t in trials:
            offsets.append(offsets[-1] + t.got.numel())
        for i in flat_idx:
            k = max(j for j in range(len(trials)) if offsets[j] <= i)
            local = i - offsets[k]
            t = trials[k]
            index = tuple(int(x) for x in torch.unravel_index(torch.tensor(local), t.got.shape))
            first.append(Mismatch(trial=k, index=index, got=float(t.got.reshape(-1)[local]),
                                  expected=float(shown_expected(t).reshape(-1)[local])))
    return count, first


def against(trials: list[Trial], got: torch.Tensor, reference: torch.Tensor, allowed: torch.Tensor,
            shown) -> tuple[int, list[Mismatch], float]:
    """Elements further than `allowed` from `reference`, or NaN/inf where it is
    finite: how many, the first few, and the worst |got − reference| / allowed
    (infinite when an output is NaN/inf)."""
    import torch
    finite = torch.isfinite(got)
    diff = torch.where(finite, (got - reference).abs(), torch.zeros_like(got))
    bad = (~finite | (diff > allowed)) & torch.isfinite(reference)
    count, first = mismatch_list(bad, trials, shown)
    if bool((~finite & torch.isfinite(reference)).any()):
        return count, first, math.inf
    if not got.numel():
        return count, first, 0.0
    ratio = torch.where(allowed > 0, diff / allowed, torch.where(diff > 0, math.inf, 0.0))
    return count, first, float(ratio.max())


# --- policies ---------------------------------------------------------------------

class Policy:
    """A named list of checkers; passes when every checker passes."""

    def __init__(self, name: str, checkers: list, summary: str = ""):
        self.name = name
        self.checkers = checkers
        self.summary = summary or "; ".join(c.summary for c in checkers)

    @property
    def needs_fp32(self) -> bool:
        """Whether a checker compares with a float32 library result."""
        return any(getattr(c, "needs_fp32", False) for c in self.checkers)

    @property
    def allclose(self) -> tuple[float, float] | None:
        """(atol, rtol) of the policy's elementwise tolerance, if it has one."""
        for checker in self.checkers:
            if hasattr(checker, "atol") and hasattr(checker, "rtol"):
                return checker.atol, checker.rtol
        return None

    def compare(self, trials: list[Trial]) -> Comparison:
        results = [checker.compare(trials) for checker in self.checkers]
        failed = next((r for r in results if not r.passed), None)
        chosen = failed or results[0]
        return chosen.model_copy(update={"policy": self.name})


def policy_for(challenge, name: str | None = None) -> Policy:
    """The named policy of a challenge (its default when None)."""
    from .checkers import build
    name = name or challenge.tolerance.default_policy
    spec = challenge.tolerance.policies.get(name)
    if spec is None:
        raise ValueError(f"policy {name!r} is not defined for {challenge.name} "
                         f"(defined: {', '.join(challenge.tolerance.policies)})")
    return Policy(name, [build(c) for c in spec.checkers], spec.summary)
