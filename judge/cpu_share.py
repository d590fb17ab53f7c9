"""The CPUs a timing keeps to itself while the other gradings on its GPU go
on compiling (trusted side; judge.gpu_pause applies it).

A grading that steps aside for another's timing (judge.gpu_lock) must not
touch the GPU, and the driver's checkpoint lock alone sees to that: a
locked process runs on, and each CUDA call it makes waits for the unlock.
Stopping it on the CPU as well left its compiles standing still through
every other file's timing. So, where the host has CPUs to spare, a locked
process is not stopped but confined to all CPUs but a few (`reserved`):
those stay free for the timing (its worker's launch path, the judge's lane
waiting on it), which a busy host would otherwise slow down.

A process without a CUDA context is still stopped, since it could make
one, unless it runs one of Triton's NVIDIA tools (ptxas and its kin),
which never touch the driver: the compiles of a locked worker go on.
Nice values would serve less well: lowering a process's priority is one
way only without privileges, affinity can be given back.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

MIN_CPUS = 8  # below this a timing gets the host to itself: every other grading is stopped


def _allowed() -> frozenset[int]:
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return frozenset()


def reserved(allowed: frozenset[int] | None = None) -> frozenset[int]:
    """The CPUs kept free for a timing: the highest eighth of this
    process's CPUs, at least two; none where it has fewer than MIN_CPUS."""
    allowed = _allowed() if allowed is None else allowed
    if len(allowed) < MIN_CPUS:
        return frozenset()
    return frozenset(sorted(allowed)[-max(2, len(allowed) // 8):])


def elsewhere(allowed: frozenset[int] | None = None) -> frozenset[int]:
    """The CPUs a grading that stepped aside may go on using (empty: it is
    stopped instead)."""
    allowed = _allowed() if allowed is None else allowed
    kept = reserved(allowed)
    return allowed - kept if kept else frozenset()


def _tool_files() -> set[tuple[int, int]]:
    """(device, inode) of Triton's NVIDIA tools as installed here, and of
    the assembler TRITON_PTXAS_PATH names."""
    paths: list[Path] = []
    spec = importlib.util.find_spec("triton")  # where it is, without importing it
    if spec is not None and spec.origin:
        folder = Path(spec.origin).parent / "backends" / "nvidia" / "bin"
        if folder.is_dir():
            paths += [p for p in folder.iterdir() if p.is_file()]
    if os.environ.get("TRITON_PTXAS_PATH"):
        paths.append(Path(os.environ["TRITON_PTXAS_PATH"]))
    found = set()
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        found.add((st.st_dev, st.st_ino))
    return found


_TOOLS: list[set[tuple[int, int]]] = []


def runs_a_compiler_tool(pid: int) -> bool:
    """Whether process `pid` runs one of Triton's NVIDIA tools. The file
    is compared by identity through /proc (a worker's mount namespace
    shows it under another path, and a process can rename itself, not
    change what it runs without exec)."""
    if not _TOOLS:
        _TOOLS.append(_tool_files())
    try:
        st = os.stat(f"/proc/{pid}/exe")
    except OSError:
        return False
    return (st.st_dev, st.st_ino) in _TOOLS[0]


class Confinement:
    """Processes held to a set of CPUs, every thread of theirs, until
    restore() gives each thread back the CPUs it had."""

    def __init__(self, cpus: frozenset[int]):
        self.cpus = frozenset(cpus)
        self.saved: dict[int, dict[int, frozenset[int]]] = {}  # pid -> thread -> its CPUs before

    def confine(self, pid: int) -> bool:
        """Hold every thread of `pid` to the CPUs (threads born meanwhile
        inherit them from the thread that starts them: the walk repeats
        until it finds none new). False when the process is gone or
        refuses: the caller stops it instead."""
        saved = self.saved.setdefault(pid, {})
        try:
            while True:
                new = [tid for tid in _threads(pid) if tid not in saved]
                if not new:
                    return bool(saved)
                for tid in new:
                    try:
                        saved[tid] = frozenset(os.sched_getaffinity(tid))
                        os.sched_setaffinity(tid, self.cpus)
                    except ProcessLookupError:  # a thread that ended meanwhile
                        saved.setdefault(tid, frozenset())
        except (OSError, AttributeError):
            self._restore(pid)
            return False

    def restore(self) -> None:
        """Every confined process's threads back on their CPUs (a thread
        born while confined gets its process's first thread's). Never
        raises."""
        for pid in list(self.saved):
            self._restore(pid)

    def _restore(self, pid: int) -> None:
        saved = self.saved.pop(pid, {})
        first = next((cpus for cpus in saved.values() if cpus), None)
        for tid in _threads(pid):
            cpus = saved.get(tid) or first
            if not cpus:
                continue
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:  # gone meanwhile
                pass


def _threads(pid: int) -> list[int]:
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/task") if name.isdigit()]
    except OSError:
        return []
