"""A tensor printed by the submission shows its shape, not its values.

Torch's own repr reads a tensor's values on the host, leaving the judge's
dispatch mode to do it: the rules refuse both (judge.worker.rules,
judge.worker.gates), so an honest debugging `print(a)` in solve used to end
in `rejected` with a message about the operator guard. The values are the
data the rules keep off the host (a printed repr can be read back through a
replaced sys.stdout), so the worker prints what a tensor is instead: its
shape, dtype and device, read from metadata alone. Installed in the worker
before the submission is imported; runs in the untrusted process, where
restoring torch's own repr gains nothing but the old refusal.
"""

from __future__ import annotations


def describe(tensor) -> str:
    """What a tensor is, without reading one of its values."""
    import torch
    base = torch._C.TensorBase  # not a subclass's own properties, which are its code
    shape = tuple(base.shape.__get__(tensor))
    dtype = base.dtype.__get__(tensor)
    device = base.device.__get__(tensor)
    return (f"tensor(shape={shape}, dtype={dtype}, device='{device}'; "
            "values not shown: the judge keeps the data off the host)")


def install() -> None:
    """torch.Tensor's repr, str and format describe the tensor instead."""
    import torch

    def __repr__(self, *args, **kwargs):
        return describe(self)

    def __format__(self, format_spec):
        return describe(self)

    torch.Tensor.__repr__ = __repr__
    torch.Tensor.__str__ = __repr__
    torch.Tensor.__format__ = __format__
