"""A class of the guard's made immutable, as CPython's own built-in types
are: no attribute of it can be set or deleted afterwards, by anyone.

The operator guard's dispatch mode is handed out by torch
(torch.utils._python_dispatch._get_current_dispatch_mode): a file set its
class's __torch_dispatch__ to a pass-through, ran torch.mm, and put the
method back before the guard looked (a probe's file, accepted). CPython
raises no audit event for a class's attributes, so the class is marked
Py_TPFLAGS_IMMUTABLETYPE, the flag that makes `int.x = 1` fail.
ctypes is taken as this module loads, before the file exists (the audit
hook hides it from the file's code afterwards).
"""

from __future__ import annotations

import ctypes

_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE (CPython 3.10+)
_FLAGS_OFFSET: list = []  # where tp_flags lies in a type object, found once


def freeze(cls: type) -> type:
    """Mark `cls` immutable; returns it. Raises RuntimeError where the flag
    cannot be found (another interpreter), rather than guess."""
    address = id(cls)
    if not _FLAGS_OFFSET:
        _FLAGS_OFFSET.append(_find_flags_offset())
    flags = ctypes.c_ulong.from_address(address + _FLAGS_OFFSET[0])
    if flags.value != cls.__flags__:
        raise RuntimeError("tp_flags is not where it was found")
    flags.value |= _IMMUTABLE
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
    return cls


def _find_flags_offset() -> int:
    """The offset of tp_flags, found by matching a probe class's __flags__
    (which differ between two probe classes in a known bit) word by word."""
    class Probe:
        pass

    class Other:
        __slots__ = ()

    for offset in range(0, 512, ctypes.sizeof(ctypes.c_ulong)):
        if ctypes.c_ulong.from_address(id(Probe) + offset).value == Probe.__flags__ \
                and ctypes.c_ulong.from_address(id(Other) + offset).value == Other.__flags__ \
                and Probe.__flags__ != Other.__flags__:
            return offset
    raise RuntimeError("tp_flags not found in a type object")
