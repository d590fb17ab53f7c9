"""On the CPU, each kernel the interpreter launches first goes through the
GPU compiler's front end, as it would on a GPU.

Triton's interpreter runs a kernel's body as Python: whatever Python does,
a kernel may do there. The GPU compiles the body instead, and refuses
what is not Triton: a call to a function without @triton.jit, a global
that is not a constexpr, numpy on a block's data (`x.handle.data`), a
method Triton values do not have. A file that does any of these is a
compile_error on the GPU and was accepted on the CPU (wrong kernels and
cheats both). So before a launch's first run with a new specialization,
the worker builds its Triton IR exactly as a GPU compile starts: Triton's
own binder reads the arguments' types and specialization, and its code
generator builds the IR for the GPU the CPU mode describes (an H100, or a
T4 for `judge check --gpu t4`), without lowering or launching anything
(~40 ms a kernel). A CompilationError it raises is raised from the launch,
as the GPU raises it, and so is the RuntimeError Triton's JIT raises before
it compiles, when the kernel refers to a function that is not Triton's.

Under the interpreter every @triton.jit function is Triton's
InterpretedFunction, which the code generator does not know: each check
compiles fresh JITFunction "twins" of the kernel and of every interpreted
function it reaches, made from the same text as the bodies the interpreter
runs (judge.worker.twins, which also says what is reused and when). A
helper runs only if a check compiled it. Arguments Triton's launcher
cannot bind (an unknown keyword) fail as on a GPU, and where the front end
cannot compile a kernel for a reason of its own, the kernel is not run
(an error, never a run unchecked: probes made the check give up on purpose).
"""

from __future__ import annotations

import contextlib
import types

from judge.worker import audit, shared_memory, twins

_state = types.MappingProxyType({})  # target, backend: read-only once install() sets them (a name the seal keeps)


def install(capability: int = 90) -> bool:
    """Make the front end for a GPU of this compute capability, which
    check() runs before every interpreted launch (judge.worker.interpret);
    False where Triton cannot make that backend here (kernels then run
    unchecked)."""
    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend
        target = GPUTarget("cuda", capability, 32)
        backend = make_backend(target)
    except Exception:  # noqa: BLE001 - a Triton without the NVIDIA backend: kernels unchecked
        target = backend = None
    global _state
    # Read-only: a judge function's globals are within the file's reach
    # (f.__globals__, f.__closure__), and a file that set the backend to None
    # here had every kernel run unchecked.
    _state = types.MappingProxyType({"target": target, "backend": backend})
    if backend is not None:
        shared_memory.install(backend, target)
    from judge.worker import builtin_names
    builtin_names.record()  # before the file is imported: what counts as Triton's own builtins
    if backend is not None:
        from judge.worker import kernel_callees
        kernel_callees.police_callees()
    return backend is not None


def check(kernel, args: tuple, kwargs: dict) -> tuple:
    """Raise the error a GPU would raise for this launch, if any; return
    (the kernel's function, the body the interpreter runs for it, what the
    compiled code reads, and the ways each of its tests went when compiled:
    judge.worker.interpret holds the launch to both)."""
    fn = twins.function_of(kernel)
    jit_options = twins.jit_options(kernel)
    if _state.get("backend") is None:
        _mark_runnable([fn])
        return fn, runnable(kernel), (), None
    args = tuple(_as_twin(a) for a in args)
    kwargs = {k: _as_twin(v) for k, v in kwargs.items()}
    binding = _bind(_binding_twin(fn, jit_options), args, kwargs)  # what the GPU's launcher cannot bind fails here as there
    _check_options(binding[-1])
    failure, reads, decisions = _checked(fn, jit_options, *binding)
    if failure is _NEEDS_ALLOCATOR:
        # Tensor descriptors made in the kernel need a global scratch on a
        # GPU, which Triton takes from triton.set_allocator's allocator at
        # the launch (the interpreter needs none): without one, Triton's error.
        from triton.runtime import _allocation
        if _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
            _allocation._NULL_ALLOCATOR(0, 0, None)
    elif failure is not None:
        raise failure
    return fn, runnable(kernel), reads, decisions


def runnable(function):
    """The body the interpreter runs for the interpreted function
    `function` (a kernel or a helper it calls), made from the text that was
    checked; a function no check compiled is refused, as a GPU would not run it."""
    fn = twins.function_of(function)
    body = twins.made(fn)[2]
    if _state.get("backend") is not None and audit.memo(("runnable", id(fn))) is not fn:
        raise RuntimeError(f"@triton.jit function {fn.__name__} was not compiled for this launch: on a GPU a "
                           "kernel calls the functions it was compiled with")
    return body


class _Checked:
    """A combine function as the interpreter's reduce and scan call it (.fn)."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


def route_combine_functions(interpreter) -> frozenset:
    """The interpreter ran a generic tl.reduce's or tl.associative_scan's
    combine function by its raw Python (combine_fn.fn), not the body checked
    and rewritten: a print in it was Python's print, which the file read
    back, and a .fn set after @jit ran plain Python on every element (both
    accepted, with numpy doing the work). Now the checked body, as for any
    helper a kernel calls (runnable). Returns the code that calls it, which
    the audit hook takes for the worker's own (judge.worker.interpret.HELPER_CALLS)."""
    codes = set()
    for cls, method in ((getattr(interpreter, "ReduceOps", None), "generic_reduce"),
                        (getattr(interpreter, "ScanOps", None), "generic_scan")):
        original = getattr(cls, method, None)
        if original is None:
            continue

        def checked(self, input, _original=original):
            combine = self.combine_fn
            self.combine_fn = _Checked(runnable(combine))
            try:
                return _original(self, input)
            finally:
                self.combine_fn = combine

        setattr(cls, method, checked)
        codes.add(checked.__code__)
    return frozenset(codes)


def _mark_runnable(fns) -> None:
    for fn in fns:
        audit.memo(("runnable", id(fn)), fn)


_NEEDS_ALLOCATOR = object()  # a specialization that asks for a global scratch at its launch
MAX_THREADS_PER_BLOCK = 1024  # every NVIDIA GPU the CPU mode describes (the H100, the T4)


def _as_twin(value):
    """A launch's argument as the GPU's launcher would see it: an
    interpreted function (a helper passed as a constexpr) as a JITFunction
    over the same code (the check compiles a fresh twin of it)."""
    from triton.runtime.interpreter import InterpretedFunction
    if type(value) is InterpretedFunction:
        return _binding_twin(twins.function_of(value), twins.jit_options(value))
    # One inside a tuple (a NamedTuple "closure" of a @jit function and its
    # arguments): Triton's specializer refused an interpreted one there, an
    # honest pattern of Triton's own tests (runtime_error on the CPU only).
    from judge.worker.kernel_callees import _plain_namedtuple
    kind = type(value)
    if (kind is tuple or _plain_namedtuple(kind)) and any(type(v) is InterpretedFunction for v in value):
        items = [_as_twin(v) for v in value]
        return tuple(items) if kind is tuple else kind(*items)  # only a generated constructor runs
    return value


def _binding_twin(fn, jit_options: dict):
    """A JITFunction over `fn` for binding a launch's arguments and naming
    its specialization (one per function: its id is part of the key)."""
    kept = audit.memo(("bind", id(fn)))
    if kept is not None and kept[1] is fn:
        return kept[0]
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    # Over a copy whose globals name the binding twins of the @jit functions
    # it calls: Triton hashes a constexpr @jit function with what it calls,
    # and refused an interpreted one there ("Unsupported function
    # referenced"), so an honest @jit activation that called another @jit
    # helper, passed as a constexpr, was a compile_error on the CPU only.
    scope: dict = {}
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__module__, copy.__qualname__ = fn.__kwdefaults__, fn.__module__, fn.__qualname__
    copy.__annotations__ = dict(fn.__annotations__)
    twin = JITFunction(copy, **jit_options)
    audit.memo(("bind", id(fn)), (twin, fn))  # before its globals: a function may reach itself through them
    audit.memo(("origin", id(twin)), (fn, jit_options))
    bound = dict(fn.__globals__)
    for name, value in list(bound.items()):
        if type(value) is InterpretedFunction:
            try:
                bound[name] = _binding_twin(twins.function_of(value), twins.jit_options(value))
            except TypeError:  # not over a function: the check refuses it if the kernel calls it
                continue
    scope.update(bound)
    return twin


def _bind(twin, args: tuple, kwargs: dict) -> tuple:
    """(options, bound arguments, specialization, compile options: num_warps,
    num_stages...), split as JITFunction.run splits a launch's arguments."""
    from triton import knobs
    options = dict(kwargs)  # as JITFunction.run completes them
    options["debug"] = options.get("debug", twin.debug) or knobs.runtime.debug
    options["instrumentation_mode"] = knobs.compilation.instrumentation_mode
    bound, specialization, rest = _binder(twin)(*args, **options)
    return options, bound, specialization, rest


def too_big(options: dict) -> bool:
    """Whether a launch with these options raises OutOfResources on a GPU
    (an autotuner's config: Triton's benchmark then gives it infinity)."""
    from triton.runtime.errors import OutOfResources
    if _state.get("backend") is None:
        return False
    try:
        _check_options(dict(options))
    except OutOfResources:
        return True
    except Exception:  # noqa: BLE001 - refused otherwise: raised when the config runs, as on a GPU
        return False
    return False


def _check_options(rest: dict) -> None:
    """Raise what a GPU raises for these options: the backend's own checks
    (num_warps a power of two: an AssertionError from Triton's CUDAOptions,
    before compiling), and more threads than a block may have (Triton's
    OutOfResources when the compiled kernel is loaded: num_warps=64)."""
    from triton.runtime.errors import OutOfResources
    opts = _state["backend"].parse_options(rest)
    threads = opts.num_warps * 32
    if threads > MAX_THREADS_PER_BLOCK:
        raise OutOfResources(threads, MAX_THREADS_PER_BLOCK, "threads")


def _checked(fn, jit_options: dict, options: dict, bound, specialization, rest: dict):
    """(The CompilationError of this launch's specialization, or
    _NEEDS_ALLOCATOR, or None; what the compiled code reads), reused while
    that is unchanged. The check compiles fresh twins (judge.worker.twins)."""
    from triton.compiler.errors import CompilationError
    key = ("check", id(fn), repr(specialization), repr(sorted(rest.items())))
    kept = audit.memo(key)
    if kept is not None and twins.unchanged(kept[1]):
        return kept[0], kept[1], kept[3]
    state = {"twins": {}, "origin": {}, "reads": [], "visited": [fn], "decisions": {}}
    audit.memo(("checking",), state)
    try:
        twin = twins.fresh(fn, state, jit_options)
        # Options Triton's launcher cannot pack (an unknown keyword) fail here as on a GPU.
        packed = twin._pack_args(_state["backend"], options, bound, specialization, rest)
        try:
            with _tensor_methods_twinned(state):
                result = _dependencies(twin) or _front_end(twin, packed)
        except CompilationError:
            raise
        except Exception as exc:  # noqa: BLE001 - not run unchecked: a probe made the check fail on purpose
            raise RuntimeError(f"the GPU compiler's front end could not compile this kernel here "
                               f"({type(exc).__name__}: {exc}); it is not run unchecked") from exc
    finally:
        audit.memo(("checking",), None)
    reads = tuple(state["reads"])
    if not twins.unchanged(r for r in reads if r[2] is not twins._MISSING):
        changed_while_compiling()
    if result is None or result is _NEEDS_ALLOCATOR:
        _mark_runnable([f for f in state["visited"] if f is not None])
    decisions = types.MappingProxyType({k: frozenset(v) for k, v in state["decisions"].items()})
    audit.memo(key, (result, reads, twin, decisions))  # the twin kept alive: ids stay their own
    return result, reads, decisions


def changed_while_compiling() -> None:
    """What the compiled code reads changed while the kernel compiled or
    ran: code of the file's ran inside (a function called at compile time
    rebound the helper the kernel then called). A violation, as a GPU runs
    the kernel it compiled whatever the file changes."""
    message = ("rule: the file's code changed what a kernel reads while it compiled or ran (the kernel runs "
               "what was compiled)")
    audit.report(message)
    raise RuntimeError(message)


def _dependencies(twin):
    """The error a GPU's JIT raises before compiling, when it hashes what
    the kernel refers to: a function that is not a Triton one (a plain
    Python helper, numpy's). None when there is none."""
    try:
        twin.cache_key
    except Exception as exc:  # noqa: BLE001 - what the GPU's JIT would raise at this launch
        # Any failure of the hash is the GPU's too, at every launch (a
        # global the kernel names that cannot be copied made the check give
        # up, and the kernel then ran numpy on its blocks: accepted here).
        return exc
    return None


@contextlib.contextmanager
def _tensor_methods_twinned(state: dict):
    """tl.tensor's methods that are @jit functions of triton.language
    (x.sum(), x.to()...) are interpreted ones here: their fresh twins for
    the length of a check."""
    from triton.language import core
    swapped = []
    for name, value in list(vars(core.tensor).items()):
        # Under the interpreter triton.language sets a plain wrapper of the
        # @jit function as the method (a GPU sets the JITFunction itself).
        target = twins.wrapped_interpreted(value)
        if target is not None:
            swapped.append((name, value))
            setattr(core.tensor, name, twins.fresh(twins.function_of(target), state, twins.jit_options(target)))
    try:
        yield
    finally:
        for name, value in swapped:
            setattr(core.tensor, name, value)


def _front_end(twin, packed: tuple):
    """The CompilationError of building this specialization's IR, or None."""
    from triton._C.libtriton import ir
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError
    backend, target = _state["backend"], _state["target"]
    opts, signature, constexprs, attrs = packed
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    source = ASTSource(twin, signature, constexprs, attrs)
    from triton import knobs
    interpreting = knobs.runtime.interpret
    # Compiled as a GPU compiles it: under the interpreter's flag Triton's
    # own constexpr functions (triton.cdiv...) return plain ints, which
    # tl.static_range and the like then refuse (an honest kernel's
    # compile_error on the CPU only).
    knobs.runtime.interpret = False
    try:
        try:
            module = source.make_ir(target, opts, backend.get_codegen_implementation(opts),
                                    backend.get_module_map(), context)
        except CompilationError as exc:
            return exc
        needs_allocator = "tt.make_tensor_descriptor" in str(module)
        shared = shared_memory.needed(module, backend, opts, target.arch)  # lowers `module` in place
    finally:
        knobs.runtime.interpret = interpreting
    if shared is not None and shared > shared_memory.limit():
        # What the GPU's loader raises for this kernel (a compile_error).
        from triton.runtime.errors import OutOfResources
        return OutOfResources(shared, shared_memory.limit(), "shared memory")
    return _NEEDS_ALLOCATOR if needs_allocator else None


def _binder(twin):
    binder = getattr(twin, "_judge_binder", None)
    if binder is None:
        from triton.runtime.jit import create_function_from_signature
        binder = create_function_from_signature(twin.signature, twin.params, _state["backend"])
        twin._judge_binder = binder
    return binder
