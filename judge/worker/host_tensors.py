"""On the CPU, the tensors a GPU run would hold on the host.

On a GPU, a tensor solve makes without naming CUDA (torch.empty(n), or
device="cpu") lives in host memory: a Triton launch refuses it ("cannot be
accessed from Triton (cpu tensor?)"), and a copy between it and the GPU's
tensors (.to("cpu"), copy_) is a host round trip the rules refuse. In the
CPU worker every tensor is in host memory, so such a file passed there and
failed on the GPU: a scratch buffer made without device=, or the input
moved to the host and worked on there. Here the CPU worker keeps apart the
tensors a GPU would have kept on the host (judge.worker.cpu_cuda's mode
tells this module of every torch call):

* a tensor the submission's own code makes without naming CUDA (and
  without torch.set_default_device("cuda") first), or moves to the CPU;
* a tensor made from one of those without naming a device (a view, a
  clone, a *_like), whoever makes it;
* a tensor over memory torch did not allocate (torch.from_numpy,
  frombuffer, from_dlpack, from_file: never seen by torch's modes), or
  over shared memory (a storage's descriptor, mapped for numpy). In the
  CPU worker every tensor a GPU would hold comes from torch's allocator
  (host data named to the GPU is copied there: judge.worker.cpu_cuda), so
  memory of numpy's or of a bytearray is the host's: a probe's copy
  kernels moved the inputs into such tensors for numpy to add, and back.

A host tensor passed to a Triton launch raises Triton's own error; a copy
between a host tensor and another, asked by the submission, is the host
round trip it is on a GPU. Tensors are known by their storage, and only
while one of them is alive (an address freed and reused is not host).
"""

from __future__ import annotations

import weakref

import torch

from judge.worker.builder_data import torch_storage
from judge.worker.op_tables import ADDRESS_TAG

_C = torch._C  # (the worker imports torch before its own modules: taken below before any gate)
try:
    from triton.tools.tensor_descriptor import TensorDescriptor as _DESCRIPTOR
except ImportError:  # pragma: no cover - a Triton without host descriptors
    _DESCRIPTOR = None

# Torch's function modes off, for this module's own reads of a tensor made
# where they are on (Tensor.set_'s stand-in, called from the file's code):
# the CPU worker's mode hands untyped_storage back to its gate, which then
# saw the file behind the read. Taken as this module loads.
_NO_FUNCTION_MODES = _C.DisableTorchFunction
# The record, bound into the functions that keep it (their defaults, which
# the file may not read: judge.worker.audit_events) and in no module name: a
# judge function's globals are within the file's reach, and a file that set
# the default-device flag there in place made its host scratch pass for the
# GPU's (judge.worker.host_tensors' names are deleted below).
_host: dict[int, list] = {}  # storage address -> weak references to the live host tensors on it
_default_cuda = [False]  # torch.set_default_device("cuda") by the submission


def _storage(tensor) -> int:
    # The address with the tag the submission's own code is shown cleared
    # (judge.worker.gates): the same whoever's frame is on the stack.
    return (tensor.data_ptr() & ~ADDRESS_TAG) - tensor.storage_offset() * tensor.element_size()


def storage_start(tensor) -> int:
    """Where the tensor's storage begins, untagged (judge.worker.buffers:
    a handed view still on the buffer the worker made)."""
    return _storage(tensor)


def set_default_cuda(on: bool, _default_cuda=_default_cuda) -> None:
    """The file made "cuda" torch's default device (judge.worker.cpu_cuda
    makes it the CPU's): a tensor it makes with no device is a GPU's."""
    _default_cuda[0] = bool(on)


def _external(tensor, _storage=_C.TensorBase.untyped_storage, _resizable=_C.StorageBase.resizable,
              _shared=_C.StorageBase.is_shared) -> bool:
    """Memory torch's allocator did not make (its storage cannot be resized),
    or memory in the host's shared memory, which another mapping reads (a
    device tensor never is: a probe mapped its storage's descriptor for
    numpy). torch's own methods, taken as this module loads, before the
    gates (untyped_storage is the file's no more: judge.worker.gates)."""
    try:
        storage = _storage(tensor)
        return not _resizable(storage) or _shared(storage)
    except (RuntimeError, NotImplementedError):  # no storage (sparse, nested...): not the host's
        return False


def is_host_storage(storage, _address=_C.StorageBase.data_ptr, _resizable=_C.StorageBase.resizable,
                    _shared=_C.StorageBase.is_shared) -> bool:
    """A storage of host memory: one torch's allocator did not make, one in
    shared memory, or one a host tensor lives on (judge.worker.write_bounds:
    a kernel may not write it through its address)."""
    return not _resizable(storage) or _shared(storage) or _host_tensor_on(_address(storage) & ~ADDRESS_TAG)


def _host_tensor_on(key: int, _host=_host) -> bool:
    """A live host tensor lives on the storage at this address (a record
    whose tensors are all gone is dropped: the address may be reused)."""
    refs = _host.get(key)
    alive = refs is not None and any(ref() is not None for ref in refs)
    if refs is not None and not alive:
        del _host[key]
    return alive


def is_host(tensor, _host=_host) -> bool:
    import torch
    if not isinstance(tensor, torch.Tensor):
        return False
    if _external(tensor):
        return True
    if not _host:
        return False
    try:
        key = _storage(tensor)
    except (RuntimeError, NotImplementedError):  # no storage (sparse, nested): not the host's memory
        return False
    return _host_tensor_on(key)


def _mark(result, _host=_host) -> None:
    import torch
    for tensor in result if isinstance(result, (tuple, list)) else (result,):
        if isinstance(tensor, torch.Tensor):
            # Plain references, with no callback: a WeakSet's reference hands
            # its set back to anyone holding the tensor (weakref.getweakrefs(t)
            # -> __callback__ -> its defaults), and a file emptied it.
            try:
                key = _storage(tensor)
            except (RuntimeError, NotImplementedError):  # no storage of its own to mark
                continue
            refs = _host.setdefault(key, [])
            refs[:] = [ref for ref in refs if ref() is not None] + [weakref.ref(tensor)]


def _names(device) -> str | None:
    """"cuda", "cpu" or None for a device argument (None: not a device)."""
    import torch
    if isinstance(device, torch.device):
        return device.type
    if isinstance(device, int) and not isinstance(device, bool):
        return "cuda"
    if isinstance(device, str):
        kind = device.split(":")[0].strip()
        return kind if kind in ("cuda", "cpu") else None
    return None


def _tensors(values) -> list:
    import torch
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            found += [v for v in value if isinstance(v, torch.Tensor)]
    return found


def after(func, args: tuple, kwargs: dict, result, by_submission: bool, _host=_host,
          _default_cuda=_default_cuda) -> None:
    """Account for one torch call (its arguments as the submission gave
    them, before CUDA was mapped to the CPU): raise the rule a GPU run
    would break, and mark the host tensors it made."""
    import torch
    if not _host and not by_submission:
        return  # the worker's own calls, with no host tensor anywhere: most calls
    if func is torch.set_default_device:
        if by_submission and args:
            _default_cuda[0] = _names(args[0]) == "cuda"
        return
    if func is torch.Tensor.__setitem__ and by_submission and len(args) > 2:
        # host[...] = device: the copy a GPU makes off the device (returns None, so checked here).
        if is_host(args[0]) and isinstance(args[2], torch.Tensor) and not is_host(args[2]):
            _refuse("cuda:0", "cpu")
        return
    if not isinstance(result, (torch.Tensor, tuple, list)) and func is not torch.Tensor.copy_:
        return  # sizes, strides, dtypes...
    inputs = _tensors(list(args) + list(kwargs.values()))
    if func is torch.Tensor.copy_ and len(args) > 1 and by_submission:
        if is_host(args[0]) and not is_host(args[1]):  # off the device (a host tensor may go to it)
            _refuse("cuda:0", "cpu")
        return
    named = _names(kwargs.get("device"))
    if func in (torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu) and args:
        if func is torch.Tensor.to:
            named = named or next((_names(a) for a in args[1:] if _names(a)), None)
            other = next((a for a in args[1:] if isinstance(a, torch.Tensor)), None)
            if named is None and other is not None:
                named = "cpu" if is_host(other) else "cuda"
        elif func is torch.Tensor.cuda:
            named = "cuda"
        else:
            named = "cpu"
        source = "cpu" if is_host(args[0]) else "cuda"
        if named == "cpu" and source == "cuda" and by_submission:
            _refuse("cuda:0", "cpu")
        if (named == "cpu" and by_submission) or (named is None and source == "cpu"):
            _mark(result)
        return
    if named == "cpu":
        if by_submission:
            _mark(result)
    elif named is None:
        if any(is_host(t) for t in inputs):
            _mark(result)  # a view, clone or *_like of a host tensor
        elif by_submission and not inputs and not _default_cuda[0] and isinstance(result, torch.Tensor):
            _mark(result)  # made from nothing, on torch's default device: the host


def _set_source(args: tuple, kwargs: dict):
    """(target, source) of a Tensor.set_ call, or None when it sets nothing."""
    import torch
    target = args[0] if args else None
    source = args[1] if len(args) > 1 else kwargs.get("source")
    if not issubclass(type(target), torch.Tensor) or source is None:
        return None
    return target, source


def check_set(args: tuple, kwargs: dict) -> bool:
    """The file's Tensor.set_ (judge.worker.gates.STORAGE_SETS): a GPU
    refuses a device tensor over host memory and a host tensor over device
    memory. A storage the file gives is one it made (it is never handed a
    device tensor's): the host's. Returns whether the target is the host's."""
    import torch
    pair = _set_source(args, kwargs)
    if pair is None:
        return False
    target, source = pair
    with _NO_FUNCTION_MODES():
        source_host = is_host(source) if issubclass(type(source), torch.Tensor) else True
        target_host = is_host(target)
    if target_host != source_host:
        there, here = ("cpu", "cuda:0") if source_host else ("cuda:0", "cpu")
        raise RuntimeError(f'Attempted to set the storage of a tensor on device "{here}" to a storage on '
                           f'different device "{there}".  This is no longer allowed; the devices must match.')
    return target_host


def after_set(args: tuple, kwargs: dict, host: bool) -> None:
    """A host tensor the file set over host memory (check_set said `host`)
    stays the host's under its new storage (tensors are known by their
    storage's address)."""
    if host:
        with _NO_FUNCTION_MODES():
            _mark(args[0])


def mark_if_over_storage(data: tuple, result) -> None:
    """A legacy builder (torch.Tensor(storage), Tensor.new(storage)) given a
    storage: its tensor is over host memory, as on a GPU."""
    import torch
    if data and torch_storage(type(data[0])) and issubclass(type(result), torch.Tensor):
        _mark(result)


def check_launch(args: tuple, kwargs: dict) -> None:
    """Triton's launcher on a GPU refuses a host tensor: so here, inside a
    tuple argument and below a tensor descriptor too (each had carried
    numpy's memory into a kernel unseen)."""
    for index, value in enumerate(list(args) + list(kwargs.values())):
        for inner in _within(value):
            if is_host(inner):
                raise ValueError(f"Pointer argument (at {index}) cannot be accessed from Triton (cpu tensor?)")


def _within(value, depth: int = 0) -> list:
    """`value` and the tensors a launch reaches through it: a tuple's items,
    a tensor descriptor's base (read from its own attributes, never through
    a property of the file's)."""
    if type(value) in (tuple, list) and depth < 8:
        return [inner for item in value for inner in _within(item, depth + 1)]
    if _DESCRIPTOR is not None and isinstance(value, _DESCRIPTOR):
        return [value, object.__getattribute__(value, "__dict__").get("base")]
    return [value]


def refuse_reads_of(name: str, data: list) -> None:
    """torch.tensor (as_tensor, asarray, new_tensor) given tensors inside a
    list or tuple, in solve: every element read on the host."""
    import torch
    if any(isinstance(value, torch.Tensor) for value in _elements(data)):
        _refuse_host(f"torch.{name} of a list of tensors (each element read on the host)")


def plain(data, depth: int = 0):
    """`data` for a tensor builder with every sequence in it read once into
    a list: torch reads any object with __len__ and __getitem__ as a
    sequence, below the rules, and a file's own sequence class held the
    input's one-element views. Read once, so that what is checked
    (refuse_reads_of) is what torch is given."""
    import numbers

    import numpy as np
    import torch
    if depth > 64 or isinstance(data, (torch.Tensor, np.ndarray, numbers.Number, str, bytes, bytearray, memoryview,
                                       torch.Size)) or data is None or torch_storage(type(data)):
        return data  # a torch.Size kept as it is: Tensor.new(x.size()) reads it as sizes, a list as data
    kind = type(data)
    if kind is tuple:
        return tuple(plain(item, depth + 1) for item in data)
    if isinstance(data, (list, tuple)) or (hasattr(kind, "__len__") and hasattr(kind, "__getitem__")
                                           and not hasattr(kind, "__array__") and not isinstance(data, dict)):
        return [plain(item, depth + 1) for item in list(data)]
    return data


def checked_data(name: str, at: int, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A tensor builder's arguments with its data (positional at `at`, or
    `data=`/`obj=`) read once into lists (plain), refused if a tensor sits
    inside (refuse_reads_of); what the builder is then given."""
    if len(args) > at:
        args = args[:at] + (plain(args[at]),) + args[at + 1:]
    kwargs = {key: plain(value) if key in ("data", "obj") else value for key, value in kwargs.items()}
    refuse_reads_of(name, list(args[at:at + 1]) + [kwargs.get("data"), kwargs.get("obj")])
    return args, kwargs


def patch_builders(inside_triton) -> dict:
    """torch.tensor, as_tensor, asarray, Tensor.new_tensor and the legacy
    Tensor.new, while solve runs, with refuse_reads_of's check in front. On a GPU torch builds such
    a tensor with its dispatch modes off, so the operator guard never sees
    the element-by-element reads of a list of device tensors (two probes'
    files passed every case but the largest on the H100). The CPU mode's
    function mode checks the same calls however they are reached; this
    catches them on a GPU where they are reached through torch's names.
    Returns the originals, for unpatch_builders."""
    import torch
    originals = {}
    for owner, name, at in ((torch, "tensor", 0), (torch, "as_tensor", 0), (torch, "asarray", 0),
                            (torch.Tensor, "new_tensor", 1), (torch.Tensor, "new", 1)):
        original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if original is None:
            continue
        def builder(*args, _original=original, _name=name, _at=at, **kwargs):
            if not inside_triton():
                args, kwargs = checked_data(_name, _at, args, kwargs)
            return _original(*args, **kwargs)

        originals[(owner, name)] = (original, builder)
        setattr(owner, name, builder)
    return originals


def unpatch_builders(originals: dict) -> bool:
    """Put the builders back; False if solve had replaced a wrapper."""
    intact = True
    for (owner, name), (original, builder) in originals.items():
        current = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        intact &= current is builder  # the very wrapper put there (a file's object named "builder" passed)
        setattr(owner, name, original)
    return intact


def refuse_scalar_read(name: str, tensor) -> None:
    """float(), int(), bool() of a device tensor in solve: its value read on
    the host (a GPU's `_local_scalar_dense`, which the rules refuse; torch's
    legacy constructors, torch.Tensor(list), read each element so, below
    the operator guard)."""
    if not is_host(tensor):
        _refuse_host(f"{name} of a device tensor (its value read on the host)")


def _elements(data: list, limit: int = 100_000):
    """What sits inside the lists and tuples of `data` (not `data`'s own items
    when they are tensors: torch.tensor(t) of one tensor is a copy on its device)."""
    items = [item for item in data if isinstance(item, (list, tuple))]
    count = 0
    while items and count < limit:
        item = items.pop()
        for value in item:
            count += 1
            if isinstance(value, (list, tuple)):
                items.append(value)
            else:
                yield value


def _refuse_host(what: str) -> None:
    from judge.worker import audit
    from judge.worker.rules import SOLVING, RuleViolation
    if not SOLVING[0]:
        return
    message = f"rule: no host round trip of the data: {what} in solve"
    audit.report(message)
    raise RuleViolation(message)


def _refuse(source: str, destination: str) -> None:
    """A copy between the host and the GPU, in solve (at import the rules
    do not apply on a GPU either)."""
    _refuse_host(f"a copy from {source} to {destination}")


del _host, _default_cuda  # kept in the defaults above only
