"""Triton kernel launches, counted in the worker: the rule that solve
launches at least one, and the CUDA streams the timer must wait for.

Triton's launch entry points are wrapped once, before the file is
imported. The wrappers' code objects are handed to the operator guard and
the audit hook (judge.worker.rules, judge.worker.audit): what runs below
them is Triton's own machinery, except the submission's own functions that
Triton calls (hooks), which stay under the rules. The guard tells the
wrappers' frames by this module's globals (Guard.bind).
"""

from __future__ import annotations

import sys


def launched(_audit=sys.audit) -> int:
    """Kernel launches so far (solve's count is the difference around it),
    as the audit hook counted them (count_launch)."""
    box: list = []
    _audit("tritonjudge.launches", box)
    return box[0] if box else 0


def count_launch(_audit=sys.audit) -> None:
    """One more kernel launch, from a launch wrapper below once Triton's
    launch returned, counted in the audit hook (judge.worker.audit): a
    count in the worker's Python was the file's to raise, and a file with
    no kernel met the launch rule."""
    _audit("tritonjudge.launch")


FAILED = ("launch failed",)  # the audit hook's record of a launch that failed (judge.worker.audit.memo)


def failed(status: str, message: str) -> None:
    """A launch that failed as a GPU's does for good (a device-side assert
    loses the CUDA context; a race makes the output wrong): recorded in the
    audit hook, so that solve catching what the launch raised changes
    nothing. Under the interpreter the exception was the file's to catch,
    and whether a launch failed told it one bit of the data."""
    from judge.worker import audit
    if audit.memo(FAILED) is None:  # the first failure stands
        audit.memo(FAILED, (status, message))


def failure() -> tuple[str, str] | None:
    """The (status, message) of the first launch that failed since forget_failure()."""
    from judge.worker import audit
    return audit.memo(FAILED)


def forget_failure() -> None:
    from judge.worker import audit
    audit.memo(FAILED, None)


def stream_fence():
    """(fence, launched, forget) for the audit hook (judge.worker.audit),
    bound now, before the file. fence(handle): a kernel is about to launch
    on the CUDA stream `handle` (a raw cudaStream_t; Triton's launcher says
    so through the hook, judge.worker.launcher_source.fenced). During a timed
    call that stream waits for the timer's, so the kernel cannot run in the
    head start before the call's start event, and the end event waits for
    it (judge.timing). Anyone may ask: a fence only adds an ordering.
    The streams launched on are kept here, where only the hook reaches
    them: a set in this module's globals was the file's to empty (a launch
    wrapper's __globals__), and the end event then waited for none."""
    import torch

    from judge.worker.rules import after_start
    current, external, type_, int_ = torch.cuda.current_stream, torch.cuda.ExternalStream, type, int
    streams: set = set()

    def fence(handle) -> None:
        if type_(handle) is not int_:
            return
        here = current()
        stream = here if here.cuda_stream == handle else external(handle)
        streams.add(stream)
        after_start(stream)

    return fence, streams.copy, streams.clear


def take_streams(_audit=sys.audit) -> set:
    """The streams launched on since the timer's fence went up for the
    current timed call (the hook forgets them there, judge.worker.rules.fence:
    from timing.measure only), or since the last timed call."""
    box: list = []
    _audit("tritonjudge.launched_streams", box)
    return set(box[0]) if box else set()


def hook_triton(cuda: bool, submission: str | None = None) -> tuple[frozenset, list]:
    """Wrap Triton's launches (compiled or interpreted, autotuned or not).
    With `submission`, a launch runs only the file's own kernels
    (judge.worker.kernel_origin). Returns the wrappers' code objects, and
    the (class, attribute) pairs to seal."""
    from triton.runtime import autotuner, jit

    from judge import check_sums

    codes, sealed = set(), []
    foreign = None
    if submission is not None:
        from judge.worker import kernel_origin
        foreign = kernel_origin.checker(submission, frozenset({check_sums.sums.__code__}))

    def own_kernel(kernel) -> None:
        broken = foreign(kernel) if foreign is not None else None
        if broken:
            from judge.worker import audit
            from judge.worker.rules import RuleViolation
            audit.report(broken)
            raise RuleViolation(broken)

    def wrap(cls, counted: bool):
        original = cls.run

        def run(self, *args, _audit=sys.audit, **kwargs):
            _audit("tritonjudge.check_seal")  # the seal, at every launch (judge.worker.seal)
            if counted:
                own_kernel(self)
            counting = counted and not kwargs.get("warmup", False)
            # Its stream is fenced from the launcher's C code, on every route
            # (stream_fence), so nothing here.
            result = original(self, *args, **kwargs)
            if counting:
                count_launch()  # counted once Triton's launch returned: a launch that raised is none
            return result

        cls.run = run
        codes.add(run.__code__)
        sealed.append((cls, "run"))

    def wrap_compiled(cls):
        # A kernel compiled ahead (fn.warmup(...), as Triton's fused-softmax
        # tutorial does) and launched as kernel[grid](...): counted as well.
        original = cls.__getitem__

        def getitem(self, grid):
            runner = original(self, grid)

            def launch(*args, _audit=sys.audit, **kwargs):
                _audit("tritonjudge.check_seal")
                own_kernel(getattr(getattr(self, "src", None), "fn", None))
                result = runner(*args, **kwargs)
                count_launch()
                return result
            return launch

        cls.__getitem__ = getitem
        codes.add(getitem.__code__)
        codes.update(c for c in getitem.__code__.co_consts if getattr(c, "co_name", None) == "launch")
        sealed.append((cls, "__getitem__"))
        # Loading its binary and building its launcher (a C stub compiled on
        # a new signature) is Triton's own work, when solve asks for it too.
        # Every route to a launch passes here first (its function and
        # launcher are made here): the file's own kernels only, also for
        # Triton's launcher object called directly, which no wrapper sees.
        load = cls._init_handles

        def init_handles(self, _audit=sys.audit):
            _audit("tritonjudge.check_seal")
            own_kernel(getattr(getattr(self, "src", None), "fn", None))
            return load(self)

        cls._init_handles = init_handles
        codes.add(init_handles.__code__)
        sealed.append((cls, "_init_handles"))

    wrap(jit.JITFunction, counted=True)
    wrap(autotuner.Autotuner, counted=False)
    if cuda:
        from triton.compiler.compiler import CompiledKernel
        wrap_compiled(CompiledKernel)
    try:
        from triton.runtime.interpreter import InterpretedFunction
        wrap(InterpretedFunction, counted=True)
    except ImportError:  # pragma: no cover - very old Triton
        pass
    return frozenset(codes), sealed
