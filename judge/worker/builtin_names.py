"""Triton's builtins in the CPU mode: which objects are Triton's own
(record, genuine: what the front end's check lets a kernel call), and those
bound to plain names in a kernel's module, for one interpreted launch.

`from triton.language import load, store`, or `_where = tl.where` at module
level, compile on a GPU: the code generator takes any global that is one of
Triton's builtins. Triton's interpreter patches the builtins only as
attributes of triton.language's modules for a launch, so a name bound to
one before kept the unpatched builtin, which raised "Did you forget to add
@triton.jit?": compile_error on the CPU, accepted on the H100 (an honest
probe's four files). For the launch those names get what the interpreter
gives the module's attribute: the same builtin, with the interpreter's
semantic. Only Triton's own builtins (those record() found before the
file was imported), and only
after the GPU front end's check, which must see the names as they are.
A module that imports no triton.language module at all is shown one under
a name of the judge's for the launch: the interpreter asserts that one is
visible, and a GPU needs none."""

from __future__ import annotations

import contextlib
import sys

LANGUAGE_NAME = "__tritonjudge_language__"


def with_semantic(builtin):
    """`builtin` as the interpreter's patch of triton.language makes it for a
    launch: called with the interpreter's semantic (also tl.tensor's math
    methods: judge.worker.interpret._math_methods)."""
    from triton.runtime import interpreter
    semantic = interpreter.interpreter_semantic
    return lambda *args, **kwargs: builtin(
        *args, **{k: v for k, v in kwargs.items() if k != "_semantic"}, _semantic=semantic)


@contextlib.contextmanager
def during_launch(kernel_globals: dict, num_warps: int = 4):
    import triton.language as tl
    from triton.language import core
    compiled_only = _compiled_only(num_warps)
    specials = {id(value): name for name, _, value in _compiled_only_places() if core.is_builtin(value)}
    kept = [(name, value) for name, value in list(kernel_globals.items())
            if (core.is_builtin(value) and genuine(value)) or value is core.condition]
    shown = not any(value is tl or value is core for value in kernel_globals.values())
    for name, value in kept:
        special = "condition" if value is core.condition else specials.get(id(value))
        kernel_globals[name] = compiled_only[special] if special else with_semantic(value)
    if shown:
        kernel_globals[LANGUAGE_NAME] = tl
    modules = _compiled_only_places()
    for name, module, _ in modules:
        setattr(module, name, compiled_only[name])
    try:
        yield
    finally:
        for name, module, value in modules:
            setattr(module, name, value)
        for name, value in kept:
            kernel_globals[name] = value
        if shown:
            kernel_globals.pop(LANGUAGE_NAME, None)


def _compiled_only(num_warps: int) -> dict:
    """What the GPU's code generator answers itself, for one launch under the
    interpreter, which has no answer of its own: `while tl.condition(c, ...)`
    loops on c (the interpreter took the wrapper for always true, and an
    honest reduction never ended), and tl.extra.cuda's num_warps() and
    num_threads() read the launch's num_warps (the interpreter has no
    compile options: a CUDA port's blockDim.x failed)."""
    from triton.language import core
    return {"condition": lambda arg, *rest, **options: arg,
            "num_warps": lambda *args, **kwargs: core.constexpr(num_warps),
            "num_threads": lambda *args, **kwargs: core.constexpr(num_warps * 32)}


def _compiled_only_places() -> list:
    """(name, module, value) for each of _compiled_only's names on
    triton.language's modules."""
    import triton.language as tl
    from triton.language import core
    try:
        from triton.language.extra import cuda
    except ImportError:
        cuda = None
    return [(name, module, getattr(module, name)) for module, name in (
        (tl, "condition"), (core, "condition"), (cuda, "num_warps"), (cuda, "num_threads"))
        if module is not None and hasattr(module, name)]


# Triton's own builtins (by id, the objects kept alive beside), taken before
# the file is imported (record_builtins): a function of the file's marked
# __triton_builtin__ with a __module__ of "triton.language" had passed for one
# and run numpy under the interpreter (accepted; a GPU computes its decoy).
_GENUINE: tuple = (frozenset(), ())


def record() -> None:
    import importlib
    for name in ("triton.language", "triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    from triton.language import core
    found = []
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("triton.language"):
            continue
        for value in list(vars(module).values()):
            members = list(vars(value).values()) if isinstance(value, type) else []
            for item in [value, *members]:
                item = getattr(item, "__func__", item)  # a static or class method's function
                if core.is_builtin(item):
                    found.append(item)
    global _GENUINE
    _GENUINE = (frozenset(map(id, found)), tuple(found))


def genuine(fn) -> bool:
    """One of Triton's own builtins (a static method's function counts)."""
    return id(getattr(fn, "__func__", fn)) in _GENUINE[0]
