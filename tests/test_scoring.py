"""Scoring and the timed-call checks, without a GPU."""

from __future__ import annotations

import math

import pytest
import torch
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


def _checking_run(challenge: str):
    from pathlib import Path

    from judge.challenge import load
    from judge.grader import GradeOptions
    return _Run(load(challenge), Path("unused.py"), "cpu", GradeOptions(challenge=challenge, device="cpu", seed=5))


def _sums(run, plan, base, r, output_of):
    """A timed call's report: [r, set, plain sum, ±1-weighted sum] of the output `output_of` makes."""
    from judge import cases
    made = cases.make_inputs(plan, cases.call_seed(base, r), "cpu")
    out = output_of(made).reshape(-1).double()
    return [r, r % 3, float(out.sum()), float((out * cases.check_weights(out.numel(), "cpu")).sum())]


def test_every_timed_call_is_checked_against_its_fresh_inputs():
    from judge import cases

    run = _checking_run("matrix_multiplication")
    plan = cases.input_plan(run.challenge, run.challenge.case("primes_medium"))
    base = 1234
    honest = lambda made: made["a"] @ made["b"]  # noqa: E731
    checks = [_sums(run, plan, base, r, honest) for r in range(4)]
    assert timed.stale_calls(run, plan, base, checks) == []
    checks.append([4, 1] + checks[1][2:])  # a cached answer, replayed on new data
    checks.append([5, 2, math.nan, math.nan])  # a call that left the poison
    checks.append([6, 0, checks[0][2]])  # a report without its weighted sum
    assert timed.stale_calls(run, plan, base, checks) == [4, 5, 6]


def test_a_fake_output_with_the_right_plain_sum_is_caught_by_the_weighted_one(monkeypatch):
    """(1ᵀA)(B1) in one element and zeros elsewhere meets matmul's cheap
    checksum without the product's work; a transpose that only copies meets
    the plain sum of a transpose. Both are caught on the calls sampled."""
    from judge import cases

    run = _checking_run("matrix_multiplication")
    plan = cases.input_plan(run.challenge, run.challenge.case("primes_medium"))
    base = 99

    def one_element(made):
        c = (made["a"] @ made["b"]).zero_()
        c.view(-1)[0] = float(made["a"].double().sum(0) @ made["b"].double().sum(1))
        return c
    checks = [_sums(run, plan, base, r, one_element) for r in range(6)]
    with monkeypatch.context() as patch:
        patch.setattr(timed, "SAMPLED_CALLS", 0)
        assert timed.stale_calls(run, plan, base, checks) == []  # the cheap checksum alone is met
    assert timed.stale_calls(run, plan, base, checks) == list(range(6))

    run = _checking_run("matrix_transpose")
    case = run.challenge.functional[-1]
    plan = cases.input_plan(run.challenge, case)
    name = next(iter(plan["inputs"]))
    copies = [_sums(run, plan, base, r, lambda made: made[name].clone()) for r in range(3)]
    assert timed.stale_calls(run, plan, base, copies) == [0, 1, 2]
    honest = [_sums(run, plan, base, r, lambda made: made[name].t().contiguous()) for r in range(3)]
    assert timed.stale_calls(run, plan, base, honest) == []

def test_an_honest_output_off_by_its_whole_tolerance_still_passes_both_sums():
    """The weighted sum's bound is its honest error's spread (judge.timed
    .WEIGHTED_SPREAD), not the worst case: an output off by nearly its whole
    elementwise tolerance everywhere, in random directions, still passes
    (its plain sum kept: matmul's cheap checksum is tighter, as a bias that
    size is no rounding); the plain sum alone in one element does not."""
    from pathlib import Path

    from judge import cases
    from judge.challenge import load
    from judge.grader import GradeOptions

    run = _Run(load("matrix_multiplication"), Path("unused.py"), "cpu",
               GradeOptions(challenge="matrix_multiplication", device="cpu", seed=5, policy="leetgpu"))
    atol, rtol = run.policy.allclose
    plan = cases.input_plan(run.challenge, run.challenge.case("primes_medium"))
    base = 4321
    signs = torch.Generator().manual_seed(11)

    def off_by():
        def output(made):
            c = (made["a"].double() @ made["b"].double())
            step = 0.98 * (atol + rtol * c.abs()) * (torch.randint(0, 2, c.shape, generator=signs) * 2 - 1)
            return (c + step - step.mean()).float()
        return output

    checks = [_sums(run, plan, base, r, off_by()) for r in range(16)]
    assert timed.stale_calls(run, plan, base, checks) == []

    def plain_only(made):
        c = (made["a"] @ made["b"]).zero_()
        c.view(-1)[0] = float(made["a"].double().sum(0) @ made["b"].double().sum(1))
        return c
    checks = [_sums(run, plan, base, r, plain_only) for r in range(16)]
    assert timed.stale_calls(run, plan, base, checks) == list(range(16))


def _report(reps: int, sets: int = 3) -> dict:
    """A timing report's shape as the worker's timer writes it."""
    return {"reps": reps, "sets": sets, "checks": [[r, r % sets, 0.0, 0.0] for r in range(reps)],
            "last_call": [max(range(i, reps, sets), default=None) for i in range(sets)]}


def test_a_report_must_account_for_every_timed_call():
    assert timed.unaccounted_calls(_report(10), 3) == ""
    assert timed.unaccounted_calls(_report(2), 3) == ""  # a set never used: no last call
    dropped = _report(500)
    dropped["checks"] = dropped["checks"][:10]  # only the honest calls' sums kept
    assert "500 calls timed, check sums for 10" in timed.unaccounted_calls(dropped, 3)
    shuffled = _report(6)
    shuffled["checks"][1], shuffled["checks"][2] = shuffled["checks"][2], shuffled["checks"][1]
    assert timed.unaccounted_calls(shuffled, 3)
    early = _report(9)
    early["last_call"] = [0, 1, 2]  # the final check pointed at the first calls
    assert "last call" in timed.unaccounted_calls(early, 3)
    assert "input sets" in timed.unaccounted_calls(_report(9, sets=1), 3)


def _time_with(monkeypatch, outcomes):
    """grader._time with time_performance giving `outcomes` in turn (a
    failure message, or None for a timing); returns (timing, results, attempts)."""
    from types import SimpleNamespace

    from judge import grader, timecheck, timed
    from judge.results import CaseResult
    attempts = []

    def fake_time(run, case, slot, attempt=0, before_go=None):
        attempts.append(attempt)
        message = outcomes[len(attempts) - 1]
        if message is None:
            return SimpleNamespace(median_ms=1.0), None
        status = "rejected" if message.startswith(("rule", timecheck.RULE)) else "wrong_answer"
        return None, CaseResult(name="performance (timed)", kind="performance", shape="", dims={}, status=status,
                                message=message)

    monkeypatch.setattr(timed, "time_performance", fake_time)
    monkeypatch.setattr(timed, "performance", lambda run, case, timing: "perf")
    run = SimpleNamespace(challenge=SimpleNamespace(performance="case"), phases={})
    results = []
    timing, _ = grader._time(run, SimpleNamespace(ensure=lambda: None), results)
    return timing, results, attempts


def test_a_clock_refusal_is_confirmed_by_a_second_timing(monkeypatch):
    from judge import timecheck
    refused = f"{timecheck.RULE}: the worker reported 90 calls of 9.5 ms, but the judge's own clock saw more"
    # Another process on the GPU once: the second timing, on fresh data, stands.
    timing, results, attempts = _time_with(monkeypatch, [refused, None])
    assert attempts == [0, 1] and timing is not None and results == []
    # A patched timer: refused twice, rejected.
    timing, results, attempts = _time_with(monkeypatch, [refused, refused])
    assert attempts == [0, 1] and timing is None and results[0].status == "rejected"
    # Any other failure is final at once.
    timing, results, attempts = _time_with(monkeypatch, ["rule: the timing report must account for every call"])
    assert attempts == [0] and results[0].status == "rejected"
    timing, results, attempts = _time_with(monkeypatch, ["the output of the timed calls is wrong"])
    assert attempts == [0] and results[0].status == "wrong_answer"


def test_each_tolerance_policy_scores_against_baselines_of_the_arithmetic_it_accepts():
    """Matrix multiplication's fp32 and leetgpu policies accept float32-
    accurate kernels only, so their scale is float32's (reference ieee to
    cuBLAS with TF32 off); against TF32's latencies (~9× faster on the H100)
    every accepted kernel had 0 of 60 performance points. The tf32 policy
    keeps TF32's scale; a challenge without its own per-policy scale keeps
    its [scoring] table."""
    from judge import challenge as challenges
    from judge.grader import scoring_for
    mm = challenges.load("matrix_multiplication")
    assert (scoring_for(mm).floor, scoring_for(mm).target) == ("reference_ieee", "cublas_fp32")
    assert (scoring_for(mm, "leetgpu").floor, scoring_for(mm, "leetgpu").target) == ("reference_ieee", "cublas_fp32")
    assert (scoring_for(mm, "tf32").floor, scoring_for(mm, "tf32").target) == ("reference_tf32", "cublas_tf32")
    baselines = {"reference_tf32": 1.12, "cublas_tf32": 1.02, "reference_ieee": 8.0, "cublas_fp32": 6.5}
    honest_fp32 = score(scoring_for(mm), True, 7.0, baselines)  # a float32 kernel between the two float32 baselines
    assert 0 < honest_fp32.performance < 60
    assert score(scoring_for(mm, "tf32"), True, 7.0, baselines).performance == 0
    relu = challenges.load("relu")
    assert scoring_for(relu, "leetgpu").floor == "torch" and scoring_for(relu, "leetgpu").floor_multiple == 4.0
