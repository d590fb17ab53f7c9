"""The challenge rules, enforced inside the worker while solve runs.

* No torch compute that does the job: every aten operator dispatched during
  solve is checked against a small allowlist (allocation, views, fill/zero,
  copies on one device). torch.matmul, torch.mm fetched with getattr, the @
  operator, einsum, F.linear, tensordot and the rest all reach the dispatcher
  as compute operators (mm, bmm, addmm, ...) however they are spelled.
* No host round trip of the data: .cpu(), .numpy(), .tolist(), .item() and
  copies between devices.
* No writes into the memory around a tensor solve is given, no symbolic
  numbers or tensors of the file's own subclasses (whose code torch runs
  inside an operator, past the guard).
Triton's own machinery may move data (its interpreter copies tensors) but
never compute: inside a Triton launch, as the call stack tells (the nearest
frame of the judge's launch wrapper or of the submission), only the copies
and allocations Triton makes. A hook the file hands to Triton runs as the
file's code, under the full rules. Once the file is imported the mode stays
in force (watch()): outside solve an operator is the file's when the audit
hook finds the file's code asking for it (a finalizer, a patched function).

This runs in the untrusted process. The guard follows threads started in
solve; torch's ways past its mode are gated by the audit hook
(judge.worker.gates); it notices its mode out of place or its patches
undone; its code, constants and the judge's wrappers are sealed
(judge.worker.audit), which also reports every violation to the judge.
Correctness never depends on it: the judge checks every output.
"""

from __future__ import annotations

import contextlib
import os
import sys

from judge.worker import copy_extent, frozen_class
from judge.worker.guarded_threads import _THREAD_START, _run_guarded, _start_guarded, starter_code
from judge.worker.op_identity import NAME, OVERLOAD, RUN, SCHEMA, identify, prepare
from judge.worker.argument_types import other_layout, refused_in
from judge.worker.op_tables import (ALLOCATION_OPS, ALLOWED_OPS, COPY_FORMS, COPY_OPS, FILL_OPS,  # noqa: F401
                                      HOST_METHODS, METADATA_OPS, TRANSFER_OPS, TRITON_OPS, VIEW_OPS,
                                      WRITES_NO_DATA)

# The identities of the operators allowed in solve (and those Triton's own
# code may call), looked up as the worker starts, before any file
# (judge.worker.op_identity): a read-only mapping.
KNOWN = prepare(ALLOWED_OPS | TRITON_OPS)

# torch's ways past the dispatch mode (popping it, excluding its key,
# calling kernels directly) are gated by the audit hook: judge.worker.gates.


# Whether solve runs (Guard.armed): the CPU worker's host-tensor rules read it
# (judge.worker.host_tensors); a file that flips it only lets itself copy to
# its own host tensors, whose data still cannot reach a kernel or the host.
SOLVING = [False]

# While a timed call runs (judge.timing's fence): the stream its start event
# is on. Kept by the audit hook once it is installed, set only by timing.measure's
# own call of fence (a judge function's globals are within the file's reach,
# and a list here set to None would have switched the fence off); this list
# only before the hook (the worker's own tests).
TIMER_STREAM: list = [None]


def fence(stream, _audit=sys.audit) -> None:
    """timing.measure's fence: the timer's stream around each timed call, else None."""
    TIMER_STREAM[0] = stream
    _audit("tritonjudge.timer", stream)  # taken from timing.measure's own call only


def timer_stream(_audit=sys.audit, _list=list):
    """The timer's stream during a timed call, else None: as the hook keeps it."""
    box = _list()
    _audit("tritonjudge.timer_stream", box)
    return box[0] if box else TIMER_STREAM[0]


def after_start(stream, _timer_stream=timer_stream) -> None:
    """Work queued on another stream during a timed call (a Triton launch,
    a torch operator) waits for the timer's stream, so it cannot run in the
    head start before the call's start event (judge.timing). (What it calls
    is bound here: this module's names are within a file's reach for a
    moment between two checks of the seal.)"""
    timer = _timer_stream()
    if timer is not None and stream.cuda_stream != timer.cuda_stream:  # by handle: a launcher names it raw
        stream.wait_stream(timer)


# A storage is refused in solve whatever its device (under the interpreter it
# is host memory, open to numpy); an honest file wanted only its address.
STORAGE_HINT = "; for a tensor's address, tensor.data_ptr() is allowed"


class RuleViolation(Exception):
    """Raised inside solve when it breaks a rule (solve may swallow it; the
    guard remembers the first violation either way)."""


class Guard:
    """Arms the rules around one call of solve; `violation` says what broke."""

    def __init__(self, submission: str | None = None, trusted=frozenset(), refused=(), refused_why: str = "",
                 whole_copies: bool = False):
        self.violation: str | None = None
        # The challenge's own refusals (judge.challenge_spec.Rules): operators
        # that only move data, where moving the data is the job; or copies
        # of parts of tensors only (whole_copies_only).
        self._refused = frozenset(refused)
        self._whole_copies = bool(whole_copies)
        self._refused_why = refused_why or "this challenge's job"
        self._submission = os.path.abspath(submission) if submission else None
        self._trusted = frozenset(trusted)  # code objects of the judge's wrappers around Triton's launches
        self._mode = None
        self._originals: dict[str, object] = {}
        self._submission_globals: dict = {}
        self._wrapper_globals: dict = {}
        self._watching = False  # watch(): the mode stays in force after the file is imported
        self._in_solve = False  # within armed() (a flag the file may flip: either way is as strict)

    def flag(self, what: str, _audit=sys.audit) -> None:
        if self.violation is None:
            self.violation = what
        _audit("tritonjudge.violation", what)  # the audit hook answers the judge and ends the worker
        raise RuleViolation(what)

    def inside_triton(self, depth: int = 2) -> bool:
        """Is the innermost of (the judge's wrapper around a Triton launch,
        the submission's own code) on the stack the wrapper? Frames are told
        apart by their globals (reading a frame's code object raises an
        audit event, too dear for every operator); the wrapper's code object
        is confirmed by identity."""
        frame = sys._getframe(depth)
        trusted, mine = self._trusted, self._wrapper_globals
        theirs = self._submission_globals
        while frame is not None:
            scope = frame.f_globals
            if scope is theirs:
                return False
            if scope is mine and frame.f_code in trusted:
                return True
            frame = frame.f_back
        return False

    def watch(self) -> None:
        """From now on (the file imported), every operator in this thread is
        checked, wherever it comes from, by whose code asks for it
        (judge.worker.audit.origin): a finalizer the file left behind, or a
        torch function it patched that the worker then calls, runs under the
        rules as solve does; the worker's own work goes on."""
        self._mode = self._make_mode()
        self._mode.__enter__()
        self._watching = True

    def bind(self, submission_globals: dict, wrapper_globals: dict) -> None:
        self._submission_globals = submission_globals
        self._wrapper_globals = wrapper_globals

    # --- dispatcher ------------------------------------------------------------

    def _make_mode(self):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        guard = self

        class OpGuard(TorchDispatchMode):
            def __getattribute__(self, name, _get=object.__getattribute__, _type=type):
                # The class's own __torch_dispatch__, whatever the instance holds:
                # torch reads it from the instance, and a method of the file's
                # bound to the mode there for one torch.mm ran it unchecked.
                if name == "__torch_dispatch__":
                    return _type(self).__dict__["__torch_dispatch__"].__get__(self, _type(self))
                return _get(self, name)

            @classmethod
            def _should_skip_dynamo(cls):
                # Otherwise torch wraps __torch_dispatch__ in a dynamo guard
                # that imports torch._dynamo (sympy and ~900 modules, 2-5 s
                # in a worker) at the first torch op of a submission's solve.
                return False

            def __torch_dispatch__(self, func, types, args=(), kwargs=None, _audit=sys.audit, _tensor=torch.Tensor,
                                   guard=guard, _identify=identify, _known=KNOWN):
                # The seal first: the tables below are module names, which a
                # file reaching a judge function's globals rebinds for one call.
                _audit("tritonjudge.check_seal")
                kwargs = kwargs or {}
                # Decided on the operator the schema names, and that one runs
                # (judge.worker.op_identity): not the object handed in.
                try:
                    op = _identify(func, _known)
                except LookupError:
                    op = None
                subclasses = [t for t in types if t is not _tensor]  # (bound: a list's item was the file's to set)
                if subclasses:
                    # A tensor subclass's own __torch_dispatch__ would run
                    # after this check, with this mode set aside.
                    guard.flag(f"rule: no torch compute in solve: a tensor subclass with its own "
                               f"__torch_dispatch__ ({', '.join(t.__name__ for t in subclasses)}) reached {func}")
                foreign = refused_in(args, kwargs)
                if foreign:
                    guard.flag(f"rule: no objects whose own code torch runs inside an operator: {foreign} "
                               f"reached {func} (judge.worker.argument_types)")
                if guard._watching and not guard._in_solve:
                    # Outside solve (the worker's own work, or the file's
                    # code run by it): whose code asks, told by the audit
                    # hook, unless everyone may. In solve, the cheaper walk
                    # below, as the latency of a short kernel includes that
                    # host path; and the timer's own work between calls
                    # stays cheap, so that its loop is not host-bound.
                    if not guard.allowed_to_all(op, args, kwargs):
                        where = _origin()
                        if where != "judge":
                            guard.check_op(func, op, args, kwargs, where == "triton")
                else:
                    guard.check_op(func, op, args, kwargs, guard.inside_triton())
                if timer_stream() is not None:
                    import torch
                    after_start(torch.cuda.current_stream())
                return (func if op is None else op[RUN])(*args, **kwargs)

        # Immutable, as built-in types are: torch hands the mode out, and a file set its class's
        # __torch_dispatch__ to a pass-through for a moment (judge.worker.frozen_class).
        frozen_class.freeze(OpGuard)
        return OpGuard()

    def _copies(self, name: str, op, args=(), kwargs=None) -> bool:
        """Does this operator move data, in a challenge that refuses torch's
        copies? Its refused names, and any other form that writes into a
        tensor it was given, an allocation's or a fill's aside (aten's .out
        forms of lift_fresh_copy or _unsafe_view copied a matrix too)."""
        if not self._refused and not self._whole_copies:
            return False
        schema = op[SCHEMA] if op is not None else None
        moves = (name in self._refused or name in COPY_FORMS
                 or bool(getattr(schema, "is_mutable", False)) and name not in WRITES_NO_DATA
                 # fill_ given a one-element tensor copies that element (aten.fill_.Tensor):
                 # element by element it had copied, transposed and reversed whole arrays.
                 or name in FILL_OPS and op is not None and op[OVERLOAD] == "Tensor")
        return moves and (bool(self._refused) or not copy_extent.all_whole(name, args, kwargs))

    def check_op(self, func, op, args, kwargs, inside_triton: bool = False) -> None:
        """`func` as handed to the guard (named in messages), `op` its
        Identity (judge.worker.op_identity), or None: refused in solve."""
        name = op[NAME] if op is not None else f"<an operator without a known schema: {func!r}>"
        unusual = other_layout(args, kwargs)
        if unusual:
            self.flag(f"rule: no torch compute in solve: aten.{name} ({func}) was given {unusual}, whose operators "
                      "compute where a plain tensor's would only view or copy; keep tensors strided")
        if inside_triton:
            if name not in TRITON_OPS:
                self.flag(f"rule: no torch compute in solve: aten.{name} was called ({func}) from code "
                          "that Triton ran (a hook), which runs under the same rules as solve")
                return
            # What Triton may do and solve may not (.item(), a refused copy) is
            # Triton's only if the audit hook says the code is: the cheap walk
            # above tells frames by their globals, and a grid function made by
            # exec with globals of its own passed for Triton's. If not, solve's rules.
            if not ((name == "_local_scalar_dense" or self._copies(name, op, args, kwargs))
                    and _origin() == "submission"):
                return
        if name == "_local_scalar_dense":
            self.flag("rule: no host round trip of the data: .item() (aten._local_scalar_dense) in solve (no "
                      "torch tensor is read on the host there: keep host constants in Python numbers or lists)")
        if name not in ALLOWED_OPS:
            self.flag(f"rule: no torch compute in solve: aten.{name} was called "
                      f"({func}); write the computation as a Triton kernel")
        if copy_extent.writes_into_band(op, args, kwargs):
            self.flag(f"rule: no writes outside the tensors solve is given: aten.{name} ({func}) wrote into the "
                      "memory around one (its guard band)")
        if self._copies(name, op, args, kwargs):
            what = "no torch copies" if self._refused else "torch copies of whole tensors only (a scratch clone)"
            hint = ("; `x[...] = value` fills from a tensor (even a Python number becomes one): use x.fill_(value) or "
                    "x.zero_()" if name in FILL_OPS else "")
            self.flag(f"rule: {what} in solve in this challenge ({self._refused_why}): aten.{name} "
                      f"was called ({func}){hint}; write it as a Triton kernel")
        crossing = copy_extent.crossing(name, args, kwargs) if name in TRANSFER_OPS else None
        if crossing:
            self.flag(f"rule: no host round trip of the data: a copy from {crossing[0]} to {crossing[1]} in solve")

    @staticmethod
    def allowed_to_all(op, args, kwargs) -> bool:
        """An operator allowed whoever asks (an allocation, a view, a fill, a
        copy on one device): no need to find out whose it is. (A challenge's
        own refusals bind solve and the threads it starts: outside solve the
        worker's own copies, the timer's among them, stay cheap.) `op`: its
        Identity, or None (never allowed to all)."""
        if op is None:
            return False
        name = op[NAME]
        return name in ALLOWED_OPS and not (name in TRANSFER_OPS and copy_extent.crossing(name, args, kwargs)) \
            and not copy_extent.writes_into_band(op, args, kwargs) and not other_layout(args, kwargs)

    # --- Python-level methods (CPU tensors reach the host without dispatch) ---

    def _patch_host_methods(self) -> None:
        import torch
        guard = self
        for method in HOST_METHODS:
            original = getattr(torch.Tensor, method)
            # (torch.Tensor's own, or inherited from its C class: put back as it was, not copied down)
            self._originals[method] = original if method in vars(torch.Tensor) else None

            hint = STORAGE_HINT if method in ("untyped_storage", "storage") else ""

            def wrapper(tensor, *args, _method=method, _original=original, _guard=guard, _hint=hint, **kwargs):
                if not _guard.inside_triton():
                    _guard.flag(f"rule: no host round trip of the data: Tensor.{_method}() in solve (no torch "
                               "tensor is read on the host there, a table of the file's own either: keep host "
                               f"constants in Python numbers or lists{_hint})")
                return _original(tensor, *args, **kwargs)

            setattr(torch.Tensor, method, wrapper)

    def _unpatch_host_methods(self) -> bool:
        import torch
        intact = True
        for method, original in self._originals.items():
            current = torch.Tensor.__dict__.get(method)
            intact &= current is not None and getattr(current, "__name__", "") == "wrapper"
            if original is None:
                delattr(torch.Tensor, method)
            else:
                setattr(torch.Tensor, method, original)
        self._originals.clear()
        return intact

    # --- threads -----------------------------------------------------------------

    def _patch_threads(self) -> None:
        """Threads started during solve run under a guard of their own (the
        dispatcher's modes are per thread). threading's own start, as it was
        before the file: one the file put in its place at import (a chain of
        builtins that started another thread with the real start) is no
        original."""
        import threading
        guard, original_start = self, _THREAD_START
        if vars(threading.Thread).get("start") is not original_start and self.violation is None:
            self.violation = "rule: solve tampered with the judge's operator guard (threading.Thread.start replaced)"
        self._thread_start = original_start

        # (bound in defaults, not a closure: its cells were a plain write
        # away, through threading.Thread.start.__closure__, during solve)
        def start(thread, *args, _guard=guard, _original=original_start, _started=_start_guarded, **kwargs):
            return _started(_guard, _original, thread, *args, **kwargs)

        threading.Thread.start = self._thread_wrapper = start

    def _unpatch_threads(self) -> bool:
        import threading
        intact = vars(threading.Thread).get("start") is self._thread_wrapper
        threading.Thread.start = self._thread_start
        return intact

    def _check_on_top(self, when: str) -> None:
        """The guard's mode is the innermost and torch's Python dispatch key is
        not switched off for this thread (both only through gated entry
        points: judge.worker.gates; checked all the same)."""
        import torch
        from torch.utils._python_dispatch import _get_current_dispatch_mode
        python_key = torch._C.DispatchKey.Python
        if _get_current_dispatch_mode() is not self._mode \
                or torch._C._dispatch_tls_is_dispatch_key_excluded(python_key):
            self.violation = self.violation or (f"rule: solve tampered with the judge's operator guard "
                                                f"(its dispatch mode was not in force {when})")

    @contextlib.contextmanager
    def armed(self, _audit=sys.audit):
        from torch.utils._python_dispatch import _get_current_dispatch_mode
        own_mode = not self._watching  # once watching, the mode stays in force between calls too
        if own_mode:
            self._mode = self._make_mode()
        self._patch_host_methods()
        from judge.worker import host_tensors
        builders = host_tensors.patch_builders(self.inside_triton)
        self._patch_threads()
        if own_mode:
            self._mode.__enter__()
        self._check_on_top("as solve started")
        self._in_solve = SOLVING[0] = True
        try:
            yield self
        finally:
            _audit("tritonjudge.check_seal")  # (and at every operator and launch in solve)
            self._in_solve = SOLVING[0] = False
            if not self._unpatch_threads() and self.violation is None:
                self.violation = "rule: solve tampered with the judge's operator guard (threading.Thread.start replaced)"
            self._check_on_top("when solve returned")
            if own_mode and _get_current_dispatch_mode() is self._mode:
                self._mode.__exit__(None, None, None)
            if not (self._unpatch_host_methods() & host_tensors.unpatch_builders(builders)) and self.violation is None:
                self.violation = "rule: solve tampered with the judge's operator guard (tensor methods replaced)"
            if self.violation is not None:
                sys.audit("tritonjudge.violation", self.violation)


def _origin() -> str:
    """Whose operator this is: "judge", "triton" or "submission", as the
    audit hook tells from the stack (judge.worker.audit)."""
    box: list = []
    sys.audit("tritonjudge.origin", box)
    return box[0] if box else "submission"


def gate_codes() -> tuple[set, set]:
    """The guard's code that may push and pop its modes or start a thread
    through the gates (judge.worker.gates), and the code that may start
    threads (each then under a guard: judge.worker.guarded_threads)."""
    return ({Guard.armed.__wrapped__.__code__, Guard.watch.__code__, _run_guarded.__code__, starter_code()},
            {_start_guarded.__code__, starter_code()})
