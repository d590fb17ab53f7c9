"""Every process a worker makes dies with it (issue 9, item 5).

Two layers. Where the sandbox tool allows, the worker runs in a PID
namespace of its own (`unshare --pid --fork --kill-child`, bwrap
`--unshare-pid`): when its first process ends, the kernel kills everything
else in the namespace, whatever `setsid` or double fork it did. And in any
case the judge makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER):
an orphan anywhere below it (even after setsid) is reparented to the judge
instead of init, and `reap()`, called whenever a worker is closed, kills and
waits for every such orphan. An orphan is a child of the judge that the
judge did not start: not in the judge's own session (workers start their
own sessions and are known by pid), so the judge's own helpers (a compiler
it runs, a probe) are never touched.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading

from . import procfs

PR_SET_CHILD_SUBREAPER = 36
# Held across a worker's start and its registration (spawning()), and across
# a scan for orphans: a worker forked by one grading but not yet registered
# would otherwise look like an orphan to another grading's reap, and die.
_lock = threading.RLock()
_known: set[int] = set()  # the pids of live workers (direct children the judge started)
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux);
    False where it cannot be done."""
    global _subreaper
    if _subreaper is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _subreaper = False
    return _subreaper


def spawning():
    """Hold while starting a worker and calling started() with its pid."""
    return _lock


def started(pid: int) -> None:
    with _lock:
        _known.add(pid)


def finished(pid: int) -> None:
    with _lock:
        _known.discard(pid)


def _children() -> list[tuple[int, int, str]]:
    """(pid, session, state) of this process's children, from /proc."""
    me = os.getpid()
    found = []
    for pid in procfs.pids():
        fields = procfs.stat_fields(pid)
        if fields is not None and len(fields) > 3 and int(fields[1]) == me:
            found.append((pid, int(fields[3]), fields[0]))
    return found


def orphans() -> list[int]:
    """Children of the judge that it did not start: reparented orphans."""
    mine = os.getsid(0)
    with _lock:  # no worker starts between the scan and the check
        return [pid for pid, sid, _ in _children() if sid != mine and pid not in _known]


def reap(rounds: int = 20) -> int:
    """Kill and wait for every orphan (their own orphans reparent to us in
    turn, hence the rounds). Returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        found = orphans()
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except (ChildProcessError, OSError):
                pass
    return killed
