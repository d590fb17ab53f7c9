"""CPU mode: none of the file's Python runs while another thread's kernel
is being interpreted.

Under Triton's interpreter a kernel is Python run in the file's process,
and what the judge puts in place for a launch (judge.worker.interpret
restores the interpreter, then runs the body) holds only if nothing of the
file's runs meanwhile. A thread that solve started kept running during
the launch: one set the interpreter's float subtraction to an addition
after the restore (a kernel computing a - b was accepted for a + b), and
one read the race watch's record of the addresses the kernel stored to
as they were made (every input, byte by byte).

So each thread solve starts (judge.worker.rules) runs under a trace
function of the worker's: at every call and every line it waits while a
launch of another thread is in progress. The
file cannot take the trace function off (sys.settrace is refused to it by
the audit hook). A thread that launches a kernel itself is the launch's
owner and runs on. A GPU runs kernels compiled, out of any thread's reach:
there nothing is gated.
"""

from __future__ import annotations

import contextlib
import sys
import threading

_owner = [None, 0]  # the thread whose launch is in progress, and its depth (a kernel may launch from a hook)
_changed = threading.Condition(threading.Lock())
@contextlib.contextmanager
def launching():
    """The block is a launch of this thread's: other gated threads wait."""
    me = threading.get_ident()
    with _changed:
        while _owner[0] not in (None, me):
            _changed.wait()
        _owner[0] = me
        _owner[1] += 1
    traced = sys.gettrace() is _trace
    if traced:
        sys.settrace(None)  # a gated thread's own launch runs untraced (the interpreter is slow enough)
    try:
        yield
    finally:
        if traced:
            sys.settrace(_trace)
        with _changed:
            _owner[1] -= 1
            if _owner[1] == 0:
                _owner[0] = None
                _changed.notify_all()


def _wait_for_launches(get_ident=threading.get_ident) -> None:
    owner = _owner[0]
    if owner is None or owner == get_ident():
        return
    with _changed:
        while _owner[0] not in (None, get_ident()):
            _changed.wait()


def _trace(frame, event, arg, get_ident=threading.get_ident):
    owner = _owner[0]
    if owner is not None and owner == get_ident():
        return None  # this thread's own launch: its frames untraced, calls still seen
    if owner is not None:
        _wait_for_launches()
    return _trace


def gate_this_thread() -> None:
    """Called by a thread solve started, before its target runs."""
    sys.settrace(_trace)
