"""How a call of the file's code ends, told to the judge: the verdict an
exception earns, the file's part of its traceback, and whether `solve` is
code that can be called at all (worker side; the judge decides verdicts
from these: judge.verdicts)."""

from __future__ import annotations

import inspect
import os
import traceback


def short_traceback(exc: BaseException, limit: int = 4000) -> str:
    """The submission's part of a traceback: the judge's and importlib's frames
    say nothing to its author, and a syntax error needs only its caret."""
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc))[-limit:]
    judge_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(judge_dir) and not f.filename.startswith("<frozen")]
    # The file's own frames first: a compile error's trace was Triton's code
    # generator and ast from end to end, and a one-line summary of the
    # message never reached the error (a probe's honest file). Libraries'
    # frames only where the file has none.
    own = [f for f in frames if not _library(f.filename)]
    text = "".join(traceback.format_list((own or frames)[-8:]))
    text += "".join(traceback.format_exception_only(type(exc), exc))
    cause, seen = exc.__cause__, {id(exc)}
    while cause is not None and id(cause) not in seen and len(seen) < 4:  # a compile error's reason, inside a helper
        seen.add(id(cause))
        text += "caused by: " + "".join(traceback.format_exception_only(type(cause), cause))
        cause = cause.__cause__
    return text if len(text) <= limit else "…" + text[-limit:]


def _stdlib() -> str:
    import sysconfig
    return os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


_STDLIB = _stdlib()  # read once, as the worker starts


def _library(filename: str) -> bool:
    """A file of an installed package or of Python's standard library."""
    path = os.path.abspath(filename)
    parts = path.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts or path.startswith(_STDLIB)


def reaches_a_function(solve, depth: int = 0) -> bool:
    """solve is a Python function, or calls one: a bound or class method, a
    functools.partial, an object whose class defines __call__ in Python,
    a wrapper (`__wrapped__`). A builtin or a library's C function is not."""
    import functools
    if depth > 8 or not callable(solve):
        return False
    if inspect.isfunction(solve):
        return True
    if inspect.ismethod(solve):
        return reaches_a_function(solve.__func__, depth + 1)
    if isinstance(solve, functools.partial):
        return reaches_a_function(solve.func, depth + 1)
    if inspect.isfunction(inspect.unwrap(solve)):
        return True
    return inspect.isfunction(getattr(type(solve), "__call__", None))


def classify(exc: BaseException) -> str:
    """The verdict an exception raised by the submission's own code earns."""
    name = type(exc).__name__
    text = str(exc).lower()
    if isinstance(exc, MemoryError) or name == "OutOfMemoryError" or "out of memory" in text \
            or "can't allocate memory" in text or "cannot allocate memory" in text:
        return "memory_limit_exceeded"
    # Triton: CompilationError on GPU; the interpreter wraps the same semantic
    # errors in InterpreterError. OutOfResources: a config too big for the chip.
    # Along the class tree: Triton's own subclasses (UnsupportedLanguageConstruct...) count too.
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"CompilationError", "CompileTimeAssertionFailure", "InterpreterError", "OutOfResources",
                "PTXASError"}:
        return "compile_error"
    # Triton's JIT, hashing what a kernel refers to before compiling it (a
    # helper without @triton.jit, numpy in the body): the kernel's source refused.
    if name == "RuntimeError" and text.startswith("unsupported function referenced"):
        return "compile_error"
    return "runtime_error"
