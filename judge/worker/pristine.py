"""The worker's own draws of a case's inputs, out of the file's sight.

The worker draws each trial's inputs itself, from a seed the judge sends
(judge.cases.refill_inputs): whoever sees the seed can draw them too. The
draw runs after the file is loaded, in the worker's own code, and called
what the file could replace: hashlib.sha256 wrapped at import saw every
seed, and the file redrew the inputs on the host and copied its sum in
(accepted). Each draw here runs on torch's, torch.Tensor's, hashlib's and
Python's builtins as the worker recorded them before the file was imported
(what the file replaced is put back for the draw, then given back to it),
with torch's function and dispatch modes off (a mode the file pushed would
see the generator). The inputs' buffers are made here too
(judge.worker.buffers.prepare). It is one of the worker's windows, where its
own code may compute once the file is loaded (judge.worker.attribution).
"""

from __future__ import annotations

import contextlib
import sys

# torch's names the draw reads (judge.cases.generate), and its dtypes.
TORCH_NAMES = ("Generator", "empty", "rand", "pow", "where", "randint", "zeros", "full", "arange", "eye", "tensor",
               "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")
_MISSING = object()
# (torch, its names as recorded, torch.Tensor, its members as recorded, hashlib's sha256,
#  torch's two switches): immutable, and sealed (judge.worker.arming).
_recorded: tuple = ()


def record() -> None:
    """Take torch and hashlib as they are now (before the file is imported)."""
    global _recorded
    import hashlib
    import types

    import torch
    names = types.MappingProxyType({name: getattr(torch, name, _MISSING) for name in TORCH_NAMES})
    members = types.MappingProxyType(dict(vars(torch.Tensor)))
    import builtins
    _recorded = (torch, names, torch.Tensor, members, hashlib, hashlib.sha256,
                 torch._C.DisableTorchFunction, torch._C._DisableTorchDispatch, sys.modules,
                 builtins, types.MappingProxyType(dict(vars(builtins))), torch._C.TensorBase)


def tensor_base():
    """torch's C tensor class as recorded: a C class, whose methods no file
    can replace (the gates' stand-ins among them); torch.Tensor's can be."""
    return _recorded[-1]


@contextlib.contextmanager
def drawing(modes_off: bool = True):
    """Torch and hashlib as recorded, and (`modes_off`) no mode, for the
    length of a draw. A LeetGPU challenge's own generator keeps the modes:
    it names "cuda", which the CPU mode's own mode makes the CPU
    (judge.worker.cpu_cuda)."""
    if not _recorded:
        yield
        return
    torch, names, tensor, members, hashlib, sha256, no_functions, no_dispatch, modules, builtins, plain, _ = _recorded
    given: list = []  # (owner, name, the file's value or _MISSING)
    for module in (torch, hashlib):  # the draw's own `import torch` finds them there
        if modules.get(module.__name__) is not module:
            given.append((modules, module.__name__, modules.get(module.__name__, _MISSING)))
            modules[module.__name__] = module
    for name, value in names.items():
        if value is not _MISSING and getattr(torch, name, _MISSING) is not value:
            given.append((torch, name, getattr(torch, name, _MISSING)))
            setattr(torch, name, value)
    _put_back(tensor, members, given)
    if hashlib.sha256 is not sha256:
        given.append((hashlib, "sha256", hashlib.sha256))
        hashlib.sha256 = sha256
    # Python's builtins as recorded too: the draw calls float() and int(), and a
    # finalizer of the file's had swapped float for its own function, which then
    # ran in the draw with torch's modes off (sealed whole, but checked only after).
    _put_back(builtins, plain, given)
    try:
        with no_functions() if modes_off else contextlib.nullcontext(), \
                no_dispatch() if modes_off else contextlib.nullcontext():
            yield
    finally:
        for owner, name, value in reversed(given):
            if owner is modules:
                if value is _MISSING:
                    modules.pop(name, None)
                else:
                    modules[name] = value
            elif value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def _put_back(owner, recorded, given: list) -> None:
    """`owner`'s members as `recorded`, each change noted in `given` (to give back after the draw)."""
    current = dict(vars(owner))
    for name in current.keys() | recorded.keys():
        if current.get(name, _MISSING) is not recorded.get(name, _MISSING) and name not in ("__dict__", "__weakref__"):
            given.append((owner, name, current.get(name, _MISSING)))
            if name in recorded:
                setattr(owner, name, recorded[name])
            else:
                delattr(owner, name)
