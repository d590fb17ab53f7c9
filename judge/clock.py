"""The clock a grading's deadlines run on (trusted side).

A grading that shares its GPU with others (judge batch --lanes-per-gpu)
may have its workers paused while another grading times (judge.gpu_lock,
judge.gpu_pause). That time is not the submission's, so every deadline of
a grading (a request's, a case's, the whole file's) is kept on this clock:
monotonic seconds less the seconds this process's workers spent paused.
It stands still during a pause. Durations reported to people (phase
seconds, a case's seconds) stay on the wall clock.
"""

from __future__ import annotations

import contextlib
import threading
import time

_guard = threading.Lock()
_paused_s = 0.0  # finished pauses
_since: float | None = None  # start of the pause under way


def now() -> float:
    with _guard:
        if _since is not None:
            return _since - _paused_s
        return time.monotonic() - _paused_s


def paused_seconds() -> float:
    """Seconds paused so far, the pause under way included."""
    with _guard:
        return _paused_s + (time.monotonic() - _since if _since is not None else 0.0)


@contextlib.contextmanager
def paused():
    """The clock stands still inside (pauses do not nest: one pauser per process)."""
    global _since, _paused_s
    with _guard:
        _since = time.monotonic()
    try:
        yield
    finally:
        with _guard:
            _paused_s += time.monotonic() - _since
            _since = None
