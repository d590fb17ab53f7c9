"""Scoring and the timed-call checks, without a GPU."""

from __future__ import annotations

import math

import pytest
import torch

from judge.errors import UsageError
from judge.grader import _stale_calls
from judge.scoring import ScoringPolicy, load_policy, score

BASE = {"reference_tf32": 4.0, "cublas_tf32": 1.0}


def test_log_scale_between_floor_and_target():
    p = ScoringPolicy()
    assert score(p, True, 4.0, BASE).performance == pytest.approx(0.0)
    assert score(p, True, 1.0, BASE).performance == pytest.approx(p.performance_points)
    half = score(p, True, 2.0, BASE)  # geometric midpoint of 4 ms and 1 ms
    assert half.performance_fraction == pytest.approx(0.5)
    assert half.total == pytest.approx(p.correctness_points + p.performance_points / 2)


def test_clamped_outside_the_range_and_zero_when_not_accepted():
    p = ScoringPolicy()
    assert score(p, True, 10.0, BASE).performance == 0.0
    assert score(p, True, 0.5, BASE).performance == p.performance_points
    wrong = score(p, False, 0.5, BASE)
    assert wrong.total == 0 and wrong.performance is None


def test_untimed_gets_correctness_points_only():
    s = score(ScoringPolicy(), True, None, None)
    assert s.total == ScoringPolicy().correctness_points and s.performance is None
    assert "not timed" in s.note


def test_policy_from_files(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text('correctness_points = 10\nperformance_points = 90\ntarget = "cublas_fp32"\n')
    p = load_policy(toml)
    assert (p.correctness_points, p.performance_points, p.target) == (10, 90, "cublas_fp32")
    js = tmp_path / "s.json"
    js.write_text('{"floor": "reference_ieee"}')
    assert load_policy(js).floor == "reference_ieee"
    bad = tmp_path / "bad.toml"
    bad.write_text("correctness_points = -1\n")
    with pytest.raises(UsageError):
        load_policy(bad)
    with pytest.raises(UsageError):
        load_policy(tmp_path / "missing.toml")


def test_stale_calls_are_found():
    out = torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5
    total, magnitude = float(out.double().sum()), float(out.double().abs().sum())
    outputs = [{"c": out}]
    good = [[0, total, magnitude], [0, total + 1e-9, magnitude]]
    assert _stale_calls(good, outputs) == []
    skipped = good + [[0, math.nan, math.nan], [0, 0.0, 0.0]]
    assert _stale_calls(skipped, outputs) == [2, 3]
