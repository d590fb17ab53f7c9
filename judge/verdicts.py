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
