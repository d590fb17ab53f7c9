"""One GPU shared by several gradings (`judge batch --lanes-per-gpu N`):
cases side by side, timing alone.

Compiling a submission's kernels keeps the CPUs busy and the GPU idle, so
gradings on one GPU run their cases together; a latency, though, is only
measured with nothing else on the GPU. Lanes that share a GPU hold its
lock, two files in a folder of the judge's:

- a grading holds it *shared* while its workers run cases, and releases it
  only once every one of those workers is dead (a killed process's GPU
  work dies with its context): no submission process of it is left;
- it holds it *exclusively* to time (a fresh worker loads the file under
  the lock, is timed and killed before the lock is released) and to
  measure the judge's own baselines.

A grading waiting to time closes the gate: no grading starts its cases
until the timing has run, so a timing waits at most for the cases under
way. flock(2) locks die with their process, so a lane that crashes frees
the GPU.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path


class GpuLock:
    def __init__(self, folder: str | os.PathLike, gpu: str = "0"):
        self.folder = Path(folder)
        self.gate = self.folder / f"gpu{gpu}.gate"
        self.lock = self.folder / f"gpu{gpu}.lock"

    def _take(self, path: Path, mode: int) -> int:
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, mode)
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _free(fd: int) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def shared(self, waited: dict | None = None, name: str = "gpu_wait_cases"):
        """Cases: beside other gradings' cases, never beside a timing.
        `waited[name]`: seconds spent waiting for the lock."""
        clock = time.monotonic()
        gate = self._take(self.gate, fcntl.LOCK_EX)  # closed while a timing waits or runs
        try:
            held = self._take(self.lock, fcntl.LOCK_SH)
        finally:
            self._free(gate)
        _note(waited, name, clock)
        try:
            yield
        finally:
            self._free(held)

    @contextlib.contextmanager
    def exclusive(self, waited: dict | None = None, name: str = "gpu_wait_timing"):
        """Timing: alone on the GPU."""
        clock = time.monotonic()
        gate = self._take(self.gate, fcntl.LOCK_EX)
        try:
            held = self._take(self.lock, fcntl.LOCK_EX)
        except BaseException:
            self._free(gate)
            raise
        _note(waited, name, clock)
        try:
            yield
        finally:
            self._free(held)
            self._free(gate)


def _note(waited: dict | None, name: str, since: float) -> None:
    if waited is not None:
        waited[name] = round(time.monotonic() - since, 3)


def from_spec(spec: str | None) -> GpuLock | None:
    """GradeOptions.gpu_lock ("FOLDER" or "FOLDER#GPU") as a lock, or None."""
    if not spec:
        return None
    folder, _, gpu = spec.partition("#")
    return GpuLock(folder, gpu or "0")
