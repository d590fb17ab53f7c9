"""The kind of each argument of get_solve_signature(): tensor or dimension."""

from __future__ import annotations


def arg_kind(ctype) -> tuple[str, str | None]:
    """("tensor", dtype) or ("dim", None) for a ctypes type of get_solve_signature()."""
    import ctypes
    if isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer):
        target = ctype._type_
        if target is ctypes.c_float:
            return "tensor", "float32"
        if target in (ctypes.c_int, ctypes.c_int32):
            return "tensor", "int32"
        raise ValueError(f"a pointer to {target.__name__} (only float32 and int32 tensors are supported)")
    if ctype in (ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_long, ctypes.c_uint32,
                 ctypes.c_size_t):
        return "dim", None
    name = getattr(ctype, "__name__", repr(ctype))
    raise ValueError(f"a scalar of type {name} (only integer scalars are supported so far)")
