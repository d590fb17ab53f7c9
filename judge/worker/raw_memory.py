"""Triton's interpreter reads and writes memory at whatever addresses it is
handed: its native load, store and atomics (triton._C.libtriton.interpreter)
take arrays of raw addresses. A file called the interpreter's builder from
solve, outside any launch, with the inputs' and the output's addresses: the
sum computed by numpy on the host was stored into the output (accepted), and
the same calls write any host memory of the worker on a GPU too (where no
kernel is ever interpreted). So the native functions run only for the
interpreter's own builder, inside a launch the worker itself started
(judge.worker.interpret: its `run`, then Triton's GridExecutor). Anything
else is refused, and recorded as a broken rule.
"""

from __future__ import annotations

import sys
import types

MEMORY_FUNCTIONS = ("load", "store", "atomic_cas", "atomic_rmw")
# Where each writing function's addresses, values and mask are among its
# arguments (mask None: every address): the launch's bounds check them
# (judge.worker.write_bounds).
WRITES = {"store": (0, 1, 2), "atomic_rmw": (1, 2, 3), "atomic_cas": (0, 2, None)}


def install(launch_code=None) -> None:
    """Put the guarded stand-in where Triton and a file find the native
    module. `launch_code`: the code of the worker's launch (CPU mode), else
    None (a GPU: nothing may run them)."""
    from triton._C import libtriton
    native = libtriton.interpreter
    if getattr(native, "__name__", "") == _NAME:
        return  # installed already
    grid_code = None
    if launch_code is not None:
        from triton.runtime import interpreter
        grid_code = interpreter.GridExecutor.__call__.__code__
        interpreter_file = interpreter.__file__
    else:
        interpreter_file = None
    stand_in = types.ModuleType(_NAME)
    for name in dir(native):
        if not name.startswith("__"):
            setattr(stand_in, name, getattr(native, name))
    from judge.worker import write_bounds
    for name in MEMORY_FUNCTIONS:
        setattr(stand_in, name, _guarded(getattr(native, name), name, launch_code, grid_code, interpreter_file,
                                         write_bounds.check if name in WRITES else None))
    from judge.worker import module_guard
    module_guard.replace_everywhere({id(native): (native, stand_in)})
    libtriton.interpreter = stand_in


_NAME = "triton._C.libtriton.interpreter (the judge's guard)"


def _guarded(real, name: str, launch_code, grid_code, interpreter_file, bounds):
    # What it uses is bound in its defaults, which a file may not read
    # (judge.worker.audit_events), never in a closure.
    def call(*args, _real=real, _name=name, _launch=launch_code, _grid=grid_code, _file=interpreter_file,
             _frame=sys._getframe, _audit=sys.audit, _error=PermissionError, _bounds=bounds,
             _where=WRITES.get(name)):
        if not _in_launch(_frame(1), _launch, _grid, _file):
            message = (f"rule: no reading or writing memory through Triton's interpreter outside a kernel's "
                       f"launch ({_name}) in the submission")
            _audit("tritonjudge.violation", message)
            raise _error(message)
        if _bounds is not None:
            ptrs, values, mask = _where
            _bounds(args[ptrs], None if mask is None else args[mask], args[values].dtype.itemsize, _name)
        return _real(*args)
    call.__name__ = call.__qualname__ = name
    return call


def _in_launch(frame, launch_code, grid_code, interpreter_file) -> bool:
    """Called by the interpreter's own code, below Triton's GridExecutor
    that the worker's launch called."""
    if launch_code is None or frame is None or frame.f_code.co_filename != interpreter_file:
        return False
    while frame is not None:
        if frame.f_code is grid_code:
            caller = frame.f_back
            return caller is not None and caller.f_code is launch_code
        frame = frame.f_back
    return False
