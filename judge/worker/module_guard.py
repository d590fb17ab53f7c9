"""Guarded stand-ins for the modules the submission may not touch (ctypes,
cffi: judge.worker.refusals.HIDDEN_MODULES), put in place by the audit hook
(judge.worker.audit) with its own blame and refusal: the judge's and the
libraries' uses of the module go through, the submission's are refused.
"""

from __future__ import annotations

import sys


def hide(name: str, blame, refuse, getframe) -> None:
    """Put a guarded stand-in for module `name` in sys.modules and in every
    loaded module's globals: the judge's and the libraries' own uses go
    through, the submission's are refused. (Cached imports raise no audit
    event, so `import ctypes` alone would hand out the real module.)"""
    import types
    real = sys.modules.get(name)
    if real is None:
        return

    class Guarded(types.ModuleType):
        def __getattribute__(self, attr):
            if attr not in ("__name__", "__spec__", "__class__", "__dict__") and blame(getframe(1)):
                refuse(f"no foreign calls or raw memory access: {name}.{attr}")
            return getattr(real, attr)

        def __dir__(self):
            return dir(real)

    stand_in = Guarded(name)
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or module is real:
            continue
        for key, value in list(namespace.items()):
            if value is real:
                namespace[key] = stand_in
    sys.modules[name] = stand_in
