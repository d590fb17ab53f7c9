"""The verdict vocabulary: one enum, its display order and colours, and how
case verdicts combine into a submission verdict."""

from __future__ import annotations

from enum import Enum
from typing import Iterable


class Verdict(str, Enum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    COMPILE_ERROR = "compile_error"
    INVALID_SUBMISSION = "invalid_submission"
    REJECTED = "rejected"
    INTERNAL_ERROR = "internal_error"

    @property
    def colour(self) -> str:
        return _COLOURS[self]

    @property
    def short(self) -> str:
        """Two-or-three letter code, as judges traditionally print them."""
        return _SHORT[self]

    @property
    def describe(self) -> str:
        return _DESCRIBE[self]


_COLOURS = {
    Verdict.ACCEPTED: "green",
    Verdict.WRONG_ANSWER: "red",
    Verdict.RUNTIME_ERROR: "magenta",
    Verdict.TIME_LIMIT_EXCEEDED: "yellow",
    Verdict.MEMORY_LIMIT_EXCEEDED: "yellow",
    Verdict.COMPILE_ERROR: "blue",
    Verdict.INVALID_SUBMISSION: "blue",
    Verdict.REJECTED: "red",
    Verdict.INTERNAL_ERROR: "bold red",
}

_SHORT = {
    Verdict.ACCEPTED: "AC",
    Verdict.WRONG_ANSWER: "WA",
    Verdict.RUNTIME_ERROR: "RE",
    Verdict.TIME_LIMIT_EXCEEDED: "TLE",
    Verdict.MEMORY_LIMIT_EXCEEDED: "MLE",
    Verdict.COMPILE_ERROR: "CE",
    Verdict.INVALID_SUBMISSION: "IS",
    Verdict.REJECTED: "RJ",
    Verdict.INTERNAL_ERROR: "IE",
}

_DESCRIBE = {
    Verdict.ACCEPTED: "every case passed",
    Verdict.WRONG_ANSWER: "an output was outside the tolerance",
    Verdict.RUNTIME_ERROR: "the submission crashed or exited while running",
    Verdict.TIME_LIMIT_EXCEEDED: "the submission ran past its time limit and was killed",
    Verdict.MEMORY_LIMIT_EXCEEDED: "the submission ran out of memory",
    Verdict.COMPILE_ERROR: "the file or one of its Triton kernels failed to compile or load",
    Verdict.INVALID_SUBMISSION: "the file does not define solve with the required signature",
    Verdict.REJECTED: "the submission broke a rule of the challenge",
    Verdict.INTERNAL_ERROR: "the judge itself failed; this is not the submission's fault",
}


def overall(case_verdicts: Iterable[Verdict | None]) -> Verdict:
    """The submission's verdict is that of its first failing case.

    ``None`` entries (cases not run, e.g. skipped on CPU) are ignored; a
    submission with no case run at all is an internal error of the caller.
    """
    ran = [v for v in case_verdicts if v is not None]
    if not ran:
        return Verdict.INTERNAL_ERROR
    for verdict in ran:
        if verdict is not Verdict.ACCEPTED:
            return verdict
    return Verdict.ACCEPTED


# How a case the file's own launch made too slow for the interpreter is
# reported: skipped. A large case (Challenge.large_for_cpu), or one within
# ten budgets of finishing, is simply not run, as one beyond the caps is; a
# small one far beyond (judge.casework.Run.stalled) leaves the file not
# judged (never `accepted`: submission_verdict), since the file chooses its
# grid and its programs' work, and one that stalled every case but the
# example was accepted on it alone (tests/fixtures/stalls_cases_it_cannot_do.py).
TOO_SLOW_ON_CPU = "not run on CPU"
NOT_JUDGED_ON_CPU = "not judged on CPU"


def _too_slow_on_cpu(result, small_only: bool = False) -> bool:
    """Skipped because the file's own launch could not finish under the
    interpreter (judge.worker.launch_watch), not by the judge's size check;
    `small_only`: a case that is not large for the interpreter (judge.casework)."""
    return result.status == "skipped" and (result.message.startswith(NOT_JUDGED_ON_CPU) or (
        not small_only and result.message.startswith(TOO_SLOW_ON_CPU)))


def stalled_on_cpu(result) -> bool:
    """A small case the file's own launch made too slow for the interpreter:
    while one is, the file is not judged on CPU (submission_verdict)."""
    return _too_slow_on_cpu(result, small_only=True)


def submission_verdict(results: list) -> Verdict:
    """The first failing case decides (a file that did not load fails the first case).

    Never `accepted` with a small case the file's own launch made too slow
    for the interpreter: the file chooses its grid and its programs' work,
    and one that stalled every case it could not do was accepted on the
    rest (a GPU runs such a case, and finds it wrong). Nothing judged it:
    not judged."""
    ran = [Verdict(r.status) for r in results if r.status not in ("skipped", "not_run")]
    verdict = overall(ran) if ran else Verdict.INTERNAL_ERROR
    if verdict is Verdict.ACCEPTED and any(stalled_on_cpu(r) for r in results):
        return Verdict.INTERNAL_ERROR
    return verdict


def summary(verdict: Verdict, results: list, load_message: str) -> str:
    if load_message and verdict is not Verdict.ACCEPTED:
        return load_message
    if verdict is Verdict.ACCEPTED:
        ran = sum(r.status == "accepted" for r in results)
        skipped = sum(r.status == "skipped" for r in results)
        extra = f", {skipped} skipped" if skipped else ""
        return f"all {ran} cases run passed{extra}"
    first = next((r for r in results if r.status == verdict.value), None)
    if first is None:
        slow = next((r for r in results if _too_slow_on_cpu(r, small_only=True)), None) \
            or next((r for r in results if _too_slow_on_cpu(r)), None)
        if verdict is Verdict.INTERNAL_ERROR and slow is not None:
            # The interpreter's speed: neither the file's fault nor a verdict on it.
            passed = sum(r.status == "accepted" for r in results)
            if not passed:
                return f"not judged: no case could run under Triton's interpreter (case {slow.name}: {slow.message})"
            return (f"not judged on CPU: the {passed} cases that ran passed, but case {slow.name} ({slow.shape}) "
                    f"could not finish under Triton's interpreter, so nothing judged it "
                    f"({slow.message.split(': ', 1)[-1]})")
        return verdict.describe
    return f"case {first.name} ({first.shape}): {first.message}"
