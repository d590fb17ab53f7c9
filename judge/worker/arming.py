"""Arming the rules in the worker, once, before the submission is imported:
the permanent audit hook (judge.worker.audit), the gates on torch's ways
past the operator guard (judge.worker.gates), which code is the worker's
own, and the seal on the guard, its constants, the launch wrappers and the
reporting path. Runs in the untrusted process, before any of its code."""

from __future__ import annotations

import os
import re
import sys


# The worker's own code, whose torch operators are its own business once the
# file is imported (judge.worker.rules.Guard.watch), and the guard's own.
JUDGE_MODULES = ("judge.worker.server", "judge.worker.courier", "judge.worker.launches", "judge.worker.buffers",
                 "judge.worker.interpret", "judge.worker.__main__", "judge.worker.pristine", "judge.worker.outcomes",
                 "judge.timing", "judge.cases", "judge.distributions", "judge.check_sums", "judge.cuda_ipc",
                 "judge.protocol")
GUARD_MODULES = ("judge.worker.rules", "judge.worker.gates", "judge.worker.audit", "judge.worker.audit_events",
                 "judge.worker.native_code", "judge.worker.launcher_source", "judge.worker.autotune",
                 "judge.worker.arming", "judge.worker.printing", "judge.worker.cpu_cuda", "judge.worker.refusals",
                 "judge.worker.module_guard", "judge.worker.copy_extent", "judge.worker.builder_data",
                 "judge.worker.argument_types", "judge.worker.frozen_class", "judge.worker.seal",
                 "judge.worker.op_tables", "judge.worker.raw_memory", "judge.worker.write_bounds",
                 "judge.worker.op_identity", "judge.worker.guarded_threads")
# The CPU mode's parity with the GPU: what it patched into Triton's interpreter
# decides verdicts (TF32, races, kernels compiled, host tensors).
CPU_MODULES = ("judge.worker.frontend", "judge.worker.twins", "judge.worker.kernel_callees", "judge.worker.compiled_stand_in", "judge.worker.host_tensors", "judge.worker.races",
               "judge.worker.launch_watch", "judge.worker.kernel_rewrites", "judge.worker.libdevice_cpu",
               "judge.worker.interpreter_state", "judge.worker.arithmetic", "judge.worker.builtin_names",
               "judge.worker.gpu_builder", "judge.worker.kernel_output", "judge.worker.launch_gate",
               "judge.worker.shared_memory")
# What carries the worker's answers to the judge, below its own code: a file
# that replaced them could rewrite the outputs on their way (the socket's
# writer was replaced by one adding the inputs on the host: accepted).
TRANSPORT = (("socket", "socket", ("sendall", "send", "sendmsg", "recv", "recv_into", "recvmsg")),
             ("json", None, ("dumps", "loads")), ("struct", None, ("pack", "unpack")),
             ("select", None, ("select",)))


def _module_files(names) -> set[str]:
    """The source files of these modules, as their code objects name them."""
    import importlib.util
    files = set()
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            files.add(spec.origin)
    return files


# What the audit hook calls to tell whose code asks (blame, genuine imports,
# a kernel's origin): not blamed as the judge's, but sealed with it, as their
# functions read each other through their module's globals at every call.
HOOK_HELPERS = ("judge.worker.attribution", "judge.worker.genuine_import", "judge.worker.kernel_origin")
OWN_MODULES = JUDGE_MODULES + CPU_MODULES + ("judge.worker.autotune", "judge.worker.cpu_cuda") + HOOK_HELPERS


def import_own_modules() -> None:
    """Every module of the worker's own, imported: all are sealed before the
    file runs (judge.timing, imported on the first timing request, was the
    file's to patch until then). Called at the worker's start, before the
    submission is known, so that the seconds overlap the judge's own start
    and no import runs under the audit hook."""
    import importlib
    for name in OWN_MODULES:
        if not name.endswith(".__main__"):  # the running entry point: sys.modules["__main__"]
            importlib.import_module(name)


def own_callables(names) -> list[tuple[object, str]]:
    """(owner, name) of every function and class these modules define, of
    their constants (upper-case names bound to immutable values), and
    of the methods, static methods and properties of those classes: the
    worker's own code, sealed whole rather than piece by piece (arm()
    imports them all first: import_own_modules)."""
    import inspect
    import types
    constant = (str, bytes, int, float, bool, tuple, frozenset, type(None), types.MappingProxyType)
    pairs = []
    for module_name in names:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name, value in list(vars(module).items()):
            # Read-only tables whatever their name, and the modules a module
            # names (frontend.audit...): a judge function's globals are within
            # the file's reach (f.__globals__), and none is ever rebound.
            if (name.isupper() and isinstance(value, constant)) or type(value) is types.MappingProxyType or (
                    isinstance(value, types.ModuleType) and not name.startswith("__")):
                # Its constants too (names the CPU mode's rewrite calls, limits,
                # rules): none is ever rebound by the worker's own code.
                pairs.append((module, name))
                continue
            if getattr(value, "__module__", None) != module_name:
                continue
            if inspect.isfunction(value) or inspect.isclass(value):
                pairs.append((module, name))
            if inspect.isclass(value):
                # (a classmethod is bound anew on every access: not sealable by identity)
                pairs += [(value, key) for key, member in vars(value).items()
                          if inspect.isfunction(member) or isinstance(member, (staticmethod, property))]
    return pairs


# `global NAME` in a module's code: the state its own functions rebind.
_GLOBAL_STATEMENT = re.compile(r"^[ \t]*global[ \t]+([\w \t,]+)", re.M)


def module_namespaces() -> list[tuple[dict, frozenset]]:
    """(namespace, the names its own code rebinds) of every judge module
    loaded, the worker's entry point among them: sealed whole, but for those
    names, and checked at every operator and launch (judge.worker.seal). A
    judge function's globals are within the file's reach (f.__globals__,
    not audited by CPython), and a table rebound there for one call of
    torch.mm, then back, was unseen by a seal checked after solve. Packages
    aside: each gains a name as a submodule is imported."""
    pairs = []
    for name, module in list(sys.modules.items()):
        space = vars(module) if isinstance(module, type(sys)) else None
        if space is None or "__path__" in space:
            continue
        path = str(space.get("__file__") or "")
        if not (name.startswith("judge.") or (name == "__main__" and path.endswith(os.path.join("judge", "worker",
                                                                                            "__main__.py")))):
            continue
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            continue
        loose = frozenset(item.strip() for found in _GLOBAL_STATEMENT.findall(text) for item in found.split(","))
        loose |= {"__warningregistry__"}  # the warnings module's record of a module's warnings shown
        pairs.append((space, loose))
    return pairs


# The modules the worker's own code imports inside functions, by the name
# sys.modules gives them (a file put a copy of torch.utils._python_dispatch
# there whose _get_current_dispatch_mode answered the guard's mode while none
# was pushed), and the classes its guard stands on.
IMPORTED_BY_NAME = ("torch", "torch._C", "torch.cuda", "torch._ops", "torch.overrides", "torch.utils",
                    "torch.utils._python_dispatch", "triton", "triton.language", "triton.runtime",
                    "triton.runtime.jit", "triton.runtime.interpreter", "triton.runtime.errors",
                    "triton.runtime.autotuner", "triton.runtime.build", "triton.runtime.cache", "triton._C",
                    "triton._C.libtriton", "triton.compiler", "triton.compiler.compiler", "triton.compiler.errors",
                    "triton.tools.tensor_descriptor", "triton.backends.compiler", "triton.backends.nvidia",
                    "triton.backends.nvidia.compiler", "triton.language.extra", "types", "inspect", "sys", "os",
                    "time", "threading", "_thread", "importlib", "importlib.util", "numpy", "gc", "builtins",
                    "dataclasses", "weakref", "traceback", "sysconfig", "contextlib", "functools", "statistics",
                    "math", "json", "struct", "operator", "itertools", "collections", "concurrent.futures")


def library_seals() -> list:
    """Seal pairs for what the guard stands on in torch and threading: the
    dispatch-mode module whole (but for the names its own code rebinds:
    `global` statements), TorchDispatchMode's and the operator classes'
    namespaces, threading.Thread's (but for start, which the guard swaps
    around solve), and the sys.modules entries of the modules the worker's
    own code imports by name, its own among them. A mode class's __enter__
    or _push_mode made a no-op in solve had solve's threads run with no mode."""
    import gc
    import threading

    import torch
    from torch.utils import _python_dispatch

    pairs: list = [(sys, "modules")]
    pairs.append((vars(_python_dispatch), _rebound_names(_python_dispatch)))
    pairs += class_namespaces(_python_dispatch.TorchDispatchMode, torch._ops.OpOverload,
                              torch._ops.OpOverloadPacket, torch._ops.OperatorBase)
    pairs += [(namespace, frozenset({"start"})) for namespace in gc.get_referents(vars(threading.Thread))
              if isinstance(namespace, dict)]
    pairs += [(sys.modules, name) for name in sorted(sys.modules)
              if name in IMPORTED_BY_NAME or name == "judge" or name.startswith("judge.")]
    return pairs


def _rebound_names(module) -> frozenset:
    """The names a library module's own code rebinds (its `global` statements)."""
    try:
        with open(module.__file__, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, TypeError):
        return frozenset()
    return frozenset(item.strip() for found in _GLOBAL_STATEMENT.findall(text) for item in found.split(","))


def class_namespaces(*classes) -> list:
    """Seal pairs for the namespaces of these classes whole, with every base
    class whose namespace can change (Py_TPFLAGS_IMMUTABLETYPE unset: a C
    type's cannot)."""
    import gc
    return [(namespace, None) for cls in classes for base in cls.__mro__
            if base is not object and not base.__flags__ & (1 << 8)
            for namespace in gc.get_referents(vars(base)) if isinstance(namespace, dict)]


def transport() -> list[tuple[object, str]]:
    import importlib
    pairs = []
    for module_name, cls, names in TRANSPORT:
        owner = importlib.import_module(module_name)
        owner = getattr(owner, cls) if cls else owner
        pairs += [(owner, name) for name in names if hasattr(owner, name)]
    return pairs


def arm(path: str, guard, trusted: frozenset, sealed: list, reply_fd: int) -> None:
    """The permanent audit hook (judge.worker.audit), and the seal on the
    guard's code and constants, the launch wrappers and the reporting path."""
    import torch

    from judge.worker import audit, gates, printing, rules
    import_own_modules()  # (done at the worker's start already: judge.worker.__main__)
    printing.install()  # a printed tensor shows its shape, not its values
    audit.install(path, trusted | {rules.Guard.inside_triton.__code__}, reply_fd=reply_fd)
    from judge.leetgpu import generation
    audit.gate_codes(*rules.gate_codes(), gates.stand_in_codes(), os.path.dirname(torch.__file__) + os.sep,
                     _module_files(JUDGE_MODULES), _module_files(GUARD_MODULES), {generation.run_generator.__code__})
    pairs = list(sealed) + gates.install()
    from judge.worker import frozen_class
    frozen_class.freeze(rules.Guard)  # its methods: no swap for a moment either (the seal sees only what stays)
    pairs += [(rules.Guard, name) for name, value in vars(rules.Guard).items() if callable(value)]
    pairs += [(rules, name) for name in ("ALLOWED_OPS", "TRITON_OPS", "TRANSFER_OPS", "HOST_METHODS", "COPY_FORMS",
                                         "WRITES_NO_DATA", "ALLOCATION_OPS", "FILL_OPS", "VIEW_OPS", "COPY_OPS",
                                         "RuleViolation", "TIMER_STREAM", "fence", "after_start",
                                         "_origin")]
    # (guarded_threads' namespace is sealed whole, but for the names its own code rebinds, set once before the file.)
    from judge.worker import guarded_threads
    pairs += [(guarded_threads, name) for name in ("_THREAD_MODES", "_GATED")]
    # Every thread threading starts runs under a guard (judge.worker.guarded_threads).
    import threading
    guarded_threads.guard_every_thread(guard)
    pairs += [(threading, name) for name in guarded_threads.STARTERS if hasattr(threading, name)]
    pairs += library_seals()  # (what the guard reads of torch.utils._python_dispatch to check its mode among it)
    pairs += [(torch._C, name) for name in ("_len_torch_dispatch_stack", "_get_dispatch_stack_at",
                                            "_dispatch_tls_is_dispatch_key_excluded")]
    # The guard's methods may not be shadowed on the instance either.
    pairs += [(guard.__dict__, name) for name, value in vars(rules.Guard).items() if callable(value)]
    # Its state too, which the worker never writes once the file is loaded
    # (a file that reached the guard emptied its refusals: torch's copies
    # passed in a challenge that refuses them).
    pairs += [(guard.__dict__, name) for name in ("_refused", "_refused_why", "_whole_copies")]
    pairs += [(guard.__dict__, "_trusted"), (guard.__dict__, "_submission"), (sys, "audit"),
              (guard.__dict__, "_submission_globals"), (guard.__dict__, "_wrapper_globals"),
              (audit, "violations"), (audit, "report")]
    # The worker's own code whole (judge.worker.launches.take_streams among it), and what carries its answers.
    pairs += own_callables(OWN_MODULES)
    pairs += own_callables(GUARD_MODULES)  # the guard's modules' functions and tables too (a file emptied REFUSED)
    # The CPU mode's record of the interpreter (immutable, but its name could be rebound).
    from judge.worker import interpreter_state
    pairs += [(interpreter_state, name) for name in ("_recorded", "_builder", "_instances", "_errors", "_MISSING",
                                                             "_UNSETTABLE")]
    # And the judge's own functions it records in Triton's interpreter (the
    # launch's wrappers, the watches): their closures' cells are a plain
    # write away (f.__closure__[i].cell_contents).
    # Their cells only: the members themselves are put back before each
    # launch, and the verdict is then the GPU's (interpreter_taught_to_add.py).
    import types as _types
    from judge.worker.seal import CELLS
    for owner, members, _exact, _kind in interpreter_state._recorded or ():
        pairs += [(value, CELLS) for name, value in members.items()
                  if isinstance(value, _types.FunctionType) and str(getattr(value, "__module__", "")).startswith("judge.")
                  and value.__closure__]
    # The record of torch the worker's draws run on, and the modules judge.cases draws with.
    from judge import cases
    from judge.worker import pristine
    pairs += [(pristine, "_recorded"), (pristine, "_MISSING")]
    if "judge.worker.builtin_names" in sys.modules:  # the CPU mode's record of Triton's own builtins
        pairs.append((sys.modules["judge.worker.builtin_names"], "_GENUINE"))
    pairs += [(cases, name) for name, value in vars(cases).items() if isinstance(value, type(sys))]
    pairs += transport()
    from judge.worker import launcher_source
    pairs += launcher_source.seal_pairs()  # what Triton's launcher generator reads (rejected on the CPU too)
    # torch.Tensor's own namespace whole: the worker reads its tensors back
    # after solve through it (a property of the file's as torch.Tensor.cpu ran
    # torch.add with no frame of the file's there: accepted).
    import gc
    pairs += [(namespace, None) for namespace in gc.get_referents(vars(torch.Tensor)) if isinstance(namespace, dict)]
    # The timer's events and streams whole, with every base class whose
    # namespace can change (a C type's cannot): Event.elapsed_time returning
    # a thousandth of the truth was left to the judge's clock, which cannot
    # see that much under a short kernel's head start (judge.timecheck).
    pairs += class_namespaces(torch.cuda.Event, torch.cuda.Stream)
    # And the C functions torch.cuda's Python calls for the timer by name:
    # a no-op _cuda_sleep would take the head start away, unseen by the seal.
    pairs += [(torch._C, name) for name in ("_cuda_sleep", "_cuda_synchronize", "_cuda_getCurrentStream",
                                            "_cuda_setStream", "_cuda_getDevice") if hasattr(torch._C, name)]
    # Python's builtins whole too: the worker calls them by name after solve
    # (sorted swapped for a partial whose key ran torch.add: accepted).
    import builtins
    pairs.append((vars(builtins), None))
    # torch's and torch.cuda's own functions, classes and submodules, each as it is
    # now: the worker calls them by name after the file is loaded (torch.empty
    # swapped at import made the inputs' buffers of the file's own class).
    import types
    pairs += [(module, name) for module in (torch, torch.cuda) for name, value in list(vars(module).items())
              if callable(value) or isinstance(value, types.ModuleType)]
    # The standard modules the timer summarises and paces with (judge.timing):
    # statistics.median divided by 1000 made the score a lie on the GPU. The
    # judge computes the summary again from the call times all the same
    # (judge.timecheck.recount); sealed here, such a patch is refused on
    # either device, where on the CPU nothing is timed that would show it.
    import math
    import statistics
    import time
    pairs += [(vars(module), None) for module in (math, statistics, time)]
    pairs += module_namespaces()
    audit.seal(pairs)
    audit.close_seal()
