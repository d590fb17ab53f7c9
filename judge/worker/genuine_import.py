"""Is this module-level frame of an installed file a real first import?

The audit hook (judge.worker.attribution) lets an installed module's own
initialisation do what the file may not (torch registering its operators as
it imports a module lazily, a library loading its C part with ctypes). A
frame of a library's `<module>` code is not proof of that: a probe's file
ran sched.py's top-level code again (runpy, or exec of its own text) with a
__builtins__ whose `object` was a partial of the dispatch-mode gate, and
sched's `_sentinel = object()` popped the guard; another patched the real
builtins.object and imported sched afresh.

So the frame must be the module's code run by Python's own import
machinery, now, for the first time:
- its globals are the __dict__ of the module sys.modules holds under its
  name, a plain module whose spec is being initialised (reload and runpy
  set no such flag) and names this very file;
- it was called by importlib's own exec_module, through its
  _call_with_frames_removed, with a loader of importlib's own classes;
- it sees the real builtins, unchanged since the worker started, and
  importlib's loading functions are the ones it started with.
- the modules sys.modules held when the worker started are still the ones
  it holds: a probe's file put a `threading` of its own there, whose RLock
  was gc.get_objects, and imported webbrowser afresh (`_lock =
  threading.RLock()` handed it the collector's list, and the guard's kept
  originals in it).
A forged or planted import fails one of these. (A dependency the file plants
under a name not yet imported still reaches a real import: the gates also ask
that the code calling them names them, and the collector's lists are refused
whatever import is under way: judge.worker.audit.)
"""

from __future__ import annotations

import builtins
import sys
import types

from judge.worker.refusals import named_builtins


def checker():
    """genuine(frame) -> bool, over what the worker has as it starts."""
    # Builtins bound here, for the import check: a file can swap builtins' own at any moment.
    (all, bool, dict, frozenset, getattr, list, str, tuple, type,) = \
        named_builtins('all bool dict frozenset getattr list str tuple type')
    import importlib._bootstrap as bootstrap
    import importlib._bootstrap_external as external
    import importlib.machinery as machinery
    module_type, spec_type = types.ModuleType, machinery.ModuleSpec
    real_builtins = builtins.__dict__
    modules = sys.modules
    snapshot = tuple(real_builtins.items())
    loaders = frozenset({external.SourceFileLoader, external.SourcelessFileLoader})
    call_code = bootstrap._call_with_frames_removed.__code__
    exec_code = external._LoaderBasics.exec_module.__code__
    machinery_parts = ((external.SourceLoader, "get_code"), (external.FileLoader, "get_data"),
                       (external.SourceLoader, "source_to_code"), (external._LoaderBasics, "exec_module"),
                       (external, "_compile_bytecode"), (bootstrap, "_call_with_frames_removed"))
    kept = tuple((owner, name, getattr(owner, name)) for owner, name in machinery_parts)
    loaded: list = []  # sys.modules as the seal closes (freeze): the stand-ins for ctypes and the judge in place
    seen: dict = {}  # a module's code -> its verdict, once per import (the check reads every module)

    def unchanged() -> bool:
        return (all(real_builtins.get(key) is value for key, value in snapshot)
                and all(getattr(owner, name, None) is value for owner, name, value in kept))

    def modules_unchanged() -> bool:
        return all(modules.get(name) is module for name, module in loaded)

    def genuine(frame) -> bool:
        code = frame.f_code
        scope = frame.f_globals
        name = scope.get("__name__")
        module = modules.get(name) if type(name) is str else None
        spec = scope.get("__spec__")
        if (type(module) is not module_type or module.__dict__ is not scope or type(spec) is not spec_type
                or spec.__dict__.get("_initializing") is not True or spec.origin != code.co_filename
                or type(spec.loader) not in loaders or frame.f_builtins is not real_builtins):
            return False
        caller = frame.f_back
        if caller is None or caller.f_code is not call_code:
            return False
        loader_frame = caller.f_back
        if loader_frame is None or loader_frame.f_code is not exec_code or not unchanged():
            return False
        # Checked at the import's first event that reaches this frame (its
        # first import of another module, where a planted one is fetched).
        if code not in seen:
            seen[code] = modules_unchanged()
        return seen[code]

    compile_code = external._compile_bytecode.__code__
    get_codes = frozenset({external.SourceLoader.get_code.__code__, external.SourcelessFileLoader.get_code.__code__})

    def real_bytecode(frame, roots: tuple[str, ...]) -> bool:
        """marshal.loads asked by importlib reading an installed module's
        cached bytecode (a folder the worker cannot write). Bytes of the
        file's own make code objects that claim any file's name: a probe's
        patched a library's name into marshal's output."""
        if frame is None or frame.f_code is not compile_code or not unchanged():
            return False
        reader = frame.f_back
        if reader is None or reader.f_code not in get_codes:
            return False
        source = reader.f_locals.get("source_path") or reader.f_locals.get("path")
        return type(source) is str and source.startswith(roots)

    def freeze() -> None:
        if not loaded:
            loaded.extend(modules.items())

    genuine.real_bytecode = real_bytecode
    genuine.freeze = freeze
    return genuine
