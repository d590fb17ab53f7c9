"""Pausing a grading's processes so that another grading can time alone on
their GPU (trusted side; judge.gpu_lock decides when).

A process is paused in two steps. The driver's checkpoint lock
(cuCheckpointProcessLock, CUDA 12.8+ drivers) waits for the GPU work the
process has queued to finish and blocks its further CUDA calls; SIGSTOP
then stops it on the CPU as well. A process without CUDA yet is only
stopped: it cannot start GPU work while stopped. A grading that steps
aside for another's timing is not stopped where the host has CPUs to
spare (judge.cpu_share): its locked processes, and the compiler tools
below them, run on off the CPUs the timing keeps, so its compiles go on. Children are found by
walking /proc from the judge's own pid, and the walk is repeated until no
new process shows up (a stopped process cannot fork), so a process a
submission forks, or one whose parent died (they reparent to the judge,
judge.reaper), is paused too.

A process whose queued work does not finish within the lock's timeout (a
kernel that never ends) cannot be paused: the whole pause is undone and
the caller keeps the GPU to itself, as if pausing did not exist.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

from . import cpu_share, procfs

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_INITIALIZED = 3  # the target has no CUDA context: stopping it is enough
LOCK_TIMEOUT_MS = 2000  # far above any honest case's kernel, which the lock waits for


class _LockArgs(ctypes.Structure):
    _fields_ = [("timeout_ms", ctypes.c_uint), ("reserved0", ctypes.c_uint), ("reserved1", ctypes.c_uint64 * 7)]


class _UnlockArgs(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_uint64 * 8)]


class Driver:
    """The driver's checkpoint lock through ctypes."""

    def __init__(self, lib):
        self._lock = lib.cuCheckpointProcessLock
        self._unlock = lib.cuCheckpointProcessUnlock
        for fn, args in ((self._lock, [ctypes.c_int, ctypes.POINTER(_LockArgs)]),
                         (self._unlock, [ctypes.c_int, ctypes.POINTER(_UnlockArgs)])):
            fn.argtypes, fn.restype = args, ctypes.c_int

    def lock(self, pid: int, timeout_ms: int = LOCK_TIMEOUT_MS) -> int:
        args = _LockArgs(timeout_ms=timeout_ms)
        return int(self._lock(pid, ctypes.byref(args)))

    def unlock(self, pid: int) -> int:
        return int(self._unlock(pid, ctypes.byref(_UnlockArgs())))


_driver: list = []  # [Driver | None] once looked up
_driver_guard = threading.Lock()


def driver() -> Driver | None:
    """The checkpoint lock of this host's driver, or None (no NVIDIA driver,
    or one too old to have it)."""
    with _driver_guard:
        if not _driver:
            found = None
            try:
                lib = ctypes.CDLL("libcuda.so.1")
                if lib.cuInit(0) == CUDA_SUCCESS:
                    found = Driver(lib)
            except (OSError, AttributeError):
                found = None
            _driver.append(found)
        return _driver[0]


def pauser(spare=tuple):
    """A maker of Pause for this process's children but those `spare()`
    names (a worker already held: see hold), or None where the driver has
    no checkpoint lock (a grading then never steps aside). Its processes
    keep the CPUs judge.cpu_share leaves them, where it leaves any."""
    found = driver()
    if found is None:
        return None
    elsewhere = cpu_share.elsewhere()
    return lambda: Pause(driver=found, spare=frozenset(spare()), elsewhere=elsewhere)


def hold(pid: int) -> "Pause | None":
    """Process `pid` and everything below it paused, their queued GPU work
    drained and further CUDA calls blocked (a grading's worker kept for its
    timing while another grading times: judge.grader); None where that
    cannot be done (no checkpoint lock here, or a kernel of theirs does not
    end): the caller kills them instead. A process held is left out of any
    other pause of its grading (pauser's `spare`): the checkpoint lock of a
    process already locked and stopped does not return."""
    found = driver()
    if found is None:
        return None
    pause = Pause(root=pid, driver=found, with_root=True)
    return pause if pause.stop() else None


def still(spare=()) -> "Pause":
    """A SIGSTOP-only Pause of this process's children but `spare` (judge.gpu_lock)."""
    return Pause(driver=None, spare=spare)


def descendants(root: int, skip=frozenset()) -> list[int]:
    """Every live process below `root` (children first), from /proc; the
    processes in `skip` and everything below them left out."""
    children: dict[int, list[int]] = {}
    for pid in procfs.pids():
        fields = procfs.stat_fields(pid)  # None: gone meanwhile
        if fields is None or len(fields) < 2 or fields[0] in ("Z", "X"):
            continue
        children.setdefault(int(fields[1]), []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in skip:
                found.append(child)
                todo.append(child)
    return found


class Pause:
    """The processes below `root` (and `root` itself, with `with_root`),
    paused by stop() and resumed by resume(). `driver`: the checkpoint
    lock, or None where no process can hold GPU work (a host without a GPU:
    tests). `elsewhere`: CPUs on which a locked process (or a compiler tool
    without CUDA) runs on instead of being stopped (judge.cpu_share); empty:
    every process is stopped."""

    def __init__(self, root: int | None = None, driver: Driver | None = None,
                 lock_timeout_ms: int = LOCK_TIMEOUT_MS, spare=frozenset(), with_root: bool = False,
                 elsewhere=frozenset()):
        self.root = os.getpid() if root is None else root
        self.with_root = with_root
        self.driver = driver
        self.spare = frozenset(spare)  # processes left running, with what is below them
        self.lock_timeout_ms = lock_timeout_ms
        self.stopped: list[int] = []  # SIGSTOP sent, in order
        self.locked: list[int] = []  # holding the driver's checkpoint lock
        self.confined = cpu_share.Confinement(elsewhere) if elsewhere else None
        self.running: list[int] = []  # left running, confined to `elsewhere`
        self.failure: str | None = None

    def stop(self) -> bool:
        """Pause every process below the root; False (everything resumed,
        `failure` says why) when one could not be paused."""
        if not self.sweep(strict=True):
            self.resume()
            return False
        return True

    def sweep(self, strict: bool = False) -> bool:
        """Pause the processes that appeared since the last sweep, until a
        walk finds none. With `strict`, stop at the first one that cannot be
        paused and return False; otherwise stop it anyway (a process born
        during a pause has had no time to queue GPU work)."""
        while True:
            tree = ([self.root] if self.with_root and _alive(self.root) else []) + descendants(self.root, self.spare)
            new = [pid for pid in tree if pid not in self.stopped and pid not in self.running]
            if not new:
                _wait_stopped(self.stopped)
                return True
            for pid in new:
                if not self._pause_one(pid) and strict:
                    return False

    def _pause_one(self, pid: int) -> bool:
        ok = True
        if self.driver is not None:
            rc = self.driver.lock(pid, self.lock_timeout_ms)
            if rc == CUDA_SUCCESS:
                self.locked.append(pid)
            elif rc != CUDA_ERROR_NOT_INITIALIZED and _alive(pid):
                self.failure = f"process {pid}: the driver's checkpoint lock failed with CUDA error {rc}"
                ok = False
            # Locked, or a compiler tool that never makes a CUDA context: its
            # GPU cannot be reached, so it may run on, off the timing's CPUs.
            may_run = rc == CUDA_SUCCESS or (rc == CUDA_ERROR_NOT_INITIALIZED
                                             and cpu_share.runs_a_compiler_tool(pid))
            if ok and may_run and self.confined is not None and self.confined.confine(pid):
                self.running.append(pid)
                return True
        try:
            os.kill(pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            pass
        self.stopped.append(pid)
        return ok

    def resume(self) -> None:
        """Undo stop() and sweep(): continue every process, then unlock the
        locked ones (their CUDA calls resume). Never raises."""
        for pid in self.stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        if self.confined is not None:
            self.confined.restore()
        if self.driver is not None:
            for pid in self.locked:
                try:
                    self.driver.unlock(pid)
                except Exception:  # noqa: BLE001 - a process gone meanwhile
                    pass
        self.stopped, self.locked, self.running = [], [], []


def _wait_stopped(pids: list[int], timeout_s: float = 1.0) -> None:
    """Wait until SIGSTOP has taken hold of each process (it is delivered
    when the process is next scheduled: milliseconds on a loaded host), so
    that none runs on once the pause is said to be in place. Bounded: a
    process that does not show stopped in time is left to its signal."""
    end = time.monotonic() + timeout_s
    waiting = list(pids)
    while waiting and time.monotonic() < end:
        waiting = [pid for pid in waiting if _state(pid) not in ("T", "t", "Z", "X", None)]
        if waiting:
            time.sleep(0.001)


def _state(pid: int) -> str | None:
    """The process's state letter in /proc (None when gone or unreadable)."""
    fields = procfs.stat_fields(pid)
    return fields[0] if fields else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
