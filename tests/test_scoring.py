"""Scoring and the timed-call checks, without a GPU."""

from __future__ import annotations

import math

import pytest
from judge.errors import UsageError
from judge import timed
from judge.casework import Run as _Run
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


def test_every_timed_call_is_checked_against_its_fresh_inputs():
    from judge import cases
    from judge.challenge import load

    run = _Run.__new__(_Run)  # only what stale_calls needs
    run.challenge, run.device = load("matrix_multiplication"), "cpu"
    case = run.challenge.case("primes_medium")
    plan = cases.input_plan(run.challenge, case)
    base = 1234

    def honest_total(r):
        made = cases.make_inputs(plan, cases.call_seed(base, r), "cpu")
        return float((made["a"] @ made["b"]).double().sum())

    checks = [[r, r % 3, honest_total(r)] for r in range(4)]
    assert timed.stale_calls(run, plan, base, checks) == []
    checks.append([4, 1, honest_total(1)])  # a cached answer, replayed on new data
    checks.append([5, 2, math.nan])  # a call that left the poison
    assert timed.stale_calls(run, plan, base, checks) == [4, 5]
