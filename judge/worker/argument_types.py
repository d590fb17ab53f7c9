"""What an operator's arguments may not hold: objects whose own code torch
runs inside the operator, below the operator guard.

The guard runs an operator it allows (a slice, a detach) with its own mode
set aside, as every dispatch mode does. Two kinds of argument had torch call
the file's Python there, unseen:
- a symbolic number (torch.SymInt, SymFloat, SymBool) over a node object of
  the file's: slice's kernel asked the node for its value, and the node ran
  torch.mm into the output;
- a tensor of a subclass of the file's with its own __torch_function__:
  torch.tensor's detach handed it back to that method, which ran torch.mm.
Only torch's compiler makes symbolic numbers honestly (refused in solve),
and the file's tensor subclasses with such methods are refused where they
are made (judge.worker.builder_data); one given such a method later (no
audit event tells), or made while the file had torch.Tensor.__init_subclass__
swapped out, is refused here, as it is now: any tensor type torch did not
have when the gates were installed, with one of builder_data.SUBCLASS_HOOKS.
"""

from __future__ import annotations

from judge.worker.builder_data import hooked

def record_tensor_types() -> None:
    """Torch's own tensor types, taken as the gates install (before the file
    is imported), bound into refused_in's defaults: a default can be neither
    changed in place (a tuple, a frozenset) nor replaced by the file (the
    audit hook refuses writes to a judge function's __defaults__; a list of
    this module's had been emptied by a probe's file, which then passed a
    SymInt)."""
    import torch
    found, pending = {torch.Tensor}, [torch.Tensor]
    while pending:
        for sub in type.__subclasses__(pending.pop()):
            if sub not in found:
                found.add(sub)
                pending.append(sub)
    refused_in.__defaults__ = (((torch.SymInt, torch.SymFloat, torch.SymBool), frozenset(found), torch.Tensor),)
    other_layout((), {})  # its defaults bound now too


def refused_in(args, kwargs, _known=None) -> str | None:
    """What among the arguments (or in a list or tuple among them) is
    refused, in words, else None."""
    if _known is None:
        record_tensor_types()
        return refused_in(args, kwargs)
    symbolic, tensor_types, tensor = _known
    for value in (*args, *kwargs.values()):
        for item in value if type(value) is list or type(value) is tuple else (value,):
            if isinstance(item, symbolic):
                return f"a symbolic number ({type(item).__name__})"
            kind = type(item)
            if kind is not tensor and isinstance(item, tensor) and kind not in tensor_types:
                hook = hooked(kind)
                if hook:
                    return f"a tensor of a subclass of the file's with {hook} ({kind.__name__})"
    return None


def other_layout(args, kwargs, _strided=None) -> str | None:
    """A tensor among the arguments (or in a list or tuple among them) that
    is not a plain strided one: sparse, compressed, nested, mkldnn or
    quantized, in words, else None. Their operators compute where a strided
    tensor's only view or copy: an uncoalesced sparse tensor built at import,
    its values written by a kernel, summed its duplicates in select (the
    sum passed for a view). Read through torch's C class (a Python property
    of the file's cannot answer)."""
    if _strided is None:
        import torch
        base = torch._C.TensorBase
        other_layout.__defaults__ = ((torch.strided, base, base.layout.__get__, base.is_quantized.__get__,
                                      base.is_nested.__get__, base.is_neg, base.is_conj),)
        return other_layout(args, kwargs)
    strided, base, layout_of, quantized, nested, negated, conjugated = _strided
    for value in (*args, *kwargs.values()):
        for item in value if type(value) is list or type(value) is tuple else (value,):
            if isinstance(item, base):
                layout = layout_of(item)
                if layout is not strided:
                    return f"a {str(layout).rpartition('.')[2]} tensor"
                if quantized(item) or nested(item):
                    return "a quantized tensor" if quantized(item) else "a nested tensor"
                if negated(item) or conjugated(item):  # a copy computes the negation the bit defers
                    return "a tensor with a deferred negation or conjugation"
    return None
