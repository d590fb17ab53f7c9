"""The CPU mode's Triton interpreter, put back as the worker set it up before
every launch.

A GPU never runs Triton's interpreter, so whatever a file does to it changes
nothing there. Under the CPU mode the same change decides what a kernel
computes: a subtraction taught to add (InterpreterBuilder.create_fsub made
create_fadd), numpy's minimum made its maximum (the interpreter computes
tl.minimum with it), the worker's own TF32 emulation or race watch replaced
by Triton's originals. Each made a wrong kernel pass on the CPU that fails on
the H100. Refusing such a file instead would give it two verdicts: the GPU
judges its kernel.

So before the file is imported the worker records the interpreter as it set
it up (its own patches in place): the members of every class of
triton.runtime.interpreter and of triton.language's tensor and constexpr,
that module's globals, the native interpreter's
functions, numpy's and those of every numpy module loaded (tl.max is
numpy's nanmax, which finds fmax in its own module's globals: a file
swapped that module's `np` for a proxy whose fmax added; the race watch's
np.isin finds _in1d so), each module's class too (a module's class
answers for its attributes before its globals do), the methods and options of the interpreter's builder
instance, and the CPU mode's own settings (the front end's backend, the
libdevice stand-ins).
Before each launch it puts back any that changed. Nothing of the file runs
between that and the end of the launch (a kernel's body is checked by the
GPU compiler's front end first: judge.worker.frontend), so every kernel runs
on the interpreter the judge made, as every kernel on a GPU runs on the
compiler Triton made.
"""

from __future__ import annotations

import sys
import types

PYTHON_MODULES = ("builtins", "math", "cmath", "ast", "inspect", "time", "functools", "operator", "itertools")
_MISSING = object()
_UNSETTABLE = frozenset({"__dict__", "__weakref__"})
# (owner, its members as recorded, exact): an exact owner also loses members
# added since (a class: an added method would shadow a base's); a module
# keeps them (nothing of the interpreter reads a name it did not have).
# Immutable, and sealed once recorded (judge.worker.arming): the file can
# neither edit the record nor swap it.
_recorded: tuple = ()
_builder: tuple = ()  # (the builder instance, its own attributes as recorded)
_instances: tuple = ()  # ((an object the interpreter reads, its attributes as recorded), ...)
# numpy's floating-point error state (np.seterr: a context variable) for a
# launch: every error ignored, as a GPU ignores them. Set to raise, it turned
# a kernel's NaN into an exception out of the launch, so the file read its
# inputs one bit per launch by bisection; left to warn, each warning went
# through Python's warnings module, whose filters and showwarning are the
# file's, and carried as many bits as the kernel had lanes.
_errors: tuple = ()  # (numpy's context variable, the state a launch runs in)


def _owners() -> list[tuple[object, bool]]:
    import numpy
    from triton._C.libtriton import interpreter as native
    from triton.runtime import interpreter

    from judge.worker import cpu_cuda, frontend, interpret, libdevice_cpu, shared_memory
    classes = [value for value in vars(interpreter).values()
               if isinstance(value, type) and value.__module__ == interpreter.__name__]
    # And the CPU mode's own settings: the front end's GPU backend (None
    # turned its check off), the GPU described and its shared memory, as the
    # names their modules bind (read-only tables, but a judge function's
    # globals are within the file's reach: f.__globals__), and the numpy
    # stand-ins for libdevice.
    # triton.language's values, whose methods a kernel calls: a method a file
    # adds there runs on the data under the interpreter (on the IR on a GPU).
    from triton.language import core
    language = [core.tensor, core.constexpr]
    # And the GPU compiler's front end that checks each kernel first (a file
    # that taught its code generator to pass anything had numpy run
    # unchecked): its modules and their classes, and the backend it uses.
    compiler = _compiler_modules()
    classes += [value for module in compiler for value in vars(module).values()
                if isinstance(value, type) and value.__module__ == module.__name__]
    backend = frontend._state.get("backend")
    numpys = [module for name, module in list(sys.modules.items())
              if name.startswith("numpy.") and isinstance(module, types.ModuleType)]
    # Python's own modules the interpreter and the launch's checks call by
    # name: tl.erf is math.erf, the front end parses with ast, the launch
    # reads inspect.signature and time.monotonic, and every block passes
    # through isinstance. A file had swapped each (math.erf made a ReLU;
    # inspect.signature swapped to set the interpreter's subtraction back to
    # an addition after the restore).
    python = [sys.modules[name] for name in PYTHON_MODULES if name in sys.modules]
    return [(interpreter, False), (native, False), (numpy, False)] + [(m, False) for m in compiler + numpys + python] \
        + [(cls, True) for cls in classes + language] \
        + [(libdevice_cpu.made(), True), (interpret.math_methods(), True)] \
        + [(vars(module), False) for module in (frontend, shared_memory, cpu_cuda)] \
        + ([(backend, True)] if backend is not None and hasattr(backend, "__dict__") else [])


def _compiler_modules() -> list:
    import importlib
    names = ("triton.compiler.code_generator", "triton.compiler.compiler", "triton.compiler.errors",
             "triton.runtime.jit", "triton.language", "triton.language.core", "triton.language.standard",
             "triton.language.math", "triton.language.semantic", "triton.backends.compiler",
             "triton.backends.nvidia.compiler")
    found = []
    for name in names:
        try:
            found.append(importlib.import_module(name))
        except ImportError:  # another Triton's layout: the rest are recorded
            continue
    return found


def _members(owner) -> dict:
    return owner if isinstance(owner, dict) else vars(owner)


def _set(owner, name: str, value) -> None:
    if isinstance(owner, dict):
        owner[name] = value
    else:
        setattr(owner, name, value)


def _delete(owner, name: str) -> None:
    if isinstance(owner, dict):
        del owner[name]
    else:
        delattr(owner, name)


def record() -> None:
    """Take the interpreter as it is now as the one every launch runs on."""
    global _recorded, _builder
    from triton.runtime import interpreter
    _recorded = tuple((owner, types.MappingProxyType(dict(_members(owner))), exact, type(owner))
                      for owner, exact in _owners())
    builder = interpreter.interpreter_builder
    _builder = (builder, types.MappingProxyType(dict(vars(builder))))
    # Objects the interpreter holds and reads the attributes of, changed in
    # place rather than rebound (object.__setattr__ on the builder's frozen
    # options dropped TF32 from tl.dot's choices; an attribute set on the
    # shared semantic instance saw every assigned block; an np.vectorize
    # stand-in given another pyfunc): their attributes recorded too.
    global _instances
    held = [builder.options, getattr(interpreter, "interpreter_semantic", None)]
    held += [value for value in vars(interpreter).values() if type(value).__name__ == "vectorize"]
    _instances = tuple((obj, types.MappingProxyType(dict(vars(obj)))) for obj in held
                       if obj is not None and hasattr(obj, "__dict__"))
    global _errors
    try:
        import numpy
        from numpy._core import _ufunc_config
        variable = _ufunc_config._extobj_contextvar
        with numpy.errstate(all="ignore"):
            _errors = (variable, variable.get())
    except (ImportError, AttributeError):  # pragma: no cover - a numpy without it (before 2.0)
        _errors = ()


def restore() -> list[str]:
    """Put back what changed since record(); returns what was put back
    (qualified names, for diagnosis)."""
    changed = []
    for owner, members, exact, kind in _recorded:
        if isinstance(owner, types.ModuleType) and type(owner) is not kind:
            owner.__class__ = kind  # (a module's class may be swapped for a subclass: any such swap is undone)
            changed.append(_name(owner, "__class__"))
        current = _members(owner)
        if exact:
            for name in [n for n in current if n not in members and n not in _UNSETTABLE]:
                _delete(owner, name)
                changed.append(_name(owner, name))
        for name, value in members.items():
            if name not in _UNSETTABLE and current.get(name, _MISSING) is not value:
                _set(owner, name, value)
                changed.append(_name(owner, name))
    for obj, members in _instances:
        current = vars(obj)
        for name in [n for n in current if n not in members]:
            object.__delattr__(obj, name)
            changed.append(_name(obj, name))
        for name, value in members.items():
            if type(value) is dict:  # (a cache, or a table: a fresh copy of the record, whatever is in it now)
                object.__setattr__(obj, name, dict(value))
            elif current.get(name, _MISSING) is not value:
                object.__setattr__(obj, name, value)
                changed.append(_name(obj, name))
    if _errors and _errors[0].get() is not _errors[1]:
        variable, value = _errors
        variable.set(value)  # in the launch's own context: the file's setting is gone for the kernel
        changed.append("numpy.seterr")
    if _builder:
        # The builder's state (the grid) is its own to change; its options
        # (default dot precision...) and a method set on the instance, which
        # shadows the class's, are put back.
        builder, members = _builder
        cls = type(builder)
        for name, value in list(vars(builder).items()):
            if members.get(name, _MISSING) is value:
                continue
            if name in members and (callable(members[name]) or name == "options"):
                setattr(builder, name, members[name])
                changed.append(_name(builder, name))
            elif name not in members and hasattr(cls, name):
                delattr(builder, name)
                changed.append(_name(builder, name))
    return changed


def _name(owner, name: str) -> str:
    return f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"
