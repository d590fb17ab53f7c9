"""Guarded stand-ins for the modules the submission may not touch (ctypes,
cffi: judge.worker.refusals.HIDDEN_MODULES), put in place by the audit hook
(judge.worker.audit) with its own blame and refusal: the judge's and the
libraries' uses of the module go through, the submission's are refused.
"""

from __future__ import annotations

import sys


def hide(names: dict, blame, refuse, getframe) -> None:
    """Put a guarded stand-in for each module of `names` (name -> the rule
    its refusal names) in sys.modules and in every loaded module's globals:
    the judge's and the libraries' own uses go through, the submission's are
    refused. (Cached imports raise no audit event, so `import ctypes` alone
    would hand out the real module.) One pass over every loaded module's
    globals for all of them: a pass per module cost ~40 ms of a worker's start."""
    import types
    stand_ins = {}
    for name, why in names.items():
        real = sys.modules.get(name)
        if real is None:
            continue

        class Guarded(types.ModuleType):
            def __getattribute__(self, attr, _real=real, _name=name, _why=why):
                if attr not in ("__name__", "__spec__", "__class__", "__dict__") and blame(getframe(1)):
                    refuse(f"{_why}: {_name}.{attr}")
                return getattr(_real, attr)

            def __dir__(self, _real=real):
                return dir(_real)

        stand_ins[id(real)] = (real, Guarded(name))
    if not stand_ins:
        return
    replace_everywhere(stand_ins)
    for name in names:
        real = sys.modules.get(name)
        if real is not None and id(real) in stand_ins:
            sys.modules[name] = stand_ins[id(real)][1]


def replace_everywhere(stand_ins: dict) -> None:
    """Every loaded module's name bound to one of the real objects of
    `stand_ins` (id -> (real, stand-in)) rebound to its stand-in, in one
    pass (a module's own name for itself aside)."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            found = stand_ins.get(id(value))
            if found is not None and found[0] is value and value is not module:
                namespace[key] = found[1]


def hide_own(written_by_submission, refuse, getframe) -> None:
    """The worker's own modules, as sys.modules hands them out, behind
    stand-ins that refuse the submission's code any attribute, read or
    written: `import judge.worker.rules` gave the file the guard's tables to
    swap for a moment (ALLOWED_OPS with "mm" in it, then back: accepted,
    the seal checks only at the end). The worker keeps the modules
    themselves: its globals hold them, and its own imports get them through
    the stand-ins. (A function of the judge's the file can reach still
    leads to its module's globals, through __globals__: the seal is what
    sees those changes.)"""
    import os
    import types
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

    # What the import machinery reads of a module on every `from judge.worker import x`
    # (the worker's own imports, many of them inside functions): no secret, no frame to read.
    machinery = frozenset({"__spec__", "__path__", "__name__", "__package__", "__loader__", "__file__"})

    # The modules themselves, by stand-in: not an attribute of the stand-in,
    # which object.__getattribute__ handed a file past the check.
    reals: dict[int, types.ModuleType] = {}

    # What the stand-ins use is bound in their defaults, not their closure:
    # a closure's cells are plain reads (f.__closure__), and the file took
    # every real module from `reals` there; defaults it may not read
    # (judge.worker.audit_events).
    class Own(types.ModuleType):
        def __getattribute__(self, attr, _reals=reals, _machinery=machinery, _getattr=getattr,
                             _written=written_by_submission, _refuse=refuse, _frame=getframe):
            real = _reals[id(self)]
            if attr in _machinery:
                return _getattr(real, attr)
            if _written(_frame(1)):
                _refuse(f"no reaching the judge's own modules: {real.__name__}.{attr}")
            return _getattr(real, attr)

        def __setattr__(self, attr, value, _reals=reals, _setattr=setattr, _written=written_by_submission,
                        _refuse=refuse, _frame=getframe):
            real = _reals[id(self)]
            if _written(_frame(1)):
                _refuse(f"no changing the judge's own modules: {real.__name__}.{attr}")
            _setattr(real, attr, value)

        def __delattr__(self, attr):
            self.__setattr__(attr, None)

        def __dir__(self, _reals=reals, _dir=dir):
            return _dir(_reals[id(self)])

    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if isinstance(module, types.ModuleType) and not isinstance(module, Own) \
                and (name == "judge" or name.startswith("judge.") or os.path.abspath(path).startswith(own)):
            stand_in = Own(module.__name__)
            reals[id(stand_in)] = module
            sys.modules[name] = stand_in
