"""The CPU mode never turns the interpreter's slowness into a verdict: a
correct kernel with one program per output element (LeetGPU's starter
shape, accepted on the H100) is never timed out on CPU: the cases its
launches cannot finish in the interpreter budget are reported not run,
with why. A small case made too slow leaves a file not judged, never
accepted (tests/fixtures/stalls_cases_it_cannot_do.py)."""

from __future__ import annotations

from judge.grader import GradeOptions, grade
from judge.isolation import Limits
from tests.helpers import FIXTURES

STARTER_SHAPED = FIXTURES / "gpu" / "one_program_per_element.py"


def test_starter_shaped_kernel_is_not_timed_out(monkeypatch, tmp_path):
    """Accepted where only large cases were too slow; not judged, saying
    so, where a small one was (the budget here is short: both happen)."""
    monkeypatch.setenv("JUDGE_SECRET", "cpu-mode-tests")
    result = grade(STARTER_SHAPED, GradeOptions(device="cpu", seed=3, limits=Limits(interpreter_budget_s=4)))
    statuses = {c.name: c.status for c in result.cases}
    assert result.verdict.value in ("accepted", "internal_error"), result.message
    if result.verdict.value == "internal_error":
        assert result.message.startswith("not judged on CPU: the ") and "cases that ran passed" in result.message
    assert "wrong_answer" not in statuses.values()
    assert "time_limit_exceeded" not in statuses.values()
    slow = [c for c in result.cases if c.status == "skipped" and "programs" in c.message]
    assert slow, statuses  # some case was too slow for the interpreter, and says so
    assert all(c.message.startswith(("not run on CPU: ", "not judged on CPU: ")) and "GPU" in c.message for c in slow)
    assert statuses["basic_2x2"] == "accepted" and statuses["example"] == "accepted"


def test_a_kernel_that_never_finishes_still_times_out(monkeypatch):
    """The budget is estimated from finished programs: a program that never
    ends is a time limit, on CPU as on a GPU."""
    monkeypatch.setenv("JUDGE_SECRET", "cpu-mode-tests")
    result = grade(FIXTURES / "kernel_hang.py",
                   GradeOptions(device="cpu", seed=3, limits=Limits(case_timeout_s=5, interpreter_budget_s=2)))
    assert result.verdict.value == "time_limit_exceeded", result.message
