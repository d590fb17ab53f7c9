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
reads helpers from) name JITFunction twins of them instead, and any other
interpreted function the code generator meets (a helper passed as a
constexpr, held in a closure or a tuple) is compiled as its twin too.

What runs is what was checked. Each function's twin and the body the
interpreter runs are made together, from one reading of its source, and
the interpreter runs only bodies made here (never Triton's own cache of
rewritten functions, nor the kernel object's rewriter: a file planted a
numpy body in the one and swapped the kernel's function under the other).
A helper runs only if a check compiled it; a check is reused only while
every global, module attribute and closure cell its code reads holds the
same object. That record lives in the audit hook (judge.worker.audit.memo),
which the file cannot reach. Arguments Triton's launcher cannot bind (an
unknown keyword) fail as they fail on a GPU. Where the front end itself
fails for another reason, the interpreter runs the kernel as before.
"""

from __future__ import annotations

import contextlib
import types

from judge.worker import audit

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
    _state.update(target=target, backend=backend, visited=None)
    if backend is not None:
        _twin_callees()
    return backend is not None


def check(kernel, args: tuple, kwargs: dict) -> tuple:
    """Raise the CompilationError a GPU would raise for this launch, if any;
    return (the kernel's function, the body the interpreter runs for it:
    judge.worker.interpret)."""
    fn = _function_of(kernel)
    if _state.get("backend") is None:
        _mark_runnable([fn])
        return fn, runnable(kernel)
    twin = _twin(kernel)
    args = tuple(_as_twin(a) for a in args)
    kwargs = {k: _as_twin(v) for k, v in kwargs.items()}
    with _tensor_methods_twinned():
        binding = _bind(twin, args, kwargs)  # what the GPU's launcher cannot bind fails here as there
    _check_options(binding[-1])
    with _tensor_methods_twinned():
        failure = _checked(kernel, twin, *binding)  # raises the CompilationError a GPU raises
    if failure is _NEEDS_ALLOCATOR:
        # Tensor descriptors made in the kernel need a global scratch on a
        # GPU, which Triton takes from triton.set_allocator's allocator at
        # the launch (the interpreter needs none): without one, Triton's error.
        from triton.runtime import _allocation
        if _allocation._allocator.get() is _allocation._NULL_ALLOCATOR:
            _allocation._NULL_ALLOCATOR(0, 0, None)
    elif failure is not None and failure is not _CANNOT_TELL:
        raise failure
    return fn, runnable(kernel)


def runnable(function):
    """The body the interpreter runs for the interpreted function
    `function` (a kernel or a helper it calls), made with the twin that was
    checked; a helper no check compiled is refused, as a GPU would not run it."""
    fn = _function_of(function)
    made = _made(fn)
    if audit.memo(("runnable", id(fn))) is not fn:
        raise RuntimeError(f"@triton.jit function {fn.__name__} was not compiled for this launch: on a GPU a "
                           "kernel calls the functions it was compiled with")
    return made[1]


def _function_of(kernel):
    """The function an interpreted function was made over: the one its
    rewriter keeps, as a GPU's JITFunction compiles the source it read
    when @jit was applied (setting kernel.fn afterwards changes neither)."""
    own = vars(kernel) if hasattr(kernel, "__dict__") else {}
    fn = getattr(own.get("rewriter"), "fn", None)
    if not isinstance(fn, types.FunctionType):
        fn = own.get("fn")
    if not isinstance(fn, types.FunctionType):
        raise TypeError("a @triton.jit function must wrap a Python function")
    return fn


def _mark_runnable(fns) -> None:
    for fn in fns:
        audit.memo(("runnable", id(fn)), fn)


_NEEDS_ALLOCATOR = object()  # a specialization that asks for a global scratch at its launch
_CANNOT_TELL = object()  # the front end failed on its own: the interpreter decides, as before
_MISSING = object()
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
    """The CompilationError of this launch's specialization, or
    _NEEDS_ALLOCATOR, _CANNOT_TELL or None; reused while what the compiled
    code reads is unchanged."""
    key = ("check", id(twin), repr(specialization), repr(sorted(rest.items())))
    kept = audit.memo(key)
    if kept is not None and _unchanged(kept[1]):
        return kept[0]
    # Options Triton's launcher cannot pack (an unknown keyword) fail here as on a GPU.
    packed = twin._pack_args(_state["backend"], options, bound, specialization, rest)
    visited = _state["visited"] = [_function_of(kernel)]
    try:
        result = _dependencies(twin) or _front_end(twin, packed)
    except Exception as exc:  # noqa: BLE001 - CompilationError is raised by check()
        from triton.compiler.errors import CompilationError
        if isinstance(exc, CompilationError):
            raise
        result = _CANNOT_TELL
    finally:
        _state["visited"] = None
    if result not in (None, _NEEDS_ALLOCATOR, _CANNOT_TELL) and _from_the_interpreter(result):
        result = _CANNOT_TELL
    if result is _CANNOT_TELL:
        visited = _reachable(visited[0])  # as before: what the kernel's globals name may run
    if result is None or result is _NEEDS_ALLOCATOR or result is _CANNOT_TELL:
        _mark_runnable(visited)
    audit.memo(key, (result, _reads(visited), twin))  # the twin kept alive: its id stays its own
    return result


def _reachable(fn) -> list:
    out, todo = [], [fn]
    while todo:
        fn = todo.pop()
        if any(f is fn for f in out):
            continue
        out.append(fn)
        todo += _made(fn)[3]
    return out


def _reads(fns) -> tuple:
    """(namespace, name, value) for every name the code of `fns` reads,
    in its globals, in the modules those name, and its closure cells."""
    seen, out = set(), []
    for fn in fns:
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        names = _names(fn.__code__)
        space = fn.__globals__
        for name in names:
            value = dict.get(space, name, _MISSING)
            out.append((space, name, value))
            if type(value) is types.ModuleType:
                inner = vars(value)
                out += [(inner, attr, dict.get(inner, attr, _MISSING)) for attr in names]
        for cell in fn.__closure__ or ():
            out.append((cell, None, _contents(cell)))
    return tuple(out)


def _unchanged(reads: tuple) -> bool:
    for space, name, value in reads:
        now = _contents(space) if name is None else dict.get(space, name, _MISSING)
        if now is not value:
            return False
    return True


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


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
    """The JITFunction the front end compiles for the interpreted function
    `kernel`: over the same code, its globals naming twins wherever they
    name interpreted functions."""
    return _made(_function_of(kernel))[0]


def _made(fn) -> tuple:
    """(twin, body the interpreter runs) of function `fn`, made together
    from one reading of its source, once (judge.worker.audit.memo)."""
    kept = audit.memo(("made", id(fn)))
    if kept is not None and kept[2] is fn:
        return kept
    from triton.runtime import interpreter
    from triton.runtime.jit import JITFunction
    body = interpreter.FunctionRewriter(fn).rewrite_ast()
    scope: dict = {}
    made = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    made.__kwdefaults__, made.__module__, made.__qualname__ = fn.__kwdefaults__, fn.__module__, fn.__qualname__
    made.__annotations__ = dict(fn.__annotations__)
    twin = JITFunction(made)
    reached: list = []  # the interpreted functions its globals name
    kept = (twin, body, fn, reached)
    audit.memo(("made", id(fn)), kept)  # before its globals: a kernel may reach itself through them
    audit.memo(("twin_of", id(twin)), fn)
    scope.update(_with_twins(fn.__globals__, {}, reached))
    return kept


def _as_twin(value):
    """A launch's argument as the GPU's launcher would see it: an
    interpreted function (a helper passed as a constexpr) as its twin."""
    from triton.runtime.interpreter import InterpretedFunction
    return _twin(value) if isinstance(value, InterpretedFunction) else value


def _twin_callees() -> None:
    """Whatever interpreted function Triton's code generator is about to
    call (through a constexpr argument, a closure, a tuple), it calls its
    twin, whose body it then compiles and checks."""
    from triton.compiler import code_generator
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    original = code_generator.CodeGenerator.call_Function

    def call_Function(self, node, fn, args, kws):
        if isinstance(fn, InterpretedFunction):
            fn = _twin(fn)
        if _state.get("visited") is not None and isinstance(fn, JITFunction):
            _state["visited"].append(_original_of(fn))
        return original(self, node, fn, args, kws)

    code_generator.CodeGenerator.call_Function = call_Function


def _original_of(twin):
    """The file's function behind a twin (the twin's own is a copy)."""
    kept = audit.memo(("twin_of", id(twin)))
    return kept if kept is not None else twin.fn


def _with_twins(namespace: dict, modules: dict, reached: list) -> dict:
    """`namespace` with each interpreted function named in it, directly or
    as an attribute of a module named in it, replaced by its twin (their
    functions added to `reached`)."""
    from triton.runtime.interpreter import InterpretedFunction
    out = dict(namespace)
    for name, value in list(namespace.items()):  # making a body adds Triton's names to its globals
        if isinstance(value, InterpretedFunction):
            try:
                out[name] = _twin(value)
            except TypeError:  # not over a function: left for the code generator to refuse
                continue
            reached.append(_function_of(value))
        elif type(value) is types.ModuleType and _holds_kernels(value):
            out[name] = _module_twin(value, modules, reached)
    return out


def _module_twin(module: types.ModuleType, modules: dict, reached: list) -> types.ModuleType:
    made = modules.get(id(module))
    if made is None:
        made = modules[id(module)] = types.ModuleType(module.__name__)
        made.__dict__.update(_with_twins(vars(module), modules, reached))  # after the memo: modules may name each other
    return made


def _holds_kernels(module: types.ModuleType) -> bool:
    """Whether the module names interpreted functions (triton.language's own
    @jit functions count); torch and numpy, as installed, name none."""
    import sys
    from triton.runtime.interpreter import InterpretedFunction
    if module.__name__.split(".")[0] in ("torch", "numpy") and sys.modules.get(module.__name__) is module \
            and getattr(module, "__file__", None):
        return False
    return any(isinstance(v, InterpretedFunction) for v in list(vars(module).values()))
