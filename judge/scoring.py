"""Scoring: points for correctness, and performance points on a logarithmic
scale between a floor latency (no points) and a target latency (all points),
both taken from baselines measured on the same GPU and shape."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .errors import UsageError


class ScoringPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    correctness_points: float = Field(40.0, ge=0)
    performance_points: float = Field(60.0, ge=0)
    floor: str = "reference_tf32"  # the baseline whose latency (× floor_multiple) earns no performance points
    target: str = "cublas_tf32"  # the baseline whose latency (× target_multiple) earns them all
    floor_multiple: float = Field(1.0, gt=0)
    target_multiple: float = Field(1.0, gt=0)


class Score(BaseModel):
    total: float
    maximum: float
    correctness: float
    performance: float | None  # None when the submission was not timed
    performance_fraction: float | None
    latency_ms: float | None
    floor: str
    floor_ms: float | None
    target: str
    target_ms: float | None
    note: str


def load_policy(path: str | Path | None, base: ScoringPolicy | None = None) -> ScoringPolicy | None:
    """A policy read from a TOML or JSON file, its missing fields taken from
    `base` (the challenge's own scale); None when no file is given."""
    if path is None:
        return base
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read scoring policy {path}: {exc.strerror}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text.decode())
        return ScoringPolicy.model_validate({**(base.model_dump() if base else {}), **data})
    except Exception as exc:  # noqa: BLE001 - any parse or validation error is the user's
        raise UsageError(f"invalid scoring policy {path}: {exc}") from None


def score(policy: ScoringPolicy, accepted: bool, latency_ms: float | None,
          baselines: dict[str, float] | None) -> Score:
    maximum = policy.correctness_points + policy.performance_points
    floor_ms = (baselines or {}).get(policy.floor)
    target_ms = (baselines or {}).get(policy.target)
    floor_ms = floor_ms * policy.floor_multiple if floor_ms is not None else None
    target_ms = target_ms * policy.target_multiple if target_ms is not None else None
    common = dict(maximum=maximum, latency_ms=latency_ms, floor=policy.floor, floor_ms=floor_ms,
                  target=policy.target, target_ms=target_ms)
    if not accepted:
        return Score(total=0.0, correctness=0.0, performance=None, performance_fraction=None,
                     note="not accepted: no points", **common)
    label_floor = policy.floor if policy.floor_multiple == 1 else f"{policy.floor_multiple:g}× {policy.floor}"
    label_target = policy.target if policy.target_multiple == 1 else f"{policy.target_multiple:g}× {policy.target}"
    if latency_ms is None or floor_ms is None or target_ms is None:
        why = "not timed" if latency_ms is None else f"baselines {policy.floor}/{policy.target} unavailable"
        return Score(total=policy.correctness_points, correctness=policy.correctness_points,
                     performance=None, performance_fraction=None,
                     note=f"correctness points only ({why})", **common)
    if floor_ms > target_ms:
        fraction = math.log(floor_ms / latency_ms) / math.log(floor_ms / target_ms)
    else:  # a degenerate policy: the target is no faster than the floor
        fraction = 1.0 if latency_ms <= target_ms else 0.0
    fraction = min(1.0, max(0.0, fraction))
    perf = policy.performance_points * fraction
    return Score(total=policy.correctness_points + perf, correctness=policy.correctness_points,
                 performance=perf, performance_fraction=fraction,
                 note=(f"performance: log scale from {label_floor} ({floor_ms:.3f} ms, 0 points) "
                       f"to {label_target} ({target_ms:.3f} ms, {policy.performance_points:g} points)"),
                 **common)
