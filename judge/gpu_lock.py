"""One GPU shared by several gradings (`judge batch --lanes-per-gpu N`, or
`judge submit` and `judge check` started side by side: --gpu-lock auto):
cases side by side, timing alone. One grading per process: a grading
pauses and stops its own process's children.

Compiling a submission's kernels keeps the CPUs busy and the GPU idle, so
gradings on one GPU run their cases together; a latency, though, is only
measured with nothing else on the GPU. Lanes that share a GPU hold its
lock, two files in a folder of the judge's:

- a grading holds it *shared* while its workers run cases, and releases it
  only once every one of those workers is dead (a killed process's GPU
  work dies with its context): no submission process of it is left;
- it holds it *exclusively* to time and to measure the judge's own
  baselines. The worker timed is its first case worker, held paused
  (judge.gpu_pause.hold: GPU work drained, CUDA calls blocked, stopped)
  from the end of the cases until the lock is held, or, where it cannot
  be paused, a fresh worker that loads the file under the lock; it is
  killed before the lock is released.

A grading waiting to time closes the gate: no grading starts its cases
until the timing has run. It also raises a flag (a third file, held
shared while it waits): a grading whose cases are under way and that
knows how to pause its processes (judge.gpu_pause) steps aside. It lets
its own checks on the GPU finish, pauses its workers (their queued GPU
work drained, then stopped), releases the lock, and takes it back once
the timing is over, through the gate like any grading; then it resumes
them. Its deadlines stand still meanwhile (judge.clock). A grading that
cannot pause (a kernel of its never ends) keeps the lock, and the timing
waits for its cases to end, as it would without pausing.

The judge's own processes that hold no lock are kept still as well, with
SIGSTOP alone (only judge code has run in them, no submission's): a
grading's workers started ahead (importing torch, warming up on the GPU)
while the grading waits at the closed gate, and, while a grading times,
its other processes (the next file's workers a batch lane starts early),
all but the worker that is timed and the judge's stand-in that measures
the timer.

flock(2) locks die with their process, so a lane that crashes frees the
GPU, and a timing that crashes lets the paused gradings go on.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from . import clock, cuda_visible


class GpuLock:
    def __init__(self, folder: str | os.PathLike, gpu: str = "0"):
        self.folder = Path(folder)
        self.gate = self.folder / f"gpu{gpu}.gate"
        self.lock = self.folder / f"gpu{gpu}.lock"
        self.want = self.folder / f"gpu{gpu}.want"  # held shared by a timing that waits

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

    free = _free  # for a descriptor try_shared() gave that is not handed to shared()

    def try_shared(self) -> int | None:
        """The lock held shared now, or None where a timing waits or runs (the
        gate is closed). A grading that holds it this early lets its workers
        load the file while it sets up (judge.grader); shared(held=...) then
        takes it over."""
        try:
            gate = self._take(self.gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        try:
            return self._take(self.lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        finally:
            self._free(gate)

    @contextlib.contextmanager
    def shared(self, waited: dict | None = None, name: str = "gpu_wait_cases",
               pauser: Callable | None = None, quiet: tuple = (), still: Callable | None = None,
               held: int | None = None, notify: Callable[[bool], None] | None = None):
        """Cases: beside other gradings' cases, never beside a timing.
        `waited[name]`: seconds spent waiting for the lock. `pauser`: makes
        a judge.gpu_pause.Pause of this process's workers; with it the
        grading steps aside for a timing that waits, after taking the
        `quiet` locks (held by the judge's own GPU work), and
        `waited["gpu_paused"]` says for how long in all. `still(spare)`:
        makes a SIGSTOP-only judge.gpu_pause.Pause of this process's own
        processes, which keeps them stopped while a timing holds the gate.
        `held`: the lock as try_shared() gave it, taken over (and freed).
        `notify(True)` as a step aside starts, `notify(False)` as it ends."""
        clock_start = time.monotonic()
        if held is None:
            waiting = _Still(still)
            try:
                held = self._enter_shared(waiting.stop if waiting.active else None)
            finally:
                waiting.resume()
        _note(waited, name, clock_start)
        aside = _StepAside(self, held, pauser, quiet, notify) if pauser is not None else None
        if aside is not None:
            aside.start()
        try:
            yield
        finally:
            if aside is not None:
                held = aside.finish()  # holding the lock again, its processes resumed
                if waited is not None and aside.paused_s:
                    waited["gpu_paused"] = round(aside.paused_s, 3)
            self._free(held)

    @contextlib.contextmanager
    def exclusive(self, waited: dict | None = None, name: str = "gpu_wait_timing",
                  still: Callable | None = None, spare: Callable = tuple):
        """Timing: alone on the GPU. With `still` (see shared), this
        process's own processes are stopped while it waits at the gate, and
        while it holds the GPU all but the pids `spare()` names (the worker
        timed, the timer's stand-in) and what is below them."""
        clock_start = time.monotonic()
        waiting = _Still(still)
        try:
            gate = self._take_gate(waiting.stop if waiting.active else None)
        finally:
            waiting.resume()
        try:
            flag = self._take(self.want, fcntl.LOCK_SH)  # gradings under way: step aside
            try:
                held = self._take(self.lock, fcntl.LOCK_EX)
            finally:
                self._free(flag)
        except BaseException:
            self._free(gate)
            raise
        _note(waited, name, clock_start)
        own = _Still(still, spare=[pid for pid in spare() if pid])
        try:
            own.stop()
            yield
        finally:
            own.resume()
            self._free(held)
            self._free(gate)

    def _take_gate(self, while_waiting: Callable | None = None) -> int:
        """The gate (closed while a timing waits or runs). With
        `while_waiting`, polled, calling it between tries; else blocking."""
        if while_waiting is None:
            return self._take(self.gate, fcntl.LOCK_EX)
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.gate, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    while_waiting()
                    time.sleep(_StepAside.POLL_S)
        except BaseException:
            os.close(fd)
            raise

    def _enter_shared(self, while_waiting: Callable | None = None) -> int:
        """The lock held shared, taken through the gate."""
        gate = self._take_gate(while_waiting)
        try:
            return self._take(self.lock, fcntl.LOCK_SH)
        finally:
            self._free(gate)


class _Still:
    """This process's own processes stopped (SIGSTOP alone: only judge code
    has run in them, no GPU work of theirs is worth draining) and continued
    by resume(). `still(spare)`: makes that judge.gpu_pause.Pause, or None
    to do nothing."""

    def __init__(self, still: Callable | None, spare=()):
        self.active = still is not None
        self._make = still
        self.spare = frozenset(spare)
        self._pause = None

    def stop(self) -> None:
        if not self.active:
            return
        if self._pause is None:
            self._pause = self._make(self.spare)
        try:
            self._pause.sweep()
        except OSError:
            pass

    def resume(self) -> None:
        if self._pause is not None:
            self._pause.resume()
            self._pause = None


class _StepAside(threading.Thread):
    """Watches for a timing that waits, and steps the grading aside for it
    (see the module's docstring). finish() ends the watch and returns the
    lock's descriptor, held shared again."""

    POLL_S = 0.02
    RETRY_S = (1.0, 2.0, 5.0)  # after a pause that failed: try again later, less often

    def __init__(self, lock: GpuLock, held: int, pauser: Callable, quiet: tuple,
                 notify: Callable[[bool], None] | None = None):
        super().__init__(name="gpu-step-aside", daemon=True)
        self.lock, self.held, self.pauser, self.quiet = lock, held, pauser, quiet
        self.notify = notify or (lambda aside: None)
        self.closing = threading.Event()
        self.paused_s = 0.0
        self.failures: list[str] = []
        self._retry_at = 0.0
        self._flag = os.open(lock.want, os.O_RDWR | os.O_CREAT, 0o600)

    def run(self) -> None:
        while not self.closing.wait(self.POLL_S):
            try:
                if time.monotonic() >= self._retry_at and self._timing_waits():
                    self._step_aside()
            except Exception as exc:  # noqa: BLE001 - the watch goes on; the grading keeps the lock
                self.failures.append(f"{type(exc).__name__}: {exc}")
                self._retry_at = time.monotonic() + self.RETRY_S[-1]

    def finish(self) -> int:
        self.closing.set()
        self.join()
        os.close(self._flag)
        return self.held

    def _timing_waits(self) -> bool:
        try:
            fcntl.flock(self._flag, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._flag, fcntl.LOCK_UN)
        return False

    def _step_aside(self) -> None:
        with contextlib.ExitStack() as stack:
            for lock in self.quiet:  # the judge's own GPU work (checks, copies) finishes first
                stack.enter_context(lock)
            pause = self.pauser()
            started = time.monotonic()
            with clock.paused():
                try:
                    if not pause.stop():
                        self.failures.append(pause.failure or "pause failed")
                        self._retry_at = time.monotonic() + self.RETRY_S[min(len(self.failures),
                                                                             len(self.RETRY_S)) - 1]
                        return
                    self.notify(True)
                    try:
                        self.lock._free(self.held)
                    finally:  # whatever happened, the grading holds the lock again before it resumes
                        self.held = self._take_back(pause)
                finally:
                    pause.resume()
                    self.paused_s += time.monotonic() - started
                    self.notify(False)

    def _take_back(self, pause) -> int:
        """The lock, shared, once no timing holds the gate; meanwhile every
        process this grading starts is paused as it appears."""
        def sweep() -> None:
            try:
                pause.sweep()
            except Exception:  # noqa: BLE001 - /proc moved under us: the next sweep sees it
                pass

        while True:
            try:
                return self.lock._enter_shared(sweep)
            except OSError:
                sweep()
                time.sleep(self.POLL_S)


def _note(waited: dict | None, name: str, since: float) -> None:
    if waited is not None:
        waited[name] = round(time.monotonic() - since, 3)


# `judge submit` and `judge check` on a GPU (--gpu-lock auto): the lock files
# of this user's gradings on this machine (~/.cache/tritonjudge/gpu-locks/HOST),
# unless JUDGE_GPU_LOCKS names a folder.
FOLDER_ENV = "JUDGE_GPU_LOCKS"


def default_spec(folder: str | os.PathLike | None = None) -> str | None:
    """The lock of the GPU a grading started here would use (torch's device
    0: the first of CUDA_VISIBLE_DEVICES, else GPU 0), in `folder`, else in
    this user's folder of locks: "FOLDER#GPU". None where no such folder of
    this user's can be made (the grading then goes without)."""
    place = _usable_folder(folder)
    if place is None:
        return None
    return f"{place}#{gpu_name(cuda_visible.entry(0) or '')}"


def _usable_folder(folder: str | os.PathLike | None) -> Path | None:
    """`folder`, else the first of this user's places for locks, made if
    needed: a folder this user owns and may write to, or None."""
    for place in [Path(folder)] if folder is not None else _folders():
        try:
            place.mkdir(parents=True, exist_ok=True, mode=0o700)
            if place.stat().st_uid == os.getuid() and os.access(place, os.W_OK):
                return place.resolve()
        except OSError:
            continue
    return None


def gpu_name(visible: str) -> str:
    """A GPU's name in its lock files' names, from its CUDA_VISIBLE_DEVICES
    entry (an index or a UUID): a file name, never a path."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", visible.strip()) or "0"


def default_folder() -> Path | None:
    """This user's folder of GPU locks (see default_spec), or None."""
    return _usable_folder(None)


def folders(spec: str | None) -> list[str]:
    """The folders of GPU locks a grading's workers must not see (the one of
    `spec`, and this user's): a submission that held another grading's lock
    file (flock needs only a read) could stall that grading past its limit."""
    ours = from_spec(spec)
    return sorted({str(folder) for folder in (ours.folder if ours else None, default_folder()) if folder})


def _folders() -> list[Path]:
    if os.environ.get(FOLDER_ENV):
        return [Path(os.environ[FOLDER_ENV])]
    found = []
    cache = os.environ.get("XDG_CACHE_HOME")
    try:
        found.append(Path(cache) if cache else Path.home() / ".cache")
    except RuntimeError:  # no home directory
        pass
    # One folder per machine: a home shared by the machines of a cluster must
    # not make the GPU 0 of one wait for the GPU 0 of another.
    host = gpu_name(socket.gethostname()) or "localhost"
    found = [base / "tritonjudge" / "gpu-locks" / host for base in found]
    # A folder of this user's in the temporary directory (checked as ours above).
    return found + [Path(tempfile.gettempdir()) / f"tritonjudge-gpu-locks-{os.getuid()}"]


def from_spec(spec: str | None) -> GpuLock | None:
    """GradeOptions.gpu_lock ("FOLDER" or "FOLDER#GPU") as a lock, or None."""
    if not spec:
        return None
    folder, _, gpu = spec.partition("#")
    return GpuLock(folder, gpu or "0")
