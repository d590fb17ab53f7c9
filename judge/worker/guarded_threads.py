"""Threads under the operator guard (untrusted side: judge.worker.rules'
Guard calls these). torch's dispatch modes are per thread, so every thread
threading starts once the worker is armed runs under a guard mode of its
own (guard_every_thread), and a thread solve starts through
threading.Thread.start is checked for a class that answers for its own
bootstrap (_start_guarded). The mode must be in force once entered, and the
seal is checked as each thread starts."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge.worker.rules import Guard

_THREAD_START = __import__("threading").Thread.start  # as threading made it, before any file
_CURRENT_MODE = __import__("torch.utils._python_dispatch", fromlist=["_"])._get_current_dispatch_mode


def _start_guarded(guard: "Guard", original_start, thread, *args, **kwargs):
    """threading.Thread.start while solve runs: the whole of the new thread
    (threading's bootstrap, not only run) under a dispatch mode of its own
    (judge.worker.audit lets only this start threads then). Around run
    alone, a profile hook set by threading.setprofile, an excepthook, or a
    subclass's own _bootstrap_inner ran the file's torch.mm in the thread
    before or after the mode."""
    import threading
    cls = type(thread)
    # Thread.start reads self._bootstrap: a class of the file's that answers
    # that read itself (a property, its own __getattribute__) had the thread
    # start its own bootstrap, with no mode.
    if any(("_bootstrap" in vars(k) or "__getattribute__" in vars(k)) for k in cls.__mro__
           if k is not threading.Thread and k is not object):
        guard.flag("rule: no threads but threading.Thread's in solve, run under the rules: this thread's class "
                   "answers for its own _bootstrap")
    if _EVERY_THREAD[0] is not None:  # every thread is guarded where threading starts it (guard_every_thread)
        return original_start(thread, *args, **kwargs)
    bootstrap = cls._bootstrap

    def guarded_bootstrap():
        _run_guarded(guard, lambda: bootstrap(thread))

    object.__setattr__(thread, "_bootstrap", guarded_bootstrap)  # past a __setattr__ of the file's
    return original_start(thread, *args, **kwargs)


# threading's own ways to start a thread, by Python version (bound as threading was imported).
STARTERS = ("_start_new_thread", "_start_joinable_thread")


def guard_every_thread(guard: "Guard") -> None:
    """Every thread threading starts from now on (the file not yet loaded)
    runs under a guard of its own, however it was started: threading's real
    start, taken at import and called in solve from a hook made of builtins
    alone, had run torch.mm in a thread with no mode. Wrapped where
    threading hands the new thread its function, so a class's own
    _bootstrap is guarded too."""
    import threading
    for name in STARTERS:
        real = getattr(threading, name, None)
        if real is None:
            continue

        def start(function, *args, _guard=guard, _real=real, _run=_run_guarded, **kwargs):
            def guarded(*inner, **named):
                _run(_guard, lambda: function(*inner, **named))
            return _real(guarded, *args, **kwargs)

        setattr(threading, name, start)
        _EVERY_THREAD[0] = start


_EVERY_THREAD: list = [None]  # a starter of guard_every_thread's (then solve's Thread.start adds no second guard)


def _run_guarded(guard: "Guard", run) -> None:
    # Entered, never left: the thread's own end (its thread-locals' finalizers,
    # run as Python clears its state) runs under the mode too; left at the end
    # of run, a finalizer's torch.add ran unseen, before join() returned.
    # The seal first (a patch in force only while this thread starts, put back
    # before the next operator of solve's own thread, is seen here), then the
    # mode, which must be in force: TorchDispatchMode.__enter__ or _push_mode
    # made a no-op in solve had the thread run torch.mm with none.
    sys.audit("tritonjudge.check_seal")
    own = guard._make_mode()
    own.__enter__()
    if _CURRENT_MODE() is not own:
        guard.flag("rule: solve tampered with the judge's operator guard (a thread's dispatch mode was not in force "
                   "as it started)")
        return
    for mode in _THREAD_MODES:  # CPU mode: "cuda" means the CPU in solve's threads too
        mode().__enter__()
    if _GATED:  # CPU mode: no Python of the file's while another thread's kernel is interpreted
        from judge.worker import launch_gate
        launch_gate.gate_this_thread()
    run()


_GATED = False  # set once by the CPU worker (gate_threads), before the module is sealed and the file imported
_THREAD_MODES: tuple = ()  # torch function modes every thread solve starts enters (set once, likewise)


def gate_threads() -> None:
    global _GATED
    _GATED = True


def thread_function_modes(modes: tuple) -> None:
    global _THREAD_MODES
    _THREAD_MODES = tuple(modes)


def starter_code():
    """The code of guard_every_thread's starter: a thread started through it
    runs under a guard, so the audit hook lets it start (judge.worker.rules.gate_codes)."""
    import types
    return next(c for c in guard_every_thread.__code__.co_consts if isinstance(c, types.CodeType) and c.co_name == "start")
