"""The judge's own process kept out of its workers' reach (trusted side).

A worker that shares the judge's user (no user of its own: judge.worker
.privileges) could open /proc/<judge>/mem, write through /proc/<judge>/root
past its jail, or read the judge's environment, all of which need only the
same user and a dumpable process. A non-dumpable process needs the ptrace
capability for that, which a worker has given up. Every judge process that
starts workers or keeps results (a grading, a batch lane, the batch and its
store) calls protect_judge first; its children are dumpable again after
their exec, as a worker must be for CUDA's own tools.
"""

from __future__ import annotations

_protected: list = []


def protect_judge() -> None:
    """This process made non-dumpable, once (Linux; nothing elsewhere)."""
    if _protected:
        return
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass
    _protected.append(True)
