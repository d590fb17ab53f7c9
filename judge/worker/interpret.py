"""CPU-mode patches for Triton's interpreter, installed in the worker only.

The interpreter computes tl.dot exactly in float32, but an Ampere-or-newer
GPU rounds float32 dot inputs to TF32 unless the kernel asks for "ieee". We
reproduce that rounding so that a kernel using the default tl.dot gets on a
laptop the wrong_answer it would get on an H100. Hopper's tensor cores take
the top 19 bits of each float32 and drop the rest (truncation; measured in
bench/device_probe.py), which is what we emulate.

The GPU compiler also rewrites a broadcast multiply-and-sum,
tl.sum(x[:, :, None] * y[None, :, :], axis=1), into a tl.dot at its default
(TF32) precision (measured on the H100: 7e-4 relative error for a kernel
without any tl.dot). The interpreter multiplies such broadcasts in float32;
we round their operands to TF32 as the GPU's rewritten dot does, when the
compiler rewrites it (M and N ≥ 16, the product summed over K as it is made,
not accumulated first) and tensor cores take it (K ≥ 8).

How the interpreter runs a launch's programs (their order, whether they can
finish in time, CUDA's grid limits): judge.worker.launch_watch.

@triton.autotune cannot benchmark without a GPU ("0 active drivers"); on CPU
every config is taken to cost the same, so the first (valid) config runs.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

TF32_MASK = np.uint32(0xFFFFE000)  # keep sign, exponent and 10 mantissa bits


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & TF32_MASK).view(np.float32)


def _outer_broadcast(x, y) -> bool:
    """x[:, :, None] * y[None, :, :] broadcast to (M, K, N) with M, N ≥ 16:
    the product the GPU compiler turns into a TF32 dot when it is summed
    over its middle axis (Triton's CombineBroadcastMulReducePattern checks M
    and N only; with K = 8 the H100 showed TF32's error, 8.4e-4). K ≥ 8, the
    K of a TF32 tensor-core instruction: below it the dot is computed by
    FMAs, in float32."""
    return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == np.float32
            and y.dtype == np.float32 and x.ndim == 3 and y.ndim == 3 and x.shape == y.shape
            and x.shape[0] >= 16 and x.shape[2] >= 16 and x.shape[1] >= 8
            and x.strides[2] == 0 and y.strides[0] == 0 and x.strides[1] != 0 and y.strides[1] != 0)


def install(emulate_tf32: bool = True) -> None:
    from triton._C.libtriton import ir
    from triton.runtime import autotuner, interpreter

    from judge.worker import arithmetic, gpu_builder, kernel_output

    from judge.worker import launch_watch
    launch_watch.watch(interpreter.InterpreterBuilder)
    if emulate_tf32:
        builder = interpreter.InterpreterBuilder
        original_dot = builder.create_dot

        def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
            tf32 = input_precision == ir.INPUT_PRECISION.TF32
            if tf32 and a.data.dtype == np.float32 and b.data.dtype == np.float32:
                a = interpreter.TensorHandle(round_to_tf32(a.data), a.dtype.scalar)
                b = interpreter.TensorHandle(round_to_tf32(b.data), b.dtype.scalar)
            return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

        builder.create_dot = create_dot
        original_sum = interpreter.ReduceOps.sum

        def tf32_sum(self, input):
            # A dot only when summed over K as it is made: a product accumulated
            # first stays float32 on the GPU. (The multiply's operands are kept
            # on its result by judge.worker.arithmetic.)
            operands = arithmetic.product_operands(input.handle)
            if operands is not None and self.axis is not None and self.axis % 3 == 1 \
                    and arithmetic.product_expansions(input.handle) == (2, 0) and _outer_broadcast(*operands):
                rounded = round_to_tf32(operands[0]) * round_to_tf32(operands[1])
                return self.to_tensor(np.sum(rounded, axis=1, keepdims=self.keep_dims), input.dtype)
            return original_sum(self, input)

        interpreter.ReduceOps.sum = tf32_sum

    bench = autotuner.Autotuner._bench

    def equal_cost(self, *args, config, **meta):
        # A config the GPU cannot run (more threads than a block may have,
        # more shared memory than it has) costs infinity there, as Triton's
        # own benchmark makes it; the rest cost the same, so the first of
        # them runs.
        from judge.worker import frontend, shared_memory
        if frontend.too_big(config.all_kwargs()) or not shared_memory.config_fits(self, args, config, meta):
            return [float("inf")] * 3
        if _runs_its_benchmark(self, config):
            # A GPU's benchmark runs each config's call, hooks included, many
            # times on the real arguments: a kernel that adds into its output
            # (atomics or a load and a store) without reset_to_zero, or changes
            # its input in place without restore_value, is left with that many
            # runs' work. Once per config here, which is enough to show it, and
            # an odd number of runs in all (a reversal in place run twice is
            # undone; the GPU's count is whatever its clock allows).
            twice = config is self.configs[0] and len(self.configs) % 2 == 0

            def once(call, quantiles):
                call()
                if twice:
                    call()
                return [0.0, 0.0, 0.0]

            # (Triton's do_bench is a cached property: set for this call only.)
            cached = self.__dict__.pop("do_bench", _NOTHING)
            self.__dict__["do_bench"] = once
            try:
                bench(self, *args, config=config, **meta)
            finally:
                self.__dict__.pop("do_bench", None)
                if cached is not _NOTHING:
                    self.__dict__["do_bench"] = cached
        return [0.0, 0.0, 0.0]

    def no_disk_cache(self, tuning_key, configs, bench_fn):
        bench_fn()
        return False

    def create_assert(self, condition, message):
        # tl.device_assert in a kernel compiled for debugging: on a GPU a failed
        # one is a device-side assert, a CUDA error the launch does not survive.
        if not np.asarray(condition.data).all():
            raise DeviceAssertFailed(f"device-side assert triggered: {message}")

    interpreter.InterpreterBuilder.create_assert = create_assert
    made = interpreter.InterpretedFunction.__init__

    def __init__(self, fn, **kwargs):
        # @triton.jit on a GPU reads the function's source at once (Triton's
        # JITCallable): one made from a string has none, and is refused
        # there; the interpreter ran it as plain Python, never checked.
        import inspect
        try:
            inspect.getsourcelines(fn)
        except OSError as e:
            raise ValueError("@jit functions should be defined in a Python file") from e
        made(self, fn, **kwargs)

    interpreter.InterpretedFunction.__init__ = __init__
    convert = interpreter._implicit_cvt

    def _implicit_cvt(arg):
        # A float argument is an fp32 scalar in the kernel the GPU compiles
        # (alpha.to(x.dtype) works there); the interpreter left a Python float.
        # A bool is an int1 there; the interpreter made it a 32-bit integer
        # typed int1, which failed the launch.
        if isinstance(arg, bool):
            return interpreter.tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.bool_),
                                                                  interpreter.tl.int1), interpreter.tl.int1)
        if isinstance(arg, float):
            return interpreter.tl.tensor(interpreter.TensorHandle(np.array([arg], dtype=np.float32),
                                                                  interpreter.tl.float32), interpreter.tl.float32)
        return convert(arg)

    interpreter._implicit_cvt = _implicit_cvt
    gpu_builder.int_to_pointer_untagged(interpreter)
    arithmetic.install(interpreter)
    autotuner.Autotuner._bench = equal_cost
    autotuner.Autotuner.check_disk_cache = no_disk_cache
    kernel_output.print_from_interpreter(interpreter.InterpreterBuilder)
    # A loop's variable is a Triton scalar and print() is printf, as the GPU compiler reads them.
    from judge.worker import kernel_rewrites
    kernel_rewrites.install()
    gpu_builder.float_exchange(interpreter)
    # Programs that share memory without atomics race on a GPU: told here.
    from judge.worker import races
    races.install(interpreter.InterpreterBuilder)
    launch_watch.last_program_first(interpreter.InterpreterBuilder)  # outermost: the watches see the real ids
    # What is not Triton in a kernel fails to compile on the GPU: here too.
    from judge.worker import frontend
    frontend.install(capability=90 if emulate_tf32 else 75)
    _check_launches(interpreter)
    from judge.worker.guarded_threads import gate_threads
    gate_threads()


def _check_launches(interpreter) -> None:
    """Every interpreted launch: on the interpreter as the worker set it up
    (judge.worker.interpreter_state), its tensors checked (no host memory:
    judge.worker.host_tensors), its kernel through the GPU compiler's front
    end (judge.worker.frontend), libdevice computed on the host."""
    import inspect
    import threading

    from judge.worker import (audit, builtin_names, frontend, host_tensors, interpreter_state, kernel_rewrites,
                              launch_gate, launch_watch, launches, libdevice_cpu, races, twins, write_bounds)
    from judge.worker.compiled_stand_in import CompiledStandIn
    lock = threading.RLock()

    now = time.monotonic  # as before the file was imported (judge.worker.launch_watch)

    def run(self, *args, grid, warmup, **kwargs):
        # One launch at a time: the check swaps tl.tensor's methods for a
        # moment, and the interpreter itself patches triton.language for
        # the length of a launch.
        with lock, launch_gate.launching():
            interpreter_state.restore()
            host_tensors.check_launch(args, kwargs)
            if not warmup:
                # The file's code of this launch (its pre-run hooks, its grid
                # function) runs before the check, as Triton's JIT runs it
                # before compiling: none runs between the check and the body.
                hooks = list(self.pre_run_hooks)
                for hook in hooks:
                    hook(*args, **kwargs)
                files_code_ran = bool(hooks) or callable(grid)
                if callable(grid):
                    grid = _grid_as_compiled(self, grid, args, kwargs)
                elif isinstance(grid, list):
                    grid = tuple(grid)  # Triton's JIT reads a grid by len() and index: a list is one there
                if files_code_ran:  # put back again what it may have changed (~0.7 ms, so only then)
                    interpreter_state.restore()
            fn, body, reads, decisions = frontend.check(self, args, kwargs)  # what runs is what was checked
            if warmup:  # fn.warmup(...): compiled ahead on a GPU (its errors raised above), run later
                return CompiledStandIn(self, kwargs)  # judge.worker.compiled_stand_in
            _debug_as_compiled(interpreter, self, kwargs)
            kernel_rewrites.bind(fn.__globals__)  # the rewrite's helpers, as the worker made them
            names = list(inspect.signature(fn).parameters)
            audit.memo(("decisions",), decisions)  # the ways each if may go (kernel_rewrites.branch)
            timed = (id(self), *(g for g in (grid if isinstance(grid, tuple) else (grid,)) if type(g) is int))
            try:
                launch_watch.before_launch(timed)
                began = now()
                # After the check, which must see libdevice's stubs, the names as bound and tl.tensor's own methods.
                write_bounds.begin(args, kwargs)  # what its stores may reach
                with libdevice_cpu.during_launch(fn.__globals__), _math_methods(), \
                        builtin_names.during_launch(fn.__globals__, kwargs.get("num_warps") or 4):
                    result = interpreter.GridExecutor(body, names, grid, [])(*args, **kwargs)
                launch_watch.after_launch(timed, now() - began)
                return result
            except BaseException as exc:
                # A kernel that fails while it runs fails for good on a GPU (the
                # CUDA context is lost), and that the launch failed is data: kept
                # where solve cannot catch it away (judge.worker.launches.failed).
                if not isinstance(exc, launch_watch.GridRefused):
                    launches.failed(*_launch_failure(exc))
                raise
            finally:
                write_bounds.end()
                races.end_launch()
                audit.memo(("decisions",), None)
                if not twins.unchanged(reads):  # the file's code ran inside the launch
                    frontend.changed_while_compiling()

    def call(self, *args, **kwargs):
        # A @jit function called from a kernel: as Triton's own __call__,
        # but its patches of triton.language are undone when it returns
        # (Triton's leave them in place for the process's life, and the
        # front end would then compile against the interpreter's versions).
        scope = interpreter._patch_lang(self.fn)
        try:
            fn = frontend.runnable(self)  # never Triton's cache of rewritten bodies
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                raise interpreter.InterpreterError(repr(e)) from e
        finally:
            scope.restore()

    interpreter.InterpretedFunction.run = run
    interpreter.InterpretedFunction.__call__ = call
    global LAUNCH_CODE
    LAUNCH_CODE = run.__code__  # the native memory functions run below it only (judge.worker.raw_memory)
    combines = frontend.route_combine_functions(interpreter)  # a reduce's combine function: its checked body
    global HELPER_CALLS
    HELPER_CALLS = frozenset({call.__code__, kernel_rewrites.branch.__code__, *combines})


# The code of the worker's interpreted launch (set by _check_launches).
LAUNCH_CODE = None


# The code of the worker's call of a @jit helper from inside a kernel: to the
# audit hook it is the judge's own, as the launch around it is (it asks the
# front end's record for the helper's checked body); the helper's body below
# it is the file's, as the kernel's is.
HELPER_CALLS: frozenset = frozenset()


_NOTHING = object()


_MATH: dict = {}  # tl.math's builtins behind tl.tensor's math methods, as Triton made them (math_methods())


def math_methods() -> dict:
    """Recorded once, before the file is imported (judge.worker.interpreter_state
    puts the record back before every launch): a file that swaps tl.math.exp
    for a function of its own does not reach a kernel's x.exp() through it."""
    if not _MATH:
        from triton.language import core, math
        _MATH.update({name: getattr(math, name) for name in dir(math)
                      if hasattr(core.tensor, name) and callable(getattr(math, name))
                      and core.is_builtin(getattr(math, name)) and not core.is_builtin(getattr(core.tensor, name))})
    return _MATH


@contextlib.contextmanager
def _math_methods():
    """tl.tensor's math methods (x.exp(), x.sqrt(), ...) as tl.math's
    builtins, for one interpreted launch. Triton's interpreter patches
    tl.math's builtins for a launch but not the methods that forward to
    them, which then run with no semantic ('NoneType' object has no
    attribute 'to_tensor'): compile_error on the CPU for a kernel the GPU
    compiles. Only during the run: the GPU front end's check must see
    tl.tensor's own methods."""
    from triton.language import core

    from judge.worker.builtin_names import with_semantic  # the tensor is the builtin's first argument
    functions = dict(math_methods())
    kept = {name: core.tensor.__dict__.get(name, _NOTHING) for name in functions}
    for name, builtin in functions.items():
        setattr(core.tensor, name, with_semantic(builtin))
    try:
        yield
    finally:
        for name, value in kept.items():
            if value is _NOTHING:
                delattr(core.tensor, name)
            else:
                setattr(core.tensor, name, value)


def _runs_its_benchmark(tuner, config) -> bool:
    """Whether this config's benchmark call runs now: every config on the
    autotuner's first choice in the worker (its first case, where a kernel
    whose runs pile up shows it), and on every choice for a file that uses
    atomics; other choices would cost the interpreter's time for nothing."""
    import inspect
    nargs = getattr(tuner, "nargs", None) or {}
    key = repr([(name, nargs.get(name)) for name in tuner.keys])
    if getattr(tuner, "_judge_first_key", key) == key:
        tuner._judge_first_key = key
        return True
    atomics = getattr(tuner, "_judge_atomics", None)
    if atomics is None:
        try:
            atomics = "atomic_" in inspect.getsource(inspect.getmodule(tuner.base_fn) or tuner.base_fn)
        except (OSError, TypeError):
            atomics = False
        tuner._judge_atomics = atomics
    return atomics


def _grid_as_compiled(fn, grid, args: tuple, kwargs: dict) -> tuple:
    """A grid function called as Triton's JIT calls it on a GPU: with the
    launch's arguments as given (ints as ints), where the interpreter passed
    its own scalars, on which math.ceil and a negative floor division
    truncate (an honest tail block went missing)."""
    import inspect
    names = inspect.getfullargspec(fn.fn).args
    bound = inspect.getcallargs(fn.fn, *args, **{k: v for k, v in kwargs.items() if k in names})
    return tuple(grid(bound))


def _launch_failure(exc: BaseException) -> tuple[str, str]:
    """The verdict and words for a kernel that raised while it ran."""
    from judge.worker import races
    if isinstance(exc, races.RaceFound):  # programs of one launch sharing memory without atomics
        return "wrong_answer", str(exc)
    from judge.worker.write_bounds import StrayWrite
    if isinstance(exc, (DeviceAssertFailed, StrayWrite)):
        return "runtime_error", str(exc)
    said = f"{type(exc).__name__}: {exc}"
    if any(limit in said for limit in INTERPRETER_LIMITS):
        # What the GPU compiles and the interpreter has no code for
        # (inline assembly, tl.map_elementwise): the file is not judged on
        # CPU (judge.casework), rather than blamed for the interpreter.
        return "interpreter_too_slow", f"Triton's interpreter cannot run this kernel ({said})"[:2000]
    return "runtime_error", f"the kernel failed while it ran: {said}"[:2000]


INTERPRETER_LIMITS = ("not supported in interpreter mode", "'InterpreterBuilder' object has no attribute")


class DeviceAssertFailed(BaseException):
    """A failed tl.device_assert (or assert) in a kernel compiled for
    debugging: runtime_error, as the GPU's CUDA error is. A BaseException,
    so that the interpreter's own `except Exception` passes it on."""


def _debug_as_compiled(interpreter, fn, kwargs: dict) -> None:
    """The interpreter's debug option for this launch, as Triton's JIT sets
    the compiler's: the launch's, else the kernel's @jit(debug=...), or
    TRITON_DEBUG (the interpreter's own is always off: a failed
    tl.device_assert went unseen where the GPU stops)."""
    import dataclasses

    from triton import knobs
    own = getattr(fn, "kwargs", None) or {}  # what @jit was given (InterpretedFunction keeps it there)
    debug = bool(kwargs.get("debug", own.get("debug")) or knobs.runtime.debug)
    builder = interpreter.interpreter_builder
    if bool(getattr(builder.options, "debug", False)) != debug:
        builder.options = dataclasses.replace(builder.options, debug=debug)  # put back before the next launch
