"""A permanent audit hook (PEP 578) in the worker: what the submission's own
code may not do, whoever it is spelled through.

Installed once, before the submission is imported; CPython offers no way to
remove an audit hook. What the hook decides with (the submission's path, the
judge's trusted code objects, the violations, the sealed objects) lives in
its closure; only the garbage collector reaches the hook, and the hook
refuses the collector's lists to the submission.

Who is asking: an event is blamed on the submission when, walking the stack
outward, a frame of its file comes before any trusted frame (the judge's
launch wrapper, the guard's checks) and before a library's own first import
(judge.worker.genuine_import), or when code of no known file (compiled from
a string) is on the way, unless the judge runs it on purpose
(judge.worker.attribution). Frames are told apart by their code objects,
which cannot claim another file's name: compiling under such a name,
building code objects, marshal.loads and swapping __code__ are refused.

Refused to the submission, at import and in solve (a violation, `rejected`,
remembered even if the file catches the exception): ctypes and cffi;
compute libraries (cupy, jax, numba, scipy...: LeetGPU's "Triton and the
framework's native features only"); the collector's object lists, other
threads' frames, frames reached from tracebacks or generators; new
processes and sockets (judge.worker.audit_events checks those events;
judge.worker.refusals has the tables).

The hook also keeps the originals of torch's ways past the operator guard
(judge.worker.gates), let through only for the guard's own work, and tells
from the stack whose code asks for a torch operator (judge.worker.rules).
It runs with Python's collector off, so no finalizer runs while it is busy.
"""

from __future__ import annotations

import functools
import os
import sys
import threading

from judge.worker import audit_events, module_guard
from judge.worker import seal as seal_record
from judge.worker.refusals import (HIDDEN_MODULES, INTERPRETER_COPIES, INTERPRETER_FILE, MODE_STACK, RULE,
                                   TORCH_BACKDOORS, gate_refusal, named_builtins)

_installed = False



def _no_op(*args, **kwargs) -> None:
    """What gc.enable and gc.set_threshold do for the submission."""


def _module_file(name: str) -> str | None:
    module = sys.modules.get(name)
    return getattr(module, "__file__", None) if module is not None else None


def install(submission: str, trusted_codes, reply_fd: int | None = None) -> None:
    """Add the hook (once per process). `submission`: the path the
    submission is imported from; `trusted_codes`: code objects of the judge's
    entry points whose callees are not the submission's doing; `reply_fd`:
    the courier's complaint line (judge.worker.courier). On the first
    violation the hook has the judge's pending request answered `rejected`,
    with the rule, through that line, and the process ends, so that nothing the
    submission does afterwards (catching the exception, patching the
    worker's reply) can change the verdict."""
    # Builtins bound here, for the hook and its closures: a file can swap builtins' own at any moment.
    (RuntimeError, all, any, bool, bytes, dict, frozenset, getattr, globals, id, int, isinstance, len, list,
     object, range, set, sorted, str, tuple, type, ValueError, BaseException, Exception,) = \
        named_builtins("RuntimeError all any bool bytes dict frozenset getattr globals id int isinstance len list "
                       "object range set sorted str tuple type ValueError BaseException Exception")
    global _installed
    if _installed:
        raise RuntimeError("the audit hook is installed once per process")
    _installed = True
    # The tables the hook reads, bound here: a module's names can be rebound
    # by anyone (the file could have emptied REFUSED), the hook's own cannot.
    mode_stack = MODE_STACK
    interpreter_copies, interpreter_file, rule, refusal_text = INTERPRETER_COPIES, INTERPRETER_FILE, RULE, gate_refusal
    submission = os.path.abspath(submission)
    trusted = frozenset(trusted_codes)
    violations: list[str] = []
    busy: set[int] = set()  # threads inside the hook: its own frame walk raises events too
    get_ident = threading.get_ident
    getframe = sys._getframe
    import gc
    gc_isenabled, gc_disable, gc_enable = gc.isenabled, gc.disable, gc.enable
    from judge.worker.launches import stream_fence
    fence_stream, launched_streams, forget_streams = stream_fence()
    from judge.worker.rules import RuleViolation
    from judge.worker import attribution, launch_gate
    # The only code that sets a trace function: the CPU mode's gate on solve's
    # threads. Anyone else's profile or trace function is handed every C
    # function called, the originals behind the gates among them.
    tracers = frozenset({launch_gate.gate_this_thread.__code__, launch_gate.launching.__wrapped__.__code__})
    kept: list[tuple[object, str]] = []  # the originals behind judge.worker.gates, and their kind
    # Filled once, before the seal closes (gate_codes()); read by the frame readers.
    known = attribution.Known()
    roots = attribution.library_roots(submission)
    (blame, innermost_is_submission, gate_allows, thread_allowed, origin, written_by_submission,
     names_the_gate, reaches_file) = attribution.readers(submission, trusted, roots, known)
    real_bytecode = functools.partial(known.genuine.real_bytecode, roots=roots)  # the readers' import check
    from judge.worker import gates, rules
    # The code that may ask the hook for a verdict on an operator's origin,
    # for the violations, or (past the seal) to keep an overload's kernel.
    own_requests = frozenset({rules._origin.__code__, globals()["violations"].__code__, gates._keep.__code__})
    from judge import timing
    fence_code, measure_code, timer = rules.fence.__code__, timing.measure.__code__, [None]  # the timer's stream
    # Where the worker's own code computes once the file is loaded: its draws of
    # the inputs, its check sums of the timed calls, its reply's read-back.
    windows = (frozenset(sys.modules[name].__file__ for name in ("judge.cases", "judge.distributions",
                                                                "judge.check_sums") if name in sys.modules),
               frozenset({sys.modules["judge.worker.server"]._as_bytes.__code__}
                         if "judge.worker.server" in sys.modules else ()))
    memo_code = globals()["memo"].__code__
    from judge.worker import launches
    count_code = launches.count_launch.__code__
    launch_count = [0]  # kernel launches since the hook was installed (judge.worker.launches)
    memos: dict = {}  # the CPU front end's record (judge.worker.frontend): out of the file's reach
    overload_code = gates.gate_overload_result.__code__
    POST_NONE, POST_TAG, POST_OVERLOAD, POST_SET = gates.POST_NONE, gates.POST_TAG, gates.POST_OVERLOAD, \
        gates.POST_SET

    def kept_for_overload(frame) -> bool:
        """gate_keep from _keep, called by gate_overload_result in a stand-in."""
        frame = frame.f_back
        return (frame is not None and frame.f_code is overload_code and frame.f_back is not None
                and frame.f_back.f_code in known.skipped_codes)

    def host_allowed(frame) -> bool:
        """A tensor's host memory (judge.worker.gates.HOST): for the worker's
        own code, and for Triton's interpreter copying a launch's arguments;
        not for a builtin the file handed to Triton as a hook, which runs
        below the launch with no frame of the file's."""
        who = origin(frame)
        if who == "judge":
            return True
        asker = frame.f_back  # past the stand-in, and the guard's wrapper of the same method in solve
        while asker is not None and asker.f_code.co_filename in known.passed_files:
            asker = asker.f_back
        return (who == "triton" and asker is not None and asker.f_code.co_name in interpreter_copies
                and asker.f_code.co_filename.endswith(interpreter_file))

    scalar_probe: list = []  # is torch's Python dispatch key off in this thread? (taken as the gates install)

    def builder_reading() -> bool:
        """Torch reads a tensor's value as a number with its Python dispatch
        key off: a builder reading the tensors inside its data (judge.worker.gates.SCALARS)."""
        return bool(scalar_probe) and scalar_probe[0]()

    def through_gate(number: int, name: str, box: list) -> None:
        original, kind = kept[number]
        me = get_ident()
        busy.add(me)
        try:
            caller = getframe(3)  # the gate's stand-in (through_gate, _hook, hook)
            theirs = kind in ("address", "set") and blame(caller)
            # (blame(caller, True): a library's real first import that the file
            # started does not excuse the file's own refusals: it calls whatever
            # the file put in place of a name its top-level code uses.)
            allowed = (kind in ("overload", "address", "builder", "set")
                       or (kind == "submission" and not blame(caller, True))
                       or (kind == "host" and host_allowed(caller))
                       or (kind == "thread" and thread_allowed(caller))
                       or (kind == "scalar" and not (builder_reading() and origin(caller) == "submission"))
                       or (kind == "script" and not blame(caller, True))
                       or (kind == "call" and gate_allows(caller, name.rpartition(".")[2] in mode_stack))
                       ) and (kind not in ("call", "submission", "thread") or names_the_gate(caller, name))
        finally:
            busy.discard(me)
        if not allowed and name.startswith("gc."):
            # The collector stays off (judge.worker.courier): switching it back
            # on, a common habit around a launch, is let go as a no-op.
            box.append(_no_op)
            box.append(POST_NONE)
            return
        if not allowed:
            refuse(refusal_text(kind, name))
        # The stand-in makes the call itself, once this hook has returned:
        # nothing the call runs (a tensor subclass's __torch_function__, an
        # argument's __index__) finds this hook's frames, and with them the
        # originals, on its stack (a file walked up to them from there).
        box.append(original)
        box.append((POST_SET if kind == "set" else POST_TAG) if theirs
                   else POST_OVERLOAD if kind == "overload" else POST_NONE)

    import struct
    import time
    # Taken now: the file cannot swap what the hook calls on its way out.
    write, exit_now, sleep, pack = os.write, os._exit, time.sleep, struct.pack

    def final(message: str) -> None:
        """Hand the violation to the courier (judge.worker.courier), which
        answers the pending request with it and ends the worker; nothing
        of the file's runs in this thread meanwhile."""
        if reply_fd is None:
            return
        data = message.encode("utf-8", "replace")[:8192]
        data = pack(">I", len(data)) + data  # as judge.worker.courier reads a complaint
        try:
            while data:
                data = data[write(reply_fd, data):]
            for _ in range(100):  # the courier ends the process; this is the backstop
                sleep(0.05)
        finally:
            exit_now(3)

    def record(message: str) -> None:
        if not violations:
            violations.append(message)
            final(message)

    def refuse(what: str):
        message = f"rule: {what} in the submission; {rule}"
        record(message)
        raise RuleViolation(message)

    seal_add, seal_verify, seal_check = seal_record.recorder(record)  # the seal's record (judge.worker.seal)
    # Native code: what may load, which programs start, Triton's builds (judge.worker.native_code).
    from judge.worker import native_code
    native_ok, program_ok, native_open, native_build = native_code.hook_side(refuse)
    check_event = audit_events.checker(submission, roots, known, blame, innermost_is_submission, reaches_file,
                                       real_bytecode, tracers, refuse, native_ok, program_ok)

    def verify(box: list) -> None:
        seal_verify()
        list.extend(box, violations)

    def hook(event: str, args) -> None:
        if event == "tritonjudge.violation":  # even from a finalizer run while the hook was busy
            record(str(args[0]))
            return
        me = get_ident()
        if me in busy:
            return
        # No collection while the hook decides: a finalizer of the file's
        # run here would find the hook busy, its own events unexamined.
        collecting = gc_isenabled()
        if collecting:
            gc_disable()
        try:
            _hook(event, args, me)
        finally:
            if collecting:
                gc_enable()

    def _hook(event: str, args, me: int) -> None:
        if event.startswith("tritonjudge."):
            # The hook's own requests, obeyed only from the code that makes
            # them (by its code object) and into a plain list the hook fills
            # itself: anyone may raise an event (a file raised gate_keep to
            # have its own function run inside the hook, and origin with a
            # list whose append ran while the hook looked away).
            box = args[-1] if args and type(args[-1]) is list else None
            if box is None and event in ("tritonjudge.gated", "tritonjudge.origin", "tritonjudge.verify",
                                         "tritonjudge.gate_keep", "tritonjudge.memo", "tritonjudge.launches",
                                         "tritonjudge.timer_stream", "tritonjudge.launched_streams"):
                return
            if event == "tritonjudge.timer_stream":  # read by anyone: no secret
                list.append(box, timer[0])
                return
            if event == "tritonjudge.launched_streams":  # read by anyone: no secret, and forgets nothing
                list.append(box, launched_streams())
                return
            if event == "tritonjudge.launches":  # read by anyone: no secret
                list.append(box, launch_count[0])
                return
            if event == "tritonjudge.check_seal":  # anyone: a check only reports
                if sealed_closed[0]:
                    seal_check()
                return
            if event == "tritonjudge.kernel_launch":  # Triton's launcher, as it launches: anyone (a fence only orders)
                if sealed_closed[0]:
                    seal_check()  # every route to a launch passes here, the raw launcher's too
                fence_stream(args[0] if args else None)
                return
            if event in ("tritonjudge.native_known", "tritonjudge.launcher_source"):  # anyone: no secret
                native_open(event, args, box)  # not busy: a launcher's text is written there
                return
            busy.add(me)
            try:
                caller = getframe(2)  # the caller of sys.audit (_hook, hook)
                asker = caller.f_code
                if event == "tritonjudge.gated" and asker in known.skipped_codes:
                    number, name = args[0], args[1]
                elif event == "tritonjudge.origin" and asker in own_requests:
                    list.append(box, origin(caller))
                    return
                elif event == "tritonjudge.memo" and asker is memo_code:
                    # Only inside a launch, below the judge's wrapper: the file calling memo() itself is
                    # refused. Not a secret, the handed buffers are read under solve (copy_extent).
                    key = args[0]
                    plain = type(key) is tuple and all(type(k) is int or type(k) is str for k in key)  # no code of the file's
                    if blame(caller) and not (plain and len(args) == 2 and key[:1] == ("handed",)):
                        refuse("no reaching the front end's record of checked kernels")
                    if plain:
                        if len(args) == 3:
                            memos[key] = args[1]
                        else:
                            list.append(box, memos.get(key))
                    return
                elif event == "tritonjudge.launch" and asker is count_code and caller.f_back is not None \
                        and caller.f_back.f_code in trusted:
                    launch_count[0] += 1  # from a launch wrapper, once Triton's launch returned
                    return
                elif event == "tritonjudge.timer" and asker is fence_code and caller.f_back is not None \
                        and caller.f_back.f_code is measure_code and args and not blame(caller):
                    timer[0] = args[0]  # from timing.measure, the worker's own timing (not the file calling it)
                    if args[0] is not None:
                        forget_streams()  # a timed call starts: the streams its end event waits for, from here
                    return
                elif event in ("tritonjudge.native_source", "tritonjudge.native_trust"):
                    native_build(event, args, caller)  # from compile_module only
                    return
                elif event == "tritonjudge.verify" and asker in own_requests:
                    verify(box)
                    return
                elif event == "tritonjudge.gate_keep" and (not sealed_closed[0] or (
                        args[1] == "call" and asker in own_requests and kept_for_overload(caller))):
                    if args[1] == "scalar" and not scalar_probe:
                        import torch  # loaded by now: the gates stand in for its methods
                        scalar_probe.append(functools.partial(torch._C._dispatch_tls_is_dispatch_key_excluded,
                                                              torch._C.DispatchKey.Python))
                    kept.append((args[0], args[1]))
                    list.append(box, len(kept) - 1)
                    return
                elif event == "tritonjudge.seal" and not sealed_closed[0]:
                    seal_add(args[0])
                    return
                elif event == "tritonjudge.gate_codes" and not sealed_closed[0]:
                    known.fill(*args)
                    return
                elif event == "tritonjudge.close_seal":
                    sealed_closed[0] = True
                    known.genuine.freeze()  # sys.modules as the file finds it (judge.worker.genuine_import)
                    known.windows = windows  # from now on the worker computes only there (attribution.origin)
                    return
                else:
                    number = None
                    if sealed_closed[0] and blame(caller):
                        refuse(f"no raising the judge's own events ({event})")
                    return
            finally:
                busy.discard(me)
            through_gate(number, name, box)
            return
        busy.add(me)
        try:
            check_event(event, args, getframe(2))  # the caller of sys.audit (_hook, hook)
        finally:
            busy.discard(me)

    sealed_closed = [False]
    sys.addaudithook(hook)
    module_guard.hide({**{name: "no foreign calls or raw memory access" for name in HIDDEN_MODULES},
                       **{name: f"no torch compute past the operator guard ({what})"
                          for name, what in TORCH_BACKDOORS.items()}}, blame, refuse, getframe)
    module_guard.hide_own(written_by_submission, refuse, getframe)


def gate_codes(guard_codes, thread_codes, stand_in_codes, torch_dir: str, judge_files, passed_files,
               trusting_codes) -> None:
    """Tell the hook which code may go through a gate (judge.worker.gates),
    and, for the origin of an operator, which files are the worker's own and
    the guard's and which calls run code the judge trusts; taken once,
    before the seal closes."""
    sys.audit("tritonjudge.gate_codes", frozenset(guard_codes), frozenset(thread_codes),
              frozenset(stand_in_codes), torch_dir, frozenset(judge_files), frozenset(passed_files),
              frozenset(trusting_codes))



def seal(pairs) -> None:
    """Record (owner, attribute) pairs whose value must not change from now on."""
    sys.audit("tritonjudge.seal", list(pairs))


def close_seal() -> None:
    sys.audit("tritonjudge.close_seal")


def report(what: str, _audit=sys.audit) -> None:
    """Remember a violation where the submission cannot erase it."""
    _audit("tritonjudge.violation", what)


def check_seal(_audit=sys.audit) -> None:
    """The seal's quick check (judge.worker.seal.recorder), in the hook:
    every sealed module's names as they were, now. Bound to sys.audit as
    it was at import (a file rebound this module's `sys` to a namespace
    whose audit printed: no check ran after that)."""
    _audit("tritonjudge.check_seal")


def memo(key: tuple, *value):
    """The CPU front end's record (judge.worker.frontend), kept in the hook
    where the file cannot reach it: memo(key) reads (None if unset),
    memo(key, value) writes. Keys are tuples of ints and strings."""
    if not _installed:  # the worker's own launches, before any file is loaded
        return _early.setdefault(key, value[0]) if value else _early.get(key)
    box: list = []
    sys.audit("tritonjudge.memo", key, *value, box)
    return box[0] if box else None


_early: dict = {}



def violations(_audit=sys.audit, _list=list) -> list[str]:
    """The violations recorded so far (after checking the sealed objects)."""
    box: list[str] = _list()
    _audit("tritonjudge.verify", box)
    return box
