"""Symbolic numbers (torch.SymInt, SymFloat, SymBool) refused in an operator's arguments.

A symbolic number carries a node object whose methods torch calls while it
runs the operator, below the operator guard, which lets an allowed operator
(a slice, a view) run with its mode set aside. A file's own node ran
torch.mm into the output from slice's kernel, unseen (a probe's file was
accepted). Only torch's compiler makes such numbers honestly, and it is
refused in solve; the guard refuses them in any operator of the file's
(judge.worker.rules).
"""

from __future__ import annotations

_TYPES: list = []


def symbolic_in(args, kwargs) -> str | None:
    """The type name of a symbolic number among the arguments (or in a list
    or tuple among them), else None."""
    if not _TYPES:
        import torch
        _TYPES.append((torch.SymInt, torch.SymFloat, torch.SymBool))
    kinds = _TYPES[0]
    for value in (*args, *kwargs.values()):
        if isinstance(value, kinds):
            return type(value).__name__
        if type(value) is list or type(value) is tuple:
            for item in value:
                if isinstance(item, kinds):
                    return type(item).__name__
    return None
