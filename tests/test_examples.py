"""Every example submission gets the verdict declared in its expected.toml
(submissions/ and each challenge's examples/), on the CPU under the
interpreter (always) and on the GPU (when there is one); on the CPU the same
grading also gives `judge check`'s answer, in LeetGPU's terms and ours."""

from __future__ import annotations

import pytest

from judge import challenge as challenges
from judge import check as checking
from judge import goldens
from judge.grader import GradeOptions, grade
from judge.isolation import Limits
from tests.helpers import HAS_CUDA, ROOT

GOLDENS = {g.relative(): g for g in goldens.examples()}
# Short limits keep the endless-loop example quick; every honest example
# finishes each case in a few seconds even under the interpreter.
LIMITS = Limits(case_timeout_s=30, total_timeout_s=600)


def test_every_example_file_is_declared():
    assert goldens.undeclared(ROOT / "submissions") == set()
    for name in challenges.available():
        folder = challenges.load(name).examples()
        if folder is not None:
            assert goldens.undeclared(folder) == set(), name


def test_every_challenge_has_correct_and_wrong_examples():
    for name in challenges.available():
        verdicts = [g.verdict for g in GOLDENS.values() if g.challenge == name]
        assert verdicts.count("accepted") >= 1, name
        assert sum(v != "accepted" for v in verdicts) >= 2, name


def _check(path: str, device: str):
    golden = GOLDENS[path]
    wanted = golden.verdict
    leet, ours = checking.policies(challenges.load(golden.challenge))
    result = grade(golden.path, GradeOptions(challenge=golden.challenge, device=device, seed=12345, limits=LIMITS,
                                             also_policies=[leet] if leet != ours else [],
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


def _check_answer(path: str, result) -> None:
    """`judge check`'s answer from the same grading (LeetGPU's policy was
    compared alongside): ours is the expected verdict, LeetGPU's is given in
    its terms. (On the H100, every example: bench/results/check_examples_h100.md.)"""
    golden = GOLDENS[path]
    challenge = challenges.load(golden.challenge)
    leet, _ = checking.policies(challenge)
    outcome = checking.answer(challenge, golden.path, checking.seen_under(result, leet), "h100")
    assert outcome.ours.verdict == golden.verdict, outcome.ours.text
    assert outcome.leetgpu.verdict in checking.LEETGPU_VERDICTS, outcome.leetgpu
    assert outcome.leetgpu.text.startswith("LeetGPU (NVIDIA H100"), outcome.leetgpu.text
    if golden.verdict != "accepted" and golden.verdict != "wrong_answer":
        # A crash, a time-out, a rule: LeetGPU's run stops there too.
        assert outcome.leetgpu.verdict == golden.verdict or outcome.leetgpu.verdict == "rejected", outcome.leetgpu


@pytest.mark.parametrize("path", sorted(GOLDENS))
def test_example_verdict_on_cpu(path):
    result = _check(path, "cpu")
    assert result.device == "cpu" and result.latency_ms is None
    if GOLDENS[path].verdict == "accepted":
        assert "GPU" in result.timing_note
    _check_answer(path, result)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("path", sorted(GOLDENS))
def test_example_verdict_on_gpu(path):
    result = _check(path, "cuda")
    assert not any(c.status == "skipped" for c in result.cases)
    if GOLDENS[path].verdict == "accepted":
        assert result.latency_ms is not None and result.latency_ms > 0
