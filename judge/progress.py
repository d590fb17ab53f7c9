"""Is a GPU worker that has not answered yet still getting somewhere?
(trusted side: judge.casework asks, judge.isolation waits).

A case may take a minute (Limits.case_timeout_s) because its first call
compiles: each new specialization of a kernel, every config of an
autotuner, under a batch's load. A solve that loops in Python, or waits on
nothing, shows no such sign, and holding it the whole minute is what set
a class batch's wall (bench/results/cost_hold_h100.md). So a case is also
stopped once it has shown no progress for Limits.idle_timeout_s, where
progress is seen from outside the worker:
- a `ptxas` process below it (Triton's assembler, run for each kernel it
  compiles), or
- an entry added to its Triton cache folder (each compiled kernel adds one),
  or the folder's time touched (the worker's autotuner benchmark does it
  before each config it times: judge.worker.autotune).

A submission that fakes progress (it cannot start processes; it could
write into or touch its cache folder) gains no more than the case's own
limit, which stands as before: this limit only ends hopeless cases sooner.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import clock, procfs
from .gpu_pause import descendants

POLL_S = 0.5  # how often the signs are read while a request waits


class CompileWatch:
    """The deadline of a request that may compile: `idle_s` after the last
    sign of progress (from when it was asked)."""

    def __init__(self, cache: Path | None, pid: int | None, idle_s: float):
        self.cache, self.pid, self.idle_s = cache, pid, idle_s
        self.last_progress = clock.now()
        self._read_at = self.last_progress
        self._cache_state = self._cache_signature()

    def deadline(self) -> float:
        """On the judge's clock (paused time does not count)."""
        now = clock.now()
        if now - self._read_at >= POLL_S:
            self._read_at = now
            state = self._cache_signature()
            if state != self._cache_state or self._assembling():
                self.last_progress = now
            self._cache_state = state
        return self.last_progress + self.idle_s

    def describe(self) -> str:
        return (f"no sign of progress for {self.idle_s:.0f} s (no answer, no kernel compiling): "
                f"solve hangs or loops; the worker was killed")

    def _cache_signature(self) -> tuple:
        if self.cache is None:
            return ()
        try:
            st = os.stat(self.cache)
            return (st.st_mtime_ns, st.st_nlink, sum(1 for _ in os.scandir(self.cache)))
        except OSError:
            return ()

    def _assembling(self) -> bool:
        """A ptxas process anywhere below the worker."""
        if self.pid is None:
            return False
        return any(procfs.command(pid).startswith("ptxas") for pid in descendants(self.pid))

