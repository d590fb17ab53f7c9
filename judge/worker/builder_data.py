"""What torch's tensor builders may be handed: plain data.

torch.tensor, as_tensor, asarray, Tensor.new_tensor, the legacy
torch.Tensor(list) and Tensor.new(list), and the sparse and nested
constructors read the data they are given with torch's Python dispatch key
off: the operator guard and every other mode are blind while they do. Any
Python they call in that window runs past the rules. An object's own
__float__ or __index__ that ran torch.mm into the output, or a sequence
class's __getitem__, was never seen (a probe's files were accepted, at full
speed on a GPU too).

So a builder's data may hold only what torch reads without calling anyone's
code:
- Python's own numbers (exact types: an int subclass's __float__ is called);
- numpy's scalars and arrays;
- lists and tuples of these;
- tensors, as the whole data or inside lists, of a type with torch's own
  conversions (reads of those inside a list are gated:
  judge.worker.gates.SCALARS).

Another sequence is read into a list first, here, where the rules hold.
Anything else is a violation, at import and in solve, on any device: an
honest file builds tensors from numbers.

The gates (judge.worker.gates.BUILDERS) call `checked` in front of every
builder, however the file reached it.
"""

from __future__ import annotations

import numbers

import numpy as np

# Python's own conversions of a tensor: a subclass that defines any of these
# has torch call its code inside the builder.
CONVERSIONS = ("__float__", "__int__", "__index__", "__bool__", "__complex__", "__len__", "__getitem__",
               "__iter__", "__array__")
# What a tensor subclass of the file's may not define (its own
# __init_subclass__ would make its subclasses past this check).
SUBCLASS_REFUSED = CONVERSIONS + ("__init_subclass__",)
_NUMBERS = frozenset({int, float, bool, complex, str, type(None)})
_NUMPY_SCALARS = frozenset(t for t in np.sctypeDict.values() if issubclass(t, np.generic))


def checked(name: str, args: tuple, kwargs: dict, skip: int = 0) -> tuple[tuple, dict]:
    """A builder's arguments with every sequence of the file's read into a
    list (plain), refused if anything but plain data remains. `skip` leading
    arguments are not data (the tensor of Tensor.new_tensor)."""
    args = args[:skip] + tuple(_plain(value, 0) for value in args[skip:])
    kwargs = {key: _plain(value, 0) for key, value in kwargs.items()}
    for value in list(args[skip:]) + list(kwargs.values()):
        _check(name, value)
    return args, kwargs


def _plain(data, depth: int):
    """Every sequence in `data` that is not a list, tuple, array or tensor,
    read once into a list, as torch would read it (its __len__ and
    __getitem__ run here, under the rules, not inside the builder)."""
    import torch
    kind = type(data)
    if kind in _NUMBERS or kind in _NUMPY_SCALARS or depth > 64 or isinstance(data, (
            torch.Tensor, np.ndarray, torch.dtype, torch.device, torch.layout, torch.memory_format,
            torch.Size, numbers.Number, bytes, bytearray, memoryview)):
        return data
    if kind is list:
        return [_plain(item, depth + 1) for item in data]
    if kind is tuple:  # kept a tuple: a legacy constructor may read it as sizes
        return tuple(_plain(item, depth + 1) for item in data)
    if hasattr(kind, "__len__") and hasattr(kind, "__getitem__") and not isinstance(data, dict):
        return [_plain(item, depth + 1) for item in list(data)]
    return data


def _check(name: str, data) -> None:
    import torch
    if isinstance(data, torch.Tensor):
        if not _own_conversions(type(data)):
            _refuse(name, data)
        return  # the whole data: a copy on its device, no element read by Python
    if isinstance(data, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
        return
    pending = [data]
    while pending:
        value = pending.pop()
        kind = type(value)
        if kind is list or kind is tuple or kind is torch.Size:
            pending.extend(value)
        elif kind in _NUMBERS or kind in _NUMPY_SCALARS:
            continue
        elif isinstance(value, (int, float, complex)) and _own_conversions(kind, (int, float, complex, bool)):
            continue  # an IntEnum: Python's own number, by its own conversions
        elif isinstance(value, np.ndarray) and kind.__module__.startswith("numpy"):
            if value.dtype == object:
                pending.extend(value.ravel().tolist())
        elif isinstance(value, torch.Tensor) and _own_conversions(kind):
            continue  # read through torch's own conversions, which the gates watch
        else:
            _refuse(name, value)


def _own_conversions(kind: type, own: tuple = ()) -> bool:
    """Does this type (a tensor's, by default) convert itself with its base's
    own code only, none of the classes above it defining a conversion?
    (Asked anew each time: a class can be given a method later.)"""
    import torch
    own = own or (torch.Tensor, torch._C.TensorBase)
    return not any(attr in vars(klass) for klass in kind.__mro__ if klass not in own and klass is not object
                   for attr in CONVERSIONS)


def refuse_own_conversions(cls, **kwargs) -> None:
    """torch.Tensor.__init_subclass__ (judge.worker.gates): a tensor subclass
    of the file's that defines its own conversions is refused as it is made
    (torch reads a list's tensors through them inside any builder or index,
    with the rules off, torch.cuda.FloatTensor(list) and x[list] among them).
    One set on the class later is not seen here (CPython raises no audit
    event for it); the builders' own check (checked) still finds it."""
    from judge.worker.rules import _origin
    own = [attr for attr in SUBCLASS_REFUSED if attr in vars(cls)]
    if own and _origin() == "submission":
        _violation(f"rule: no tensor subclass with conversions of its own: {cls.__name__} defines {own[0]}, which "
                   "torch calls inside its builders with the rules off")
    if kwargs:  # as object.__init_subclass__, which this stands in front of
        raise TypeError(f"{cls.__name__}.__init_subclass__() takes no keyword arguments")


def _refuse(name: str, value) -> None:
    _violation(f"rule: no code of the file's inside a tensor builder: {name} was given a "
               f"{type(value).__name__}, whose own conversions torch would call with the rules off "
               "(build tensors from Python numbers, lists and tuples)")


def _violation(message: str) -> None:
    from judge.worker import audit
    from judge.worker.rules import RuleViolation
    audit.report(message)
    raise RuleViolation(message)
