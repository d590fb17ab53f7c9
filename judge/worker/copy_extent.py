"""Whether a torch copy in solve takes whole tensors only, for a challenge
whose rules allow copies of whole tensors and no part of one
(judge.challenge_spec.Rules.whole_copies_only; read by judge.worker.rules).

A copy of whole tensors keeps the order of the bytes, so it cannot move
data where a kernel should. Each of these broke that and is refused:
- a part of a tensor (a slice, a transposed view, a window of a scratch
  buffer between padding: shifted by the padding's length);
- a conversion (int64 to int32 keeps every other float32 of a dtype view:
  a gather), or a copy into another memory format (a transpose);
- a view that is a whole allocation's only by its own numbers (a dtype view
  has no base): what counts is the storage it covers, all of it.
The tensors the worker handed to solve sit between guard bands
(judge.worker.buffers): each is whole, known by its storage, which the
worker records out of the file's reach (judge.worker.audit.memo) by its
StorageImpl's address (torch._C._storage_address: no data address)."""

from __future__ import annotations

from judge.protocol import INPUT_GUARD, OUTPUT_GUARD
from judge.worker.op_identity import SCHEMA

HANDED = ("handed",)  # the memo key: storage addresses of the buffers handed to solve
HANDED_BYTES = ("handed", "bytes")  # the same buffers' guard bands, in bytes


def all_whole(name: str, args, kwargs) -> bool:
    """Every tensor among an operator's arguments is all of what it was made
    as, every one of the same dtype as the others and as the result, in the
    usual memory format; and the operator keeps their order: torch.cat along
    the first dimension only (along another it interleaves the rows), padding
    that only adds (a negative pad crops: halves cropped out and joined the
    other way round reversed the array), a copy_ from a tensor of its own
    shape (a broadcast repeats)."""
    kwargs = kwargs or {}
    if not _keeps_order(name, args, kwargs):
        return False
    if kwargs.get("memory_format") not in (None, torch.preserve_format, torch.contiguous_format):
        return False
    dtypes = {kwargs["dtype"]} if kwargs.get("dtype") is not None else set()
    items = list(args) + list(kwargs.values())
    while items:
        item = items.pop()
        if isinstance(item, (list, tuple)):
            items += list(item)
        elif isinstance(item, torch.Tensor):
            if not _whole(item):
                return False
            dtypes.add(_C.TensorBase.dtype.__get__(item))
    return len(dtypes) <= 1


def _keeps_order(name: str, args, kwargs) -> bool:
    rank, numel, size = _C.TensorBase.dim, _C.TensorBase.numel, _C.TensorBase.size
    if name == "cat":
        tensors = args[0] if args else kwargs.get("tensors", ())
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        ranks = {rank(t) for t in tensors if isinstance(t, torch.Tensor) and numel(t)}
        return type(dim) is int and all(dim % r == 0 for r in ranks if r)
    if name == "stack":  # along the first dimension only, as cat
        tensors = args[0] if args else kwargs.get("tensors", ())
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        ranks = {rank(t) for t in tensors if isinstance(t, torch.Tensor)}
        return type(dim) is int and all(dim % (r + 1) == 0 for r in ranks)
    if name == "constant_pad_nd":
        pad = args[1] if len(args) > 1 else kwargs.get("pad", ())
        return all(type(p) is int and p >= 0 for p in pad)
    if name == "copy_" and len(args) > 1 and isinstance(args[1], torch.Tensor):
        return tuple(size(args[0])) == tuple(size(args[1]))
    return True


import torch  # noqa: E402  the worker imports torch before its own modules: taken below before any gate

_C = torch._C


def _whole(tensor, _contiguous=_C.TensorBase.is_contiguous, _numel=_C.TensorBase.numel,
           _offset=_C.TensorBase.storage_offset, _size=_C.TensorBase.element_size,
           _storage=_C.TensorBase.untyped_storage, _nbytes=_C.StorageBase.nbytes,
           _address=_C._storage_address) -> bool:
    # torch's own functions, taken as this module loads: the file cannot swap
    # them (a function's defaults are sealed), and untyped_storage is gated
    # for the file by then (judge.worker.gates.HOST), which reaches this
    # check through its copy.
    if not _contiguous(tensor):
        return False
    n, offset, size = _numel(tensor), _offset(tensor), _size(tensor)
    nbytes = _nbytes(_storage(tensor))
    if offset == 0 and n * size == nbytes:
        return True  # all of its storage
    # A tensor handed to solve: its buffer's storage, less that buffer's own guard bands.
    band = _handed().get(_address(tensor))
    return band is not None and offset == band and n == nbytes // size - 2 * band


def _handed() -> dict:
    return dict(_memo(HANDED))


def record_handed(buffers, band: int, _address=_C._storage_address) -> None:
    """Add these buffers (made by the worker for solve, between guard bands
    of `band` elements) to what counts as handed."""
    from judge.worker import audit
    audit.memo(HANDED, tuple({**_handed(), **{_address(b): band for b in buffers}}.items()))
    audit.memo(HANDED_BYTES, tuple({**dict(_memo(HANDED_BYTES)),
                                    **{_address(b): band * _C.TensorBase.element_size(b) for b in buffers}}.items()))


def forget_handed() -> None:
    """A new request: the buffers of earlier ones are handed no more."""
    from judge.worker import audit
    audit.memo(HANDED, ())
    audit.memo(HANDED_BYTES, ())


def writes_into_band(op, args, kwargs, _address=_C._storage_address, _offset=_C.TensorBase.storage_offset,
                     _size=_C.TensorBase.size, _stride=_C.TensorBase.stride, _item=_C.TensorBase.element_size,
                     _storage=_C.TensorBase.untyped_storage, _nbytes=_C.StorageBase.nbytes) -> bool:
    """Does this operator write into a guard band of a buffer handed to solve?
    (A file reached its output's buffer through ._base and wrote the band's
    public pattern back over its kernel's stray stores, with fill_: the
    judge's check of the bands found nothing.) The tensors the operator's
    schema marks as written: the bytes each one's elements span, by its
    offset, sizes and strides, against the buffer's bands. `op`: the
    operator's Identity (judge.worker.op_identity), or None."""
    schema = op[SCHEMA] if op is not None else None
    if schema is None or not getattr(schema, "is_mutable", False):
        return False
    bands = None
    for index, argument in enumerate(schema.arguments):
        alias = argument.alias_info
        if alias is None or not alias.is_write:
            continue
        target = args[index] if index < len(args) else kwargs.get(argument.name)
        for tensor in target if isinstance(target, (list, tuple)) else (target,):
            if not isinstance(tensor, torch.Tensor) or 0 in tuple(_size(tensor)):
                continue
            bands = dict(_memo(HANDED_BYTES)) if bands is None else bands
            band = bands.get(_address(tensor))
            if band is None:
                continue
            steps = [(n - 1) * s for n, s in zip(_size(tensor), _stride(tensor))]
            item = _item(tensor)
            low = (_offset(tensor) + sum(step for step in steps if step < 0)) * item
            high = (_offset(tensor) + sum(step for step in steps if step > 0)) * item + item
            if low < band or high > _nbytes(_storage(tensor)) - band:
                return True
    return False


def _memo(key):
    from judge.worker import audit
    return audit.memo(key) or ()


def crossing(name: str, args, kwargs) -> tuple | None:
    """(source, destination) devices of a copy off a device (to the host, or
    to another GPU), else None. A host tensor copied to the device carries
    nothing of the data, which never reaches the host (a scratch made with
    torch.zeros(n).to(x.device) is an honest habit, and LeetGPU's rules
    allow it; a kernel's arguments carry host values to the device anyway).
    For copy_ and _to_copy (judge.worker.rules.TRANSFER_OPS)."""
    src = _device_of(args[1]) if name == "copy_" and len(args) > 1 else _device_of(args[0]) if args else None
    dst = _device_of(args[0]) if name == "copy_" else kwargs.get("device") or src
    if src is not None and dst is not None and str(src) != str(dst) and str(src) != "cpu":
        return src, dst
    return None


def _device_of(x):
    if isinstance(x, torch.Tensor):
        return torch._C.TensorBase.device.__get__(x)  # not a subclass's own `device`, which is its code
    return getattr(x, "device", None) if isinstance(x, (torch.device, str)) else None
