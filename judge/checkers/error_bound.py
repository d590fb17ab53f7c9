"""Error bounds for outputs that are sums of products (matrix products,
reductions, convolutions): the checkers `fp32_bound` and `tf32_bound`.

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
from typing import ClassVar, Literal, TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ..compare import NONFINITE, Comparison, Stats, Trial, against

if TYPE_CHECKING:  # imported where used: loading a challenge must not wait for torch
    import torch

U32 = 2.0**-24  # unit roundoff of float32
TF32_UNIT = 2.0**-11  # 10 stored mantissa bits
BF16_UNIT = 2.0**-8  # 7 stored mantissa bits
TINY = 2.0**-126  # smallest normal float32: products below it may be flushed
# Input rounding between TF32's (≈2^-11.4 as measured by `input_rounding`)
# and bf16's (≈2^-8.4), a factor 2.8 from each.
TF32_BF16_SPLIT = 2.0**-9.9
# √n, the growth of a sum's rounding error, is floored: with few terms a
# float32-class product (3xTF32) may sit several units of roundoff from the
# truth whatever the data: 3.3e-7 of |A|·|B| (5.5 u) measured for 3xTF32 at
# n = 1 on the H100, up to 18 u if its split truncated (emulated in
# tests/test_seed_stability.py). TF32 sits ~2^-11 away, still 250× above the floored bound.
ROOT_N_FLOOR = 8.0


def _root_n(n: int) -> float:
    return max(math.sqrt(n), ROOT_N_FLOOR)


def _flat(trials: list[Trial]):
    import torch
    if any(t.expected.abs_scale is None or t.expected.sq_scale is None for t in trials):
        raise ValueError("error-bound checkers need a reference that returns error scales "
                         "(Expected.abs_scale and sq_scale)")
    got = torch.cat([t.got.reshape(-1).to(torch.float64) for t in trials])
    exact = torch.cat([t.expected.exact.reshape(-1).to(torch.float64) for t in trials])
    p1 = torch.cat([t.expected.abs_scale.reshape(-1) for t in trials])
    p2sq = torch.cat([t.expected.sq_scale.reshape(-1) for t in trials])
    n = max(1, trials[0].expected.terms)
    return got, exact, p1, p2sq, n


def statistics(trials: list[Trial]) -> Stats:
    import torch
    got, exact, p1, p2sq, n = _flat(trials)
    finite = torch.isfinite(got)
    nonfinite = int((~finite & torch.isfinite(exact)).sum())
    err = torch.where(finite, got - exact, torch.zeros_like(got))
    abs_err = err.abs()
    root_n = _root_n(n)
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


class Fp32Bound(BaseModel):
    """The float32 product to float32 accuracy, in any summation order."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    summary: ClassVar[str] = "float32 accuracy against the exact product, any summation order"
    kind: Literal["fp32_bound"] = "fp32_bound"
    elementwise_multiple: float = 4.0  # float32 kernels reach ~1.2 (tests/test_compare.py)
    normwise_multiple: float = 4.0  # float32 kernels reach ~0.5, TF32 ≥ 50 on zero-mean data

    def elementwise_bound(self, trials: list[Trial]) -> torch.Tensor:
        import torch
        _, _, p1, _, n = _flat(trials)
        return self.elementwise_multiple * U32 * _root_n(n) * p1 + n * TINY

    def compare(self, trials: list[Trial]) -> Comparison:
        stats = statistics(trials)
        got, exact, *_ = _flat(trials)
        count, first, bound_ratio = against(trials, got, exact, self.elementwise_bound(trials),
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
        return Comparison(passed=passed, policy=self.kind, mismatches=count, first_mismatches=first,
                          stats=stats, bound_ratio=bound_ratio, norm_ratio=norm_ratio,
                          diagnosis=diagnosis, message=message)


class Tf32Bound(BaseModel):
    """Accepts inputs rounded to TF32 (10-bit mantissa); rejects bf16."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    summary: ClassVar[str] = "accepts TF32-rounded inputs (tl.dot's default); bf16 fails"
    kind: Literal["tf32_bound"] = "tf32_bound"
    elementwise_multiple: float = 4.0
    max_input_rounding: float = TF32_BF16_SPLIT

    def compare(self, trials: list[Trial]) -> Comparison:
        stats = statistics(trials)
        got, exact, p1, _, n = _flat(trials)
        # Each input rounded by at most 2⁻¹⁰ (truncation) gives |Δp| ≤ 2⁻⁹·|p| for
        # every product, whatever the data; float32 accumulation comes on top.
        bound = (2.0**-9 + self.elementwise_multiple * U32 * _root_n(n)) * p1 + n * TINY
        count, first, bound_ratio = against(trials, got, exact, bound, lambda t: t.expected.exact)
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
        return Comparison(passed=passed, policy=self.kind, mismatches=count, first_mismatches=first,
                          stats=stats, bound_ratio=bound_ratio, norm_ratio=norm_ratio,
                          diagnosis=diagnosis, message=message)
