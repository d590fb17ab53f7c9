"""What a results-store row holds, made from a result JSON: the values
made storable (clean) and the gradebook's columns read from it
(gradebook_columns). Pure functions: the store (judge.batch.store) and
the exports call them."""

from __future__ import annotations

import math
from typing import Any


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def clean(value: Any) -> Any:
    """What a submission may put in its result, made storable: a lone
    surrogate (from an exception message, or a file name that was not UTF-8)
    replaced, which SQLite refused and the batch died of; NaN and infinities
    (the error of a NaN output) as None, which JSON has no word for."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace").decode("utf-8")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def gradebook_columns(result: dict) -> dict[str, Any]:
    """The gradebook's columns of one result JSON, read defensively (a field
    missing or renamed gives None, never an error)."""
    score = result.get("score") or {}
    timing = result.get("timing") or {}
    perf = result.get("performance") or {}
    cases = [c for c in result.get("cases") or [] if isinstance(c, dict)]
    ran = [c for c in cases if c.get("status") not in ("skipped", "not_run")]
    failing = next((c for c in ran if c.get("status") != "accepted"), None)
    target = score.get("target")
    percent = (perf.get("percent_of") or {}).get(target) if target else None
    return dict(
        verdict=str(result.get("verdict") or "internal_error"),
        score=_num(score.get("total")), max_score=_num(score.get("maximum")),
        correctness_points=_num(score.get("correctness")), performance_points=_num(score.get("performance")),
        latency_ms=_num(result.get("latency_ms")), tflops=_num(timing.get("tflops")),
        percent_of_target=_num(percent),
        cases_passed=sum(1 for c in ran if c.get("status") == "accepted"), cases_run=len(ran),
        first_failing_case=failing.get("name") if failing else None,
        message=str(result.get("message") or ""),
    )
