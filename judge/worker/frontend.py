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
InterpretedFunction, which the code generator does not know: the kernel
is compiled as a twin whose globals (and the globals of the modules it
reads helpers from) name JITFunction twins of them instead. Where the
twin cannot be built, or the front end fails for any reason but a
compilation error, nothing is raised: the interpreter runs the kernel as
before.
"""

from __future__ import annotations

import contextlib
import types

_state: dict = {}  # target, backend, cache of checked specializations


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
    _state.update(target=target, backend=backend, checked={}, twins={}, modules={})
    return backend is not None


def check(kernel, args: tuple, kwargs: dict) -> None:
    """Raise the CompilationError a GPU would raise for this launch, if any."""
    from triton.compiler.errors import CompilationError
    if _state.get("backend") is None:
        return
    try:
        twin = _twin(kernel)
        if twin is None:
            return
        with _tensor_methods_twinned():
            binding = _bind(twin, args, kwargs)
    except TypeError as exc:
        if "specialize" in str(exc):
            raise  # an argument Triton's launcher cannot pass (a plain object): the same error on a GPU
        return
    except Exception:  # noqa: BLE001 - the front end cannot tell: the interpreter decides, as before
        return
    _check_options(binding[-1])
    try:
        with _tensor_methods_twinned():
            failure = _checked(kernel, twin, *binding)
    except CompilationError:
        raise
    except Exception:  # noqa: BLE001 - the front end cannot tell: the interpreter decides, as before
        return
    if failure is _NEEDS_ALLOCATOR:
        # Tensor descriptors made in the kernel need a global scratch on a
        # GPU, which Triton takes from triton.set_allocator's allocator at
        # the launch (the interpreter needs none): without one, Triton's error.
        from triton.runtime import _allocation
        if _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
            _allocation._NULL_ALLOCATOR(0, 0, None)
        return
    if failure is not None and not _from_the_interpreter(failure):
        raise failure


_NEEDS_ALLOCATOR = object()  # a specialization that asks for a global scratch at its launch
MAX_THREADS_PER_BLOCK = 1024  # every NVIDIA GPU the CPU mode describes (the H100, the T4)


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


def _checked(kernel, twin, options: dict, bound, specialization, rest: dict):
    """The CompilationError of this launch's specialization (cached), or
    _NEEDS_ALLOCATOR, or None."""
    key = (id(kernel), repr(specialization), repr(sorted(rest.items())))
    if key not in _state["checked"]:
        _state["checked"][key] = _dependencies(twin) or _front_end(twin, options, bound, specialization, rest)
    return _state["checked"][key]


def _dependencies(twin):
    """The error a GPU's JIT raises before compiling, when it hashes what
    the kernel refers to: a function that is not a Triton one (a plain
    Python helper, numpy's). None when there is none."""
    try:
        twin.cache_key
    except Exception as exc:  # noqa: BLE001 - what the GPU's JIT would raise at this launch
        said = str(exc)
        if "InterpretedFunction" in said:
            raise  # the twin still reached an interpreted function: the front end cannot tell
        # Any other failure of the hash is the GPU's too, at every launch (a
        # global the kernel names that cannot be copied made the check give
        # up, and the kernel then ran numpy on its blocks: accepted here).
        return exc
    return None


def _from_the_interpreter(failure: BaseException) -> bool:
    """Whether the failure came out of the interpreter's own code (a twin
    that still reached an interpreted function): not the kernel's fault,
    nothing a GPU would say."""
    from triton.runtime.interpreter import InterpreterError
    seen = 0
    exc = failure
    while exc is not None and seen < 20:
        if isinstance(exc, InterpreterError):
            return True
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.endswith(("runtime/interpreter.py", "runtime\\interpreter.py")):
                return True
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


@contextlib.contextmanager
def _tensor_methods_twinned():
    """tl.tensor's methods that are @jit functions of triton.language
    (x.sum(), x.to()...) are interpreted ones here: their twins for the
    length of a check."""
    from triton.language import core
    from triton.runtime.interpreter import InterpretedFunction
    swapped = []
    for name, value in list(vars(core.tensor).items()):
        if isinstance(value, InterpretedFunction):
            twin = _twin(value)
            if twin is not None:
                swapped.append((name, value))
                setattr(core.tensor, name, twin)
    try:
        yield
    finally:
        for name, value in swapped:
            setattr(core.tensor, name, value)


def _front_end(twin, options: dict, bound, specialization, rest):
    """The CompilationError of building this specialization's IR, or None."""
    from triton._C.libtriton import ir
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError
    backend, target = _state["backend"], _state["target"]
    opts, signature, constexprs, attrs = twin._pack_args(backend, options, bound, specialization, rest)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    source = ASTSource(twin, signature, constexprs, attrs)
    try:
        module = source.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(),
                                context)
    except CompilationError as exc:
        return exc
    if "tt.make_tensor_descriptor" in str(module):
        return _NEEDS_ALLOCATOR
    return None


def _binder(twin):
    binder = getattr(twin, "_judge_binder", None)
    if binder is None:
        from triton.runtime.jit import create_function_from_signature
        binder = create_function_from_signature(twin.signature, twin.params, _state["backend"])
        twin._judge_binder = binder
    return binder


def _twin(kernel):
    """A JITFunction over the same code as the InterpretedFunction `kernel`,
    whose globals name twins wherever they name interpreted functions."""
    twins = _state["twins"]
    if kernel in twins:
        return twins[kernel]
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    fn = getattr(kernel, "fn", None)
    if not isinstance(kernel, InterpretedFunction) or not isinstance(fn, types.FunctionType):
        return None
    scope: dict = {}
    made = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    made.__kwdefaults__, made.__module__, made.__qualname__ = fn.__kwdefaults__, fn.__module__, fn.__qualname__
    made.__annotations__ = dict(fn.__annotations__)
    twin = JITFunction(made, **getattr(kernel, "kwargs", {}))
    twins[kernel] = twin  # before its globals: a kernel may reach itself through them
    scope.update(_with_twins(fn.__globals__))
    return twin


def _with_twins(namespace: dict) -> dict:
    """`namespace` with each interpreted function named in it, directly or
    as an attribute of a module named in it, replaced by its twin."""
    from triton.runtime.interpreter import InterpretedFunction
    out = dict(namespace)
    for name, value in namespace.items():
        if isinstance(value, InterpretedFunction):
            twin = _twin(value)
            if twin is not None:
                out[name] = twin
        elif type(value) is types.ModuleType and _holds_kernels(value):
            out[name] = _module_twin(value)
    return out


def _module_twin(module: types.ModuleType) -> types.ModuleType:
    made = _state["modules"].get(id(module))
    if made is None:
        made = _state["modules"][id(module)] = types.ModuleType(module.__name__)
        made.__dict__.update(_with_twins(vars(module)))  # after the memo: modules may name each other
    return made


def _holds_kernels(module: types.ModuleType) -> bool:
    from triton.runtime.interpreter import InterpretedFunction
    if module.__name__.split(".")[0] in ("torch", "numpy"):  # triton.language's own @jit functions count
        return False
    return any(isinstance(v, InterpretedFunction) for v in list(vars(module).values()))
