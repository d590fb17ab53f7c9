"""CPU mode: programs of one launch that share memory without atomics.

A GPU runs a launch's programs in parallel; Triton's interpreter runs them
one after another. A kernel whose programs communicate through plain
loads and stores is therefore right under the interpreter and wrong on a
GPU, where what a program reads depends on timing: a sum accumulated with
tl.store(out, tl.load(out) + part) instead of tl.atomic_add (on the H100,
2562.6 for a sum of 524927.4), or one program publishing a statistic that
the others read in the same launch. Such a file was accepted on the CPU.

Here each launch's plain stores are recorded with the program that made
them, and a plain load by another program of an address one of them
stored stops the launch with RaceFound: the case is a wrong answer, as a
GPU most likely makes it, with the programs and the fix named. It is
raised, not recorded for later: a record in the worker's Python would be
the file's to erase once its launch returned.

Within one program, the GPU runs a block's elements on different threads:
a program that stores a block and then loads, without tl.debug_barrier(),
an element another of its elements stored (a block reversed through a
scratch buffer) reads what may not be there yet (on the H100, a quarter of
the elements of such a reverse were wrong). The interpreter computes the
block whole, so it comes out right. Here a load of a block is checked
against the current program's own block stores since its last barrier: an
address loaded at another position of the block than the one that stored
it is a race too. (Scalars are left out: which thread stores one is the
compiler's business.)

Atomics order programs, so a launch that uses them gets a narrower check.
With a lock (atomic_cas or atomic_xchg), programs may take turns on the same
data: left alone. With counters only (atomic_add and the like: the
last-block pattern, where the program that counts last reads what the
others stored, once per counter), an address stored plainly may still be
read by one other program, not by several: a sum accumulated with plain
loads and stores beside an atomic that orders nothing was accepted.
"""

from __future__ import annotations

import numpy as np

_NO_SPAN = (1 << 64, -1)
# own: address -> position in its block, of the current program's block stores since its last barrier
# readers: address -> the one program that read it after another stored it (counters only)
_launch: dict = {"program": None, "stored": {}, "spans": [], "atomics": False, "locks": False, "own": {},
                 "own_span": _NO_SPAN, "readers": {}}


class RaceFound(BaseException):
    """A program read what another program of its launch stored plainly.
    A BaseException, so that Triton's own `except Exception` passes it on;
    a file that catches it has its launch stopped all the same."""


def install(builder) -> None:
    """Watch the interpreter's launches, programs, loads, stores and atomics."""
    set_dim, set_idx = builder.set_grid_dim, builder.set_grid_idx
    load, store = builder.create_masked_load, builder.create_masked_store
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas
    barrier = builder.create_barrier

    def set_grid_dim(self, nx, ny, nz):
        _launch.update(program=None, stored={}, spans=[], atomics=False, locks=False, own={}, own_span=_NO_SPAN,
                       readers={})
        return set_dim(self, nx, ny, nz)

    def set_grid_idx(self, x, y, z):
        _launch["program"] = (int(x), int(y), int(z))
        _launch.update(own={}, own_span=_NO_SPAN)
        return set_idx(self, x, y, z)

    def create_barrier(self):
        _launch.update(own={}, own_span=_NO_SPAN)  # every store of the program so far is seen by all its threads
        return barrier(self)

    def create_masked_load(self, ptrs, mask, other, *rest, **more):
        if _launch["stored"] and not _launch["locks"]:
            _check(ptrs.data, mask.data, one_reader=_launch["atomics"])
            if _launch["own"] and not _launch["atomics"]:
                _check_own(ptrs.data, mask.data)
        return load(self, ptrs, mask, other, *rest, **more)

    def create_masked_store(self, ptrs, value, mask, *rest, **more):
        if not _launch["locks"]:
            _record(ptrs.data, mask.data)
        return store(self, ptrs, value, mask, *rest, **more)

    def create_atomic_rmw(self, op, *args, **kwargs):
        _launch["atomics"] = True
        if "XCHG" in str(op).upper():
            _launch["locks"] = True
        return rmw(self, op, *args, **kwargs)

    def create_atomic_cas(self, *args, **kwargs):
        _launch.update(atomics=True, locks=True)
        return cas(self, *args, **kwargs)

    builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx
    builder.create_masked_load, builder.create_masked_store = create_masked_load, create_masked_store
    builder.create_atomic_rmw, builder.create_atomic_cas = create_atomic_rmw, create_atomic_cas
    builder.create_barrier = create_barrier


def _addresses(ptrs, mask) -> np.ndarray:
    ptrs = np.asarray(ptrs)
    if mask is None:
        return ptrs.ravel()
    return ptrs[np.broadcast_to(np.asarray(mask, dtype=bool), ptrs.shape)]


def _positions(ptrs, mask) -> np.ndarray:
    """Each address's position in its block, in _addresses' order."""
    ptrs = np.asarray(ptrs)
    if mask is None:
        return np.arange(ptrs.size)
    return np.flatnonzero(np.broadcast_to(np.asarray(mask, dtype=bool), ptrs.shape))


def _record(ptrs, mask) -> None:
    addresses = _addresses(ptrs, mask)
    if addresses.size == 0:
        return
    program = _launch["program"]
    listed = addresses.tolist()
    _launch["stored"].update(dict.fromkeys(listed, program))
    if np.asarray(ptrs).size > 1:
        _launch["own"].update(zip(listed, _positions(ptrs, mask).tolist()))
        span = _launch["own_span"]
        _launch["own_span"] = (min(span[0], int(addresses.min())), max(span[1], int(addresses.max())))
    low, high = int(addresses.min()), int(addresses.max())
    spans = _launch["spans"]
    if spans and low <= spans[-1][1] + 64 and high >= spans[-1][0] - 64:
        spans[-1] = (min(low, spans[-1][0]), max(high, spans[-1][1]))
    else:
        spans.append((low, high))


def _check(ptrs, mask, one_reader: bool = False) -> None:
    """A plain load of what another program stored: a race; with counters
    only (`one_reader`), a race once a second program reads it."""
    addresses = _addresses(ptrs, mask)
    if addresses.size == 0:
        return
    low, high = int(addresses.min()), int(addresses.max())
    if not any(low <= end and start <= high for start, end in _launch["spans"]):
        return  # another buffer than any stored to: inputs, mostly
    stored, program, readers = _launch["stored"], _launch["program"], _launch["readers"]
    for address in stored.keys() & set(addresses.tolist()):
        writer = stored[address]
        if writer != program and one_reader:
            first = readers.setdefault(address, program)
            if first != program:
                raise RaceFound(
                    f"data race: programs {first} and {program} of a launch both loaded an address that another "
                    f"program (last: {writer}) had written with a plain store. Only atomics order a GPU's programs, "
                    "and here they order nothing between these: combine results with tl.atomic_add and friends, "
                    "or in a second launch")
        elif writer != program:
            raise RaceFound(
                f"data race: program {program} of a launch loaded an address that program {writer} of the same "
                "launch had written with a plain store. A GPU runs a launch's programs in parallel, so what is "
                "read there depends on timing (Triton's interpreter runs them one by one, where it happens to come out "
                "right); combine results with tl.atomic_add and friends, or in a second launch")


def _check_own(ptrs, mask) -> None:
    if np.asarray(ptrs).size <= 1:
        return
    own = _launch["own"]
    addresses = _addresses(ptrs, mask)
    if addresses.size == 0:
        return
    low, high = _launch["own_span"]
    if int(addresses.max()) < low or int(addresses.min()) > high:
        return  # none of the program's own stores: an input, mostly
    for address, position in zip(addresses.tolist(), _positions(ptrs, mask).tolist()):
        stored_at = own.get(address)
        if stored_at is not None and stored_at != position:
            raise RaceFound(
                f"data race: program {_launch['program']} loaded, at position {position} of a block, an address "
                f"it had stored from position {stored_at} of a block, with no tl.debug_barrier() between. A GPU "
                "computes a block's elements on different threads, which do not wait for each other's stores "
                "(Triton's interpreter computes the block whole, where it happens to come out right); put "
                "tl.debug_barrier() between the store and the load")
