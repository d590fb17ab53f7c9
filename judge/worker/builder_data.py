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
# What torch may call on a tensor subclass from inside its own code: the
# conversions, __torch_function__ (run again when the guard runs an operator
# it allows), __torch_dispatch__, a finalizer; and __init_subclass__, which
# would make its own subclasses past the check where classes are made.
SUBCLASS_HOOKS = CONVERSIONS + ("__torch_function__", "__torch_dispatch__", "__del__", "__init_subclass__")
_NUMBER_CONVERSIONS = ("__float__", "__int__", "__index__", "__complex__", "__bool__")
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
    if kind in _NUMBERS or kind in _NUMPY_SCALARS or depth > 64 or torch_storage(kind) or isinstance(data, (
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


def torch_storage(kind: type) -> bool:
    """One of torch's own storage classes: a builder uses its memory as it
    is (torch.Tensor(storage) is a tensor over it), with no code of the
    file's; read as a sequence, it was copied element by element instead."""
    import torch
    return kind is torch.UntypedStorage or (issubclass(kind, torch.TypedStorage)
                                             and kind.__module__ in ("torch", "torch.storage"))


def _check(name: str, data) -> None:
    import torch
    if torch_storage(type(data)):
        return
    if isinstance(data, torch.Tensor):
        if hooked(type(data)):
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
        elif isinstance(value, (int, float, complex)) and _python_number(kind):
            continue  # an IntEnum: Python's own number, by its own conversions
        elif isinstance(value, np.ndarray) and kind.__module__.startswith("numpy"):
            if value.dtype == object:
                pending.extend(value.ravel().tolist())
        elif isinstance(value, torch.Tensor) and not hooked(kind):
            continue  # read through torch's own conversions, which the gates watch
        else:
            _refuse(name, value)


def refuse_tensor_subclasses(cls, **kwargs) -> None:
    """torch.Tensor.__init_subclass__ (judge.worker.gates): a tensor subclass
    of the file's with any of SUBCLASS_HOOKS is refused as it is made. Torch
    runs those from inside its C code, where the operator guard is set
    aside: conversions inside any builder or index list, __torch_function__
    when the guard runs an operator it allows (a subclass's ran torch.mm
    from torch.tensor's detach: a probe's file, accepted). A plain subclass
    (x.as_subclass(Scaled), methods of its own) is let be. A hook set on
    the class later is not seen here (CPython raises no audit event for it):
    the builders and the operator guard look again (hooked)."""
    from judge.worker.rules import _origin
    own = hooked(cls)
    if own and _origin() == "submission":
        _violation(f"rule: no tensor subclass of the file's with {own}: torch runs it inside its own code, past "
                   f"the rules ({cls.__name__}; use torch.Tensor)")
    if kwargs:  # as object.__init_subclass__, which this stands in front of
        raise TypeError(f"{cls.__name__}.__init_subclass__() takes no keyword arguments")


def hooked(kind: type) -> str | None:
    """The first of SUBCLASS_HOOKS that a class of `kind`'s ancestry other
    than torch's tensor types defines, as it is now; else None."""
    import torch
    own = (torch.Tensor, torch._C.TensorBase, object)
    return next((attr for klass in kind.__mro__ if klass not in own for attr in SUBCLASS_HOOKS
                 if attr in vars(klass)), None)


def _python_number(kind: type) -> bool:
    """A subclass of Python's numbers whose conversions are Python's own or
    the standard library's enum's (an IntFlag's __bool__): none of the file's."""
    import enum
    bases = (int, float, complex, bool, object)
    for klass in kind.__mro__:
        for attr in _NUMBER_CONVERSIONS:
            method = vars(klass).get(attr)
            if klass in bases or method is None:
                continue
            code = getattr(method, "__code__", None)
            if klass.__module__ != "enum" or code is None or code.co_filename != enum.__file__:
                return False
    return True


def _refuse(name: str, value) -> None:
    _violation(f"rule: no code of the file's inside a tensor builder: {name} was given a "
               f"{type(value).__name__}, whose own conversions torch would call with the rules off "
               "(build tensors from Python numbers, lists and tuples)")


def _violation(message: str) -> None:
    from judge.worker import audit
    from judge.worker.rules import RuleViolation
    audit.report(message)
    raise RuleViolation(message)
