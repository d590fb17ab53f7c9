"""Which operator the guard is deciding on, and the one it then runs: the
same (untrusted side: the operator guard's, judge.worker.rules).

The guard is handed an OpOverload, a Python object whose every attribute a
file can set: `torch.ops.aten.mm.default._overloadpacket` pointed at
aten.t_'s packet made torch.mm read as `t_`, an allowed view, and the
product was accepted; raw memory rewrote the interned string 'mm' itself.
So the name is read from the overload's schema (a fresh string from the
C++ schema, whatever Python strings share its text), and what runs is not
the object handed in but the dispatcher's own operation for that name and
overload, looked up by them: an object claiming another operator's name
runs that operator. A name torch's dispatcher does not confirm is none:
the operator is then unidentified, refused in solve (a schema of the
file's own, named aten::t_ with an overload no operator has, had the
guard decide on t_ and run the handed aten.mm).

The operators the worker calls most (the allowed ones) are looked up once,
before the file runs, into a read-only mapping of tuples (`prepare`); any
other is looked up at each call (~5 µs). Nothing the file can reach holds a
writable record: a cache it could add to would name mm's operation `t_`.
"""

from __future__ import annotations

import types

import torch

NAME, OVERLOAD, SCHEMA, RUN = range(4)  # an identity: (short name, overload, genuine schema, operation)
# Bound as this module is imported, before any file: torch._C's names are a file's to rebind.
_get_schema = torch._C._get_schema
_get_operation = torch._C._get_operation_overload
_schemas_of = torch._C._jit_get_schemas_for_operator


def _look_up(qualified: str, overload: str) -> tuple:
    try:
        schema = _get_schema(qualified, overload)
        run = _get_operation(qualified, overload)[0]
    except RuntimeError:  # a name the dispatcher does not confirm is no name (a file's own schema named t_)
        raise LookupError(f"no operator {qualified}.{overload} in torch's dispatcher") from None
    # Private copies of the strings: no other object shares them.
    return ("".join(list(qualified.partition("::")[2])), "".join(list(overload)), schema, run)


def prepare(names) -> types.MappingProxyType:
    """Identities of every overload of aten's operators `names`, looked up
    now, in a mapping no one can write to (its dict is held by it alone)."""
    table = {}
    for name in names:
        for schema in _schemas_of(f"aten::{name}"):
            try:
                table[(schema.name, schema.overload_name)] = _look_up(schema.name, schema.overload_name)
            except LookupError:  # a TorchScript-only form (aten::select.t, on lists): never dispatched
                continue
    return types.MappingProxyType(table)


def identify(func, known: types.MappingProxyType, _str=str, _type=type, _look_up=_look_up) -> tuple:
    """The identity (NAME, OVERLOAD, SCHEMA, RUN) of the operator `func`
    names by its schema: from `known` (prepare's) or looked up now. Raises
    LookupError where it names none by plain strings."""
    schema = getattr(func, "_schema", None)
    qualified = getattr(schema, "name", None)
    overload = getattr(schema, "overload_name", None)
    if _type(qualified) is not _str or _type(overload) is not _str or "::" not in qualified:
        raise LookupError(f"an operator without a schema the dispatcher knows ({func!r})")
    hit = known.get((qualified, overload))
    return hit if hit is not None else _look_up(qualified, overload)
