"""Every example submission gets the verdict declared in submissions/expected.toml,
on the CPU under the interpreter (always) and on the GPU (when there is one)."""

from __future__ import annotations

import pytest

from judge.grader import GradeOptions, grade
from judge.isolation import Limits
from tests.helpers import HAS_CUDA, SUBMISSIONS, expected_verdicts

EXPECTED = expected_verdicts()
# Short limits keep the endless-loop example quick; every honest example
# finishes each case in a few seconds even under the interpreter.
LIMITS = Limits(case_timeout_s=30, total_timeout_s=600)


def test_every_example_file_is_declared():
    files = {p.relative_to(SUBMISSIONS).as_posix() for p in SUBMISSIONS.rglob("*.py")}
    assert files == set(EXPECTED)


def _check(path: str, device: str):
    wanted = EXPECTED[path]
    result = grade(SUBMISSIONS / path, GradeOptions(device=device, seed=12345, limits=LIMITS,
                                                   stop_on_wrong_answer=wanted == "wrong_answer"))
    assert result.verdict.value == wanted, (result.message, [(c.name, c.status, c.message) for c in result.cases])
    ran = [c for c in result.cases if c.status not in ("skipped", "not_run")]
    if wanted == "accepted":
        assert ran and all(c.status == "accepted" for c in ran)
    else:
        # The verdict is that of the first failing case, and it says why.
        first = next(c for c in result.cases if c.status not in ("accepted", "skipped", "not_run"))
        assert first.status == wanted and first.message
    return result


@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_example_verdict_on_cpu(path):
    result = _check(path, "cpu")
    assert result.device == "cpu" and result.latency_ms is None
    if EXPECTED[path] == "accepted":
        assert any(c.status == "skipped" for c in result.cases)  # the big cases need a GPU
        assert "GPU" in result.timing_note


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("path", sorted(EXPECTED))
def test_example_verdict_on_gpu(path):
    result = _check(path, "cuda")
    assert not any(c.status == "skipped" for c in result.cases)
    if EXPECTED[path] == "accepted":
        assert result.latency_ms is not None and result.latency_ms > 0
