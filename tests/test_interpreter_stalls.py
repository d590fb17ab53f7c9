"""When a case too slow for the interpreter leaves the file not judged
(judge.interpreter_stalls), on made-up replies and results."""

from __future__ import annotations

from judge.interpreter_stalls import recheck, stalled
from judge.results import CaseResult
from judge.verdicts import NOT_JUDGED_ON_CPU, TOO_SLOW_ON_CPU


def _skipped(name: str) -> CaseResult:
    return CaseResult(name=name, kind="functional", shape="x", dims={}, status="skipped",
                      message=f"{TOO_SLOW_ON_CPU}: this launch has many programs")


def test_a_correct_kernels_pace_is_only_not_run():
    # one program per element at ~1 ms: 65521 elements need ~65 s, over a 20 s budget
    assert stalled({"estimate_s": 65.0, "programs": 65521}, 65521, 20.0, large=True) is None
    assert stalled({"estimate_s": 25.0, "programs": 8192}, 8192, 20.0, large=False) is None


def test_spinning_programs_stall_whatever_the_budget():
    why = stalled({"estimate_s": 60.0, "programs": 4096}, 7, 20.0, large=False)
    assert why and "work measure is 7" in why  # within ten budgets, but ~9 s per element


def test_a_launchs_fixed_cost_on_a_tiny_case_is_only_not_run():
    # a one-element case whose launch took 0.1 s on a loaded machine, its budget spent
    assert stalled({"estimate_s": 0.1, "programs": 1}, 1, 6.0, large=False) is None
    assert stalled({"estimate_s": 1.5, "programs": 1}, 1, 6.0, large=False)


def test_idle_grids_and_small_cases_far_beyond_the_budget_stall():
    assert "programs" in stalled({"estimate_s": 1.0, "programs": 2 ** 31 - 1}, 100, 20.0, large=False)
    assert stalled({"estimate_s": 250.0, "programs": 1 << 16}, 1 << 16, 20.0, large=False)
    assert stalled({"estimate_s": 250.0, "programs": 1 << 16}, 1 << 16, 20.0, large=True) is None


def test_a_case_far_slower_than_a_comparable_one_that_ran_is_not_judged():
    results = [_skipped("big"), _skipped("huge")]
    slow = {"big": (186.0, 65521), "huge": (5570.0, 2_000_000)}
    ran = {"tiny": (0.05, 1), "mid": (0.19, 4097)}  # the vectorised path: ~46 µs per element
    recheck(results, slow, ran)
    assert results[0].message.startswith(NOT_JUDGED_ON_CPU) and "case mid" in results[0].message
    # nothing that ran is within 1/16 of its work: no comparison, still only not run
    assert results[1].message.startswith(TOO_SLOW_ON_CPU)


def test_a_steady_pace_is_not_judged_against_itself():
    results = [_skipped("big")]
    recheck(results, {"big": (65.0, 65521)}, {"mid": (4.2, 4097), "tiny": (0.3, 1)})
    assert results[0].message.startswith(TOO_SLOW_ON_CPU)
