"""CPU mode: the memory a kernel may write.

Under Triton's interpreter a kernel's pointers are host addresses, and
its stores and atomics write wherever they point: a kernel handed id() of
the interned string 'mm' (the operator's name the guard reads) rewrote it
to 't_', and torch.mm in solve then passed as an allowed view (accepted).
On a GPU the same store hits an address no kernel can reach and faults.

So a kernel launched under the interpreter writes only into the storage of
a tensor it was given (its arguments, in tuples and tensor descriptors too)
or of a tensor whose data_ptr() the file read and the kernel turned back
into a pointer (LeetGPU's raw-pointer starter, a table of addresses). A
store elsewhere ends the launch as the GPU's illegal address does:
runtime_error (judge.worker.interpret). A stray store into a handed
buffer's guard band stays a store into that buffer, which the judge sees
as on a GPU. Reads are not bounded: an honest unmasked tile reads past its
input on a GPU too, into the NaN guard band.

State lives in the functions' defaults, which a file may not read
(judge.worker.audit_events), not in module globals within its reach.
"""

from __future__ import annotations

import numpy as np

from judge.worker.op_tables import ADDRESS_TAG


class StrayWrite(BaseException):
    """A kernel's store outside every tensor it may write. A BaseException,
    so that the interpreter's own `except Exception` passes it on."""


def _make():
    import torch
    # A tensor's storage read with torch's function modes off: the CPU
    # worker's mode hands untyped_storage back to its gate, which would see
    # the file's frames below and call it the file's host read.
    storage_method = torch._C.TensorBase.untyped_storage
    modes_off = torch._C.DisableTorchFunction

    def storage_of(tensor, _method=storage_method, _off=modes_off):
        with _off():
            return _method(tensor)

    storage_address = torch._C.StorageBase.data_ptr
    storage_bytes = torch._C.StorageBase.nbytes
    tensor_type, storage_type = torch._C.TensorBase, torch._C.StorageBase
    # the launch's ranges (starts, ends: sorted uint64 arrays, or None when
    # no launch runs) and the storages whose addresses the file holds
    state = {"ranges": None, "held": {}}

    def span(storage, _address=storage_address, _bytes=storage_bytes, _tag=ADDRESS_TAG):
        start = _address(storage) & ~_tag
        return start, start + _bytes(storage)

    from triton.tools.tensor_descriptor import TensorDescriptor

    def collect(values, into: list, _tensor=tensor_type, _storage_of=storage_of, _span=span,
                _descriptor=TensorDescriptor) -> None:
        pending = list(values)
        while pending:
            value = pending.pop()
            if isinstance(value, _tensor):
                into.append(_span(_storage_of(value)))
            elif isinstance(value, tuple):  # a tl tuple of pointers
                pending.extend(value)
            elif isinstance(value, _descriptor) and isinstance(value.base, _tensor):
                into.append(_span(_storage_of(value.base)))

    def ranges_of(spans, _np=np):
        merged: dict = {}
        for start, end in spans:
            if end > start:
                merged[start] = max(end, merged.get(start, 0))
        starts = sorted(merged)
        return (_np.array(starts, dtype=_np.uint64), _np.array([merged[s] for s in starts], dtype=_np.uint64))

    def begin(args, kwargs, _state=state, _collect=collect, _ranges_of=ranges_of) -> None:
        """A launch starts: its tensor arguments' storages may be written."""
        spans: list = []
        _collect(args, spans)
        _collect(kwargs.values(), spans)
        _state["ranges"] = _ranges_of(spans)

    def end(_state=state) -> None:
        _state["ranges"] = None

    from judge.worker.host_tensors import is_host, is_host_storage

    def hold(obj, _state=state, _tensor=tensor_type, _storage=storage_type, _storage_of=storage_of,
             _is_host=is_host, _is_host_storage=is_host_storage, _off=modes_off) -> None:
        """The file read this tensor's (or storage's) address: a kernel that
        turns it back into a pointer may write that storage, if a GPU's
        kernel could (device memory: not the host's, judge.worker.host_tensors,
        so no numpy array's memory, nor a scratch tensor made without a
        device). The storage is held, so that its memory is never another
        allocation's while the address is out."""
        with _off():
            if isinstance(obj, _tensor):
                storage = None if _is_host(obj) else _storage_of(obj)
            else:
                storage = obj if isinstance(obj, _storage) else None
            if storage is not None and not _is_host_storage(storage):
                _state["held"].setdefault(storage._cdata, storage)

    def grant(addresses, _state=state, _np=np, _span=span, _ranges_of=ranges_of,
              _is_host_storage=is_host_storage) -> np.ndarray:
        """Addresses a kernel turns into pointers: returned untagged; a tagged
        one inside a held storage adds that storage to the launch's ranges."""
        data = _np.asarray(addresses)
        tag = data.dtype.type(ADDRESS_TAG)
        tagged = (data & tag) != 0
        if not tagged.any():
            return data
        untagged = data & ~tag
        ranges = _state["ranges"]
        if ranges is not None:
            wanted = _np.unique(untagged[tagged]).astype(_np.uint64)
            spans = list(zip(ranges[0].tolist(), ranges[1].tolist()))
            for storage in list(_state["held"].values()):
                if _is_host_storage(storage):  # its memory moved to the host's since (asked again)
                    continue
                start, stop = _span(storage)
                # one past its end too: a kernel may walk back from there (reversed order)
                if ((wanted >= start) & (wanted <= stop)).any():
                    spans.append((start, stop))
            _state["ranges"] = _ranges_of(spans)
        return untagged

    def check(ptrs, mask, itemsize: int, what: str, _state=state, _np=np, _error=StrayWrite) -> None:
        """Raise StrayWrite when a store's (unmasked) addresses leave the
        launch's ranges."""
        ranges = _state["ranges"]
        if ranges is None:
            return  # no launch of the worker's runs: judge.worker.raw_memory refuses the call already
        addresses = _np.asarray(ptrs).astype(_np.uint64, copy=False).ravel()
        if mask is not None:
            addresses = addresses[_np.broadcast_to(_np.asarray(mask, dtype=bool), _np.shape(ptrs)).ravel()]
        if addresses.size == 0:
            return
        starts, ends = ranges
        index = _np.searchsorted(starts, addresses, side="right").astype(_np.int64) - 1
        inside = (index >= 0) & (addresses + _np.uint64(itemsize) <= ends[_np.maximum(index, 0)])
        if not inside.all():
            first = int(addresses[~inside][0])
            raise _error(f"illegal memory access: the kernel's {what} wrote {int((~inside).sum())} element(s) "
                         f"outside every tensor it was given (first at {first:#x}); on a GPU such a store faults "
                         f"or overwrites other memory")

    return begin, end, hold, grant, check


begin, end, hold, grant, check = _make()
