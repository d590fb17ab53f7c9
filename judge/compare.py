"""Comparison: error statistics, tolerance policies, precision diagnosis.

The truth is the exact product (float64 accumulation of exact float32
products), so a correct kernel is judged by how far it is from the real
answer, not from another kernel's rounding. Two scales describe how far any
float32 computation may stray, whatever its summation order:

* elementwise, u·√n·(|A|·|B|)_ij: the probabilistic bound of Higham & Mary
  (2019) for a sum of n terms rounded to unit roundoff u = 2⁻²⁴, valid for
  any order of summation (sequential, tiled, split-K, trees);
* normwise (the RMS over all elements of the error in units of this
  scale), u·√n·√(E²/3 + Σ_t p_t²/2): the spread of the partial sums a
  summation walks through (a coherent drift E plus a random walk over the
  products p_t). It is about √n tighter than the elementwise scale on
  zero-mean data, which is what lets it see TF32: TF32 rounds each input to
  2⁻¹¹, i.e. a noise of ~2⁻¹¹·√(Σ p_t²), which at n = 8192 still sits 50×
  above the float32 level while a float32 kernel stays below 0.5× of it.

An error is also decomposed as err ≈ β·E + noise: β measures a bias (TF32 or
bf16 truncation on coherent data), the noise over √2·√(Σ p_t²) the relative
rounding of the inputs. Their larger, v = max(σ·√3, |β|/2), estimates the
unit roundoff of the inputs the kernel really used: ~0.75·2⁻¹¹ for TF32 (and
fp16), ~0.75·2⁻⁸ for bf16, under 2⁻¹⁷ for float32 kernels. The diagnosis and the
`tf32` policy rest on it. The margins are measured in tests/test_compare.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
from pydantic import BaseModel, ConfigDict

U32 = 2.0**-24  # unit roundoff of float32
TF32_UNIT = 2.0**-11  # 10 stored mantissa bits
BF16_UNIT = 2.0**-8  # 7 stored mantissa bits
TINY = 2.0**-126  # smallest normal float32: products below it may be flushed
SHOWN_MISMATCHES = 5
# Input rounding between TF32's (≈2^-11.4 as measured by `input_rounding`)
# and bf16's (≈2^-8.4), a factor 2.8 from each.
TF32_BF16_SPLIT = 2.0**-9.9


@dataclass
class Expected:
    """What the trusted side knows about one output of one trial."""

    exact: torch.Tensor  # float64
    abs_scale: torch.Tensor  # float64, Σ|p_t| per element (|A|·|B| for matmul)
    sq_scale: torch.Tensor  # float64, Σ p_t² per element
    terms: int  # n, the number of products summed per element
    fp32: torch.Tensor | None = None  # the float32 library result (leetgpu policy)


@dataclass
class Trial:
    got: torch.Tensor  # what the submission wrote, float32
    expected: Expected


class Mismatch(BaseModel):
    trial: int
    index: tuple[int, ...]
    got: float
    expected: float


class Stats(BaseModel):
    """Error statistics of a case, pooled over its trials."""

    elements: int
    nonfinite: int  # NaN/inf where the truth is finite
    max_abs_err: float
    max_rel_err: float  # |err| / |exact| over elements with exact != 0
    elementwise_fp32: float  # max |err| / (u·√n·Σ|p|)
    normwise_fp32: float  # RMS over elements of |err| / (u·√n·√(E²/3 + Σp²/2))
    input_rounding: float  # v: estimated unit roundoff of the inputs used
    spread: float  # fraction of elements above 4× their normwise float32 level


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: bool
    policy: str
    mismatches: int
    first_mismatches: list[Mismatch]
    stats: Stats
    bound_ratio: float  # worst elementwise error over the policy's bound (≤ 1 passes)
    norm_ratio: float | None  # normwise statistic over its threshold (≤ 1 passes)
    diagnosis: str | None
    message: str


# --- statistics ----------------------------------------------------------------

def _flat(trials: list[Trial]):
    got = torch.cat([t.got.reshape(-1).to(torch.float64) for t in trials])
    exact = torch.cat([t.expected.exact.reshape(-1) for t in trials])
    p1 = torch.cat([t.expected.abs_scale.reshape(-1) for t in trials])
    p2sq = torch.cat([t.expected.sq_scale.reshape(-1) for t in trials])
    n = max(1, trials[0].expected.terms)
    return got, exact, p1, p2sq, n


def statistics(trials: list[Trial]) -> Stats:
    got, exact, p1, p2sq, n = _flat(trials)
    finite = torch.isfinite(got)
    nonfinite = int((~finite & torch.isfinite(exact)).sum())
    err = torch.where(finite, got - exact, torch.zeros_like(got))
    abs_err = err.abs()
    root_n = math.sqrt(n)
    elem_scale = U32 * root_n * p1 + n * TINY
    norm_level = U32 * root_n * torch.sqrt(exact.square() / 3 + p2sq / 2) + n * TINY
    nz = exact != 0
    rel = abs_err[nz] / exact[nz].abs()
    # err ≈ β·E + noise, each element taken relative to its own random-walk
    # scale √(2Σp²) so that a few large outputs cannot dominate the estimate.
    walk = torch.sqrt(2 * p2sq)
    live = walk > 0
    e_n, x_n = err[live] / walk[live], exact[live] / walk[live]
    x2 = float(x_n.square().sum())
    beta = float((e_n * x_n).sum()) / x2 if x2 > 0 else 0.0
    sigma = float((e_n - beta * x_n).square().mean().sqrt()) if e_n.numel() else 0.0
    normwise = float((abs_err / norm_level).square().mean().sqrt()) if got.numel() else 0.0
    worst = math.inf if nonfinite else None  # NaN/inf outputs: the error is unbounded
    return Stats(
        elements=got.numel(),
        nonfinite=nonfinite,
        max_abs_err=worst or (float(abs_err.max()) if got.numel() else 0.0),
        max_rel_err=worst or (float(rel.max()) if rel.numel() else 0.0),
        elementwise_fp32=worst or (float((abs_err / elem_scale).max()) if got.numel() else 0.0),
        normwise_fp32=normwise,
        input_rounding=max(sigma * math.sqrt(3), abs(beta) / 2),
        spread=float((abs_err > 4 * norm_level).double().mean()) if got.numel() else 0.0,
    )


def diagnose(stats: Stats) -> str | None:
    """Name the precision the kernel really used, when the error says so."""
    v = stats.input_rounding
    if stats.nonfinite or stats.spread < 0.5 or v == 0:
        return None
    bits = -math.log2(v)
    if -math.log2(TF32_BF16_SPLIT) <= bits < 13:
        return (f"the error matches inputs rounded to TF32 (unit ≈ 2^-{bits:.1f}; TF32 is 2^-11): "
                "on Ampere and newer GPUs tl.dot on float32 tiles uses TF32 by default. "
                'Pass input_precision="ieee" to tl.dot (allow_tf32=False on older Triton). '
                "fp16 inputs give the same error level.")
    if 6.5 <= bits < -math.log2(TF32_BF16_SPLIT):
        return (f"the error matches inputs rounded to bf16 (unit ≈ 2^-{bits:.1f}; bf16 is 2^-8): "
                "keep the tiles in float32 and use tl.dot(..., input_precision=\"ieee\").")
    return None


def _mismatch_list(mask: torch.Tensor, trials: list[Trial], shown_expected) -> tuple[int, list[Mismatch]]:
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


def _against(trials: list[Trial], got: torch.Tensor, reference: torch.Tensor, allowed: torch.Tensor,
             shown) -> tuple[int, list[Mismatch], float]:
    """Elements further than `allowed` from `reference`, or NaN/inf where it is
    finite: how many, the first few, and the worst |got − reference| / allowed
    (infinite when an output is NaN/inf)."""
    finite = torch.isfinite(got)
    diff = torch.where(finite, (got - reference).abs(), torch.zeros_like(got))
    bad = (~finite | (diff > allowed)) & torch.isfinite(reference)
    count, first = _mismatch_list(bad, trials, shown)
    if bool((~finite & torch.isfinite(reference)).any()):
        return count, first, math.inf
    return count, first, float((diff / allowed).max()) if got.numel() else 0.0


NONFINITE = "{} NaN/inf outputs where the expected value is finite"


# --- policies ------------------------------------------------------------------

class Policy(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: ClassVar[str]
    summary: ClassVar[str]

    def compare(self, trials: list[Trial]) -> Comparison:
        raise NotImplementedError


class Fp32Policy(Policy):
    """The float32 product to float32 accuracy, in any summation order."""

    name: ClassVar[str] = "fp32"
    summary: ClassVar[str] = "float32 accuracy against the exact product, any summation order"
    kind: Literal["fp32"] = "fp32"
    elementwise_multiple: float = 4.0  # float32 kernels reach ~1.2 (tests/test_compare.py)
    normwise_multiple: float = 4.0  # float32 kernels reach ~0.5, TF32 ≥ 50 on zero-mean data

    def elementwise_bound(self, trials: list[Trial]) -> torch.Tensor:
        _, _, p1, _, n = _flat(trials)
        return self.elementwise_multiple * U32 * math.sqrt(n) * p1 + n * TINY

    def compare(self, trials: list[Trial]) -> Comparison:
        stats = statistics(trials)
        got, exact, *_ = _flat(trials)
        count, first, bound_ratio = _against(trials, got, exact, self.elementwise_bound(trials),
                                             lambda t: t.expected.exact)
        norm_ratio = stats.normwise_fp32 / self.normwise_multiple
        passed = count == 0 and norm_ratio <= 1 and stats.nonfinite == 0
        diagnosis = None if passed else diagnose(stats)
        if passed:
            message = (f"within float32 accuracy (worst element at {bound_ratio:.2g} of its bound, "
                       f"normwise {norm_ratio:.2g})")
        elif stats.nonfinite:
            message = NONFINITE.format(stats.nonfinite)
        elif count:
            message = (f"{count} of {stats.elements} elements beyond the float32 bound "
                       f"(worst at {bound_ratio:.3g}× the bound)")
        else:
            message = (f"normwise error {norm_ratio:.3g}× the float32 threshold, though every "
                       "element is within its elementwise bound: the whole output carries an "
                       "error no float32 summation order produces")
        return Comparison(passed=passed, policy=self.name, mismatches=count, first_mismatches=first,
                          stats=stats, bound_ratio=bound_ratio, norm_ratio=norm_ratio,
                          diagnosis=diagnosis, message=message)


class Tf32Policy(Policy):
    """Accepts inputs rounded to TF32 (10-bit mantissa); rejects bf16."""

    name: ClassVar[str] = "tf32"
    summary: ClassVar[str] = "accepts TF32-rounded inputs (tl.dot's default); bf16 fails"
    kind: Literal["tf32"] = "tf32"
    elementwise_multiple: float = 4.0
    max_input_rounding: float = TF32_BF16_SPLIT

    def compare(self, trials: list[Trial]) -> Comparison:
        stats = statistics(trials)
        got, exact, p1, _, n = _flat(trials)
        # Each input rounded by at most 2⁻¹⁰ (truncation) gives |Δp| ≤ 2⁻⁹·|p| for
        # every product, whatever the data; float32 accumulation comes on top.
        bound = (2.0**-9 + self.elementwise_multiple * U32 * math.sqrt(n)) * p1 + n * TINY
        count, first, bound_ratio = _against(trials, got, exact, bound, lambda t: t.expected.exact)
        norm_ratio = stats.input_rounding / self.max_input_rounding
        passed = count == 0 and norm_ratio <= 1 and stats.nonfinite == 0
        diagnosis = None if passed else diagnose(stats)
        if passed:
            message = (f"within TF32 accuracy (inputs rounded to ≈2^{math.log2(max(stats.input_rounding, 1e-300)):.1f}; "
                       f"worst element at {bound_ratio:.2g} of its bound)")
        elif stats.nonfinite:
            message = NONFINITE.format(stats.nonfinite)
        elif count:
            message = f"{count} of {stats.elements} elements beyond the TF32 bound"
        else:
            message = (f"inputs appear rounded to 2^{math.log2(stats.input_rounding):.1f}, coarser "
                       "than TF32 (2^-11) allows")
        return Comparison(passed=passed, policy=self.name, mismatches=count, first_mismatches=first,
                          stats=stats, bound_ratio=bound_ratio, norm_ratio=norm_ratio,
                          diagnosis=diagnosis, message=message)


class LeetgpuPolicy(Policy):
    """LeetGPU's rule: |got − ref| ≤ atol + rtol·|ref| against torch's float32 product."""

    name: ClassVar[str] = "leetgpu"
    summary: ClassVar[str] = "LeetGPU's elementwise 1e-4 + 1e-4·|ref| against torch's float32 product"
    kind: Literal["leetgpu"] = "leetgpu"
    atol: float = 1e-4
    rtol: float = 1e-4

    def compare(self, trials: list[Trial]) -> Comparison:
        if any(t.expected.fp32 is None for t in trials):
            raise ValueError("the leetgpu policy needs the float32 library result")
        stats = statistics(trials)
        got = torch.cat([t.got.reshape(-1).to(torch.float64) for t in trials])
        ref = torch.cat([t.expected.fp32.reshape(-1).to(torch.float64) for t in trials])
        count, first, bound_ratio = _against(trials, got, ref, self.atol + self.rtol * ref.abs(),
                                             lambda t: t.expected.fp32)
        passed = count == 0
        diagnosis = None
        if passed:
            message = f"within LeetGPU's tolerance (worst element at {bound_ratio:.2g} of it)"
        else:
            message = (f"{count} of {stats.elements} elements differ from torch's float32 product "
                       f"by more than {self.atol:g} + {self.rtol:g}·|expected|")
            fp32 = Fp32Policy().compare(trials)
            if fp32.passed:
                diagnosis = (
                    "this kernel is float32-accurate (it passes the fp32 policy against the exact "
                    "product), yet LeetGPU's rule rejects it: outputs near zero lose their relative "
                    "accuracy to cancellation, so any summation order other than the float32 "
                    "library's (split-K, other tile depths) moves them past 1e-4. LeetGPU may "
                    "reject it too; the fp32 policy is the fair test of correctness.")
            else:
                diagnosis = diagnose(stats)
        return Comparison(passed=passed, policy=self.name, mismatches=count, first_mismatches=first,
                          stats=stats, bound_ratio=bound_ratio, norm_ratio=None,
                          diagnosis=diagnosis, message=message)


POLICIES: dict[str, type[Policy]] = {p.name: p for p in (Fp32Policy, LeetgpuPolicy, Tf32Policy)}


def get_policy(name: str) -> Policy:
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r} (choose from {', '.join(POLICIES)})") from None
