"""LeetGPU's rule: every element within atol + rtol·|ref| of the float32
reference (the library's float32 result, or the truth rounded to float32)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..compare import Comparison, Trial, against, basic_stats, flat


class AllClose(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["allclose"] = "allclose"
    atol: float = Field(1e-4, ge=0)
    rtol: float = Field(1e-4, ge=0)
    summary: ClassVar[str] = "elementwise |got − expected| ≤ atol + rtol·|expected| against the float32 result"
    needs_fp32: ClassVar[bool] = True

    def compare(self, trials: list[Trial]) -> Comparison:
        got, ref = flat(trials, lambda t: t.expected.float32())
        count, first, bound_ratio = against(trials, got, ref, self.atol + self.rtol * ref.abs(),
                                            lambda t: t.expected.float32())
        stats = basic_stats(trials)
        passed = count == 0
        diagnosis = None
        if passed:
            message = f"within atol {self.atol:g}, rtol {self.rtol:g} (worst element at {bound_ratio:.2g} of it)"
        else:
            message = (f"{count} of {stats.elements} elements differ from the float32 reference "
                       f"by more than {self.atol:g} + {self.rtol:g}·|expected|")
            broken = int((~got.isfinite() & ref.isfinite()).sum())
            if broken:  # say it: the table's errors read "–" for them
                message += f" ({broken} of them NaN or inf where the answer is finite)"

            diagnosis = _cancellation_diagnosis(trials)
        return Comparison(passed=passed, policy=self.kind, mismatches=count, first_mismatches=first,
                          stats=stats, bound_ratio=bound_ratio, norm_ratio=None,
                          diagnosis=diagnosis, message=message)


def _cancellation_diagnosis(trials: list[Trial]) -> str | None:
    """For sums of products (the reference gave error scales): say whether the
    kernel is float32-accurate all the same, or which precision it used."""
    if any(t.expected.abs_scale is None for t in trials):
        return None
    from .error_bound import Fp32Bound, diagnose, statistics
    if Fp32Bound().compare(trials).passed:
        import torch
        # Cancellation, or a sum so long that float32's rounding alone passes the tolerance?
        scale = torch.cat([t.expected.abs_scale.reshape(-1).double() for t in trials])
        ref = torch.cat([t.expected.float32().reshape(-1).double() for t in trials])
        if bool((ref.abs() >= 0.1 * scale).all()):
            return ("this kernel is float32-accurate (it passes the fp32 policy against the exact result), yet "
                    "LeetGPU's rule rejects it: the tolerance is tighter than the rounding error float32 itself "
                    "makes over a sum this long, and the reference is the library's float32 sum, added in another "
                    "order. A running sum, one element after another, strays furthest; summing in blocks and then "
                    "adding the blocks' sums (a tree) stays closer to the library's. LeetGPU may reject it too; the "
                    "fp32 policy is the fair test of correctness.")
        return ("this kernel is float32-accurate (it passes the fp32 policy against the exact "
                "result), yet LeetGPU's rule rejects it: outputs near zero lose their relative "
                "accuracy to cancellation, so any summation order other than the float32 "
                "library's (another tiling or split, another order of blocks) moves them past the tolerance. LeetGPU may "
                "reject it too; the fp32 policy is the fair test of correctness.")
    return diagnose(statistics(trials))
