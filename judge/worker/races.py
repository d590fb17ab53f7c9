"""CPU mode: programs of one launch that share memory without atomics.

A GPU runs a launch's programs in parallel; Triton's interpreter runs them
one after another. A kernel whose programs communicate through plain
loads and stores is therefore right under the interpreter and wrong on a
GPU, where what a program reads depends on timing: a sum accumulated with
tl.store(out, tl.load(out) + part) instead of tl.atomic_add (on the H100,
2562.6 for a sum of 524927.4), or one program publishing a statistic that
the others read in the same launch. Such a file was accepted on the CPU.

Here each launch's plain stores are recorded with the program that made
them, and a plain load by another program of an address one of them stored
reads NaN in those lanes, what a GPU may read before the store lands: a
race whose value reaches an output makes it wrong (the worker names the
programs and the fix beside it), and a lane loaded and then masked off at
its store is, as on a GPU, no harm (an honest in-place reversal whose loads
reach past the pairs it swaps was refused). Integers have no such value: a
racy integer load stops the launch with RaceFound, raised rather than
recorded (a record in the worker's Python would be the file's to erase once
its launch returned).

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
A program that holds a lock (an atomic_cas that swapped, until an
atomic_xchg gives it back) may read what others stored: programs take turns
there. With counters (atomic_add and the like: the last-block pattern, where
the program that counts last reads what the others stored), an address
stored plainly may be read by one other program, not by several, and no more
programs may read others' stores than the launch has scalar counters: a sum
accumulated with plain loads and stores beside an atomic that orders
nothing, or a chain of programs each reading the previous one's total, was
accepted. An 8-byte store covers both its 4-byte halves (a total stored as
an int64 and read back as a float32 from its upper half).
"""

from __future__ import annotations

import numpy as np

_NO_SPAN = (1 << 64, -1)
# own: address -> position in its block, of the current program's block stores since its last barrier
# readers: address -> the one program that read it after another stored it (counters only);
# reading: the programs that did; counters: addresses of scalar atomics (not locks); holding: a lock taken
_launch: dict = {"program": None, "stored": {}, "spans": [], "atomics": False, "holding": False, "own": {},
                 "own_span": _NO_SPAN, "readers": {}, "reading": set(), "counters": set()}


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
        _launch.update(program=None, stored={}, spans=[], atomics=False, holding=False, own={}, own_span=_NO_SPAN,
                       readers={}, reading=set(), counters=set())
        return set_dim(self, nx, ny, nz)

    def set_grid_idx(self, x, y, z):
        _launch["program"] = (int(x), int(y), int(z))
        _launch.update(own={}, own_span=_NO_SPAN, holding=False)
        return set_idx(self, x, y, z)

    def create_barrier(self):
        _launch.update(own={}, own_span=_NO_SPAN)  # every store of the program so far is seen by all its threads
        return barrier(self)

    def create_masked_load(self, ptrs, mask, other, *rest, **more):
        racy, said, wide = set(), "", _width(ptrs) == 8
        if _launch["stored"] and not _launch["holding"]:
            racy, said = _check(ptrs.data, mask.data, one_reader=_launch["atomics"], wide=wide)
            if _launch["own"] and not _launch["atomics"]:
                _check_own(ptrs.data, mask.data)
        out = load(self, ptrs, mask, other, *rest, **more)
        if not racy:
            return out
        data = np.asarray(out.data)
        if not np.issubdtype(data.dtype, np.floating):
            raise RaceFound(said)  # no value stands for "not there yet" in an integer
        # A racy read is what a GPU may read before it is written: NaN here, so
        # that only a race whose value reaches an output fails (a lane loaded
        # and then masked off at its store is no race on a GPU either).
        _note[0] = _note[0] or said
        poisoned = np.where(_poisoned(ptrs.data, mask.data, racy, wide), np.asarray(np.nan, dtype=data.dtype), data)
        return type(out)(poisoned, out.dtype)

    def create_masked_store(self, ptrs, value, mask, *rest, **more):
        _record(ptrs.data, mask.data, wide=np.asarray(value.data).dtype.itemsize == 8)
        return store(self, ptrs, value, mask, *rest, **more)

    def create_atomic_rmw(self, op, ptr, *args, **kwargs):
        _launch["atomics"] = True
        if "XCHG" in str(op).upper():
            _launch["holding"] = False  # a lock given back (or a value swapped in: no lock held either way)
        elif np.asarray(ptr.data).size == 1:
            _launch["counters"].add(int(np.asarray(ptr.data).ravel()[0]))
        return rmw(self, op, ptr, *args, **kwargs)

    def create_atomic_cas(self, ptr, cmp, *args, **kwargs):
        _launch["atomics"] = True
        old = cas(self, ptr, cmp, *args, **kwargs)
        if np.array_equal(np.asarray(old.data), np.asarray(cmp.data)):
            _launch["holding"] = True  # it swapped: a lock taken (one that never swaps orders nothing)
        return old

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


def _width(ptrs) -> int:
    """Bytes of the element a pointer (block) points to; 4 when not known."""
    kind = getattr(ptrs, "dtype", None)
    kind = getattr(kind, "scalar", kind)
    return int(getattr(getattr(kind, "element_ty", None), "primitive_bitwidth", 32)) // 8


def _record(ptrs, mask, wide: bool = False) -> None:
    addresses = _addresses(ptrs, mask)
    if addresses.size == 0:
        return
    program = _launch["program"]
    listed = addresses.tolist()
    _launch["stored"].update(dict.fromkeys(listed, program))
    if wide:  # its upper half, as a 4-byte load would name it
        _launch["stored"].update(dict.fromkeys((addresses + 4).tolist(), program))
    if np.asarray(ptrs).size > 1:
        _launch["own"].update(zip(listed, _positions(ptrs, mask).tolist()))
        span = _launch["own_span"]
        _launch["own_span"] = (min(span[0], int(addresses.min())), max(span[1], int(addresses.max())))
    low, high = int(addresses.min()), int(addresses.max()) + (4 if wide else 0)
    spans = _launch["spans"]
    if spans and low <= spans[-1][1] + 64 and high >= spans[-1][0] - 64:
        spans[-1] = (min(low, spans[-1][0]), max(high, spans[-1][1]))
    else:
        spans.append((low, high))


def _check(ptrs, mask, one_reader: bool = False, wide: bool = False) -> tuple[set, str]:
    """The addresses of this plain load that another program stored (a
    race; with counters, `one_reader`, a race once a second program reads
    one, or once more programs read others' stores than there are
    counters), and what to say of the first. `wide`: 8-byte elements, whose
    upper halves count too."""
    addresses = _addresses(ptrs, mask)
    if addresses.size == 0:
        return set(), ""
    if wide:
        addresses = np.concatenate([addresses, addresses + 4])
    low, high = int(addresses.min()), int(addresses.max())
    if not any(low <= end and start <= high for start, end in _launch["spans"]):
        return set(), ""  # another buffer than any stored to: inputs, mostly
    stored, program, readers = _launch["stored"], _launch["program"], _launch["readers"]
    racy, said = set(), ""
    for address in stored.keys() & set(addresses.tolist()):
        writer = stored[address]
        if writer == program:
            continue
        if one_reader:
            first = readers.setdefault(address, program)
            reading = _launch["reading"]
            reading.add(program)
            if len(reading) > max(1, len(_launch["counters"])):
                said = said or (
                    f"data race: {len(reading)} programs of a launch (the last: {program}) loaded addresses "
                    f"other programs had written with plain stores, with {len(_launch['counters'])} atomic "
                    "counter(s) to order them: only the program that counts last may read what the others "
                    "stored. Combine results with tl.atomic_add and friends, or in a second launch")
            elif first != program:
                said = said or (
                    f"data race: programs {first} and {program} of a launch both loaded an address that another "
                    f"program (last: {writer}) had written with a plain store. Only atomics order a GPU's programs, "
                    "and here they order nothing between these: combine results with tl.atomic_add and friends, "
                    "or in a second launch")
            else:
                continue
        else:
            said = said or (
                f"data race: program {program} of a launch loaded an address that program {writer} of the same "
                "launch had written with a plain store. A GPU runs a launch's programs in parallel, so what is "
                "read there depends on timing (Triton's interpreter runs them one by one, where it happens to come "
                "out right); combine results with tl.atomic_add and friends, or in a second launch")
        racy.add(address)
    return racy, said


def _poisoned(ptrs, mask, racy: set, wide: bool) -> np.ndarray:
    """The lanes of a load that read a racy address (block-shaped)."""
    ptrs = np.asarray(ptrs)
    keys = np.fromiter(racy, dtype=np.int64, count=len(racy))
    hit = np.isin(ptrs, keys) | (np.isin(ptrs + 4, keys) if wide else False)
    if mask is not None:
        hit &= np.broadcast_to(np.asarray(mask, dtype=bool), ptrs.shape)
    return hit


NOTE = ("race note",)  # the audit hook's record of a call's first race (judge.worker.audit.memo)


def end_launch() -> None:
    """A launch's records, out of the file's reach once it returns: what it
    stored where is data (a file read every input back from the addresses
    its kernel stored to, in this module's record), so the record is
    emptied, and the race note kept in the audit hook."""
    from judge.worker import audit
    if _note[0] and not audit.memo(NOTE):
        audit.memo(NOTE, _note[0])
    _note[0] = ""
    _launch.update(program=None, stored={}, spans=[], atomics=False, holding=False, own={}, own_span=_NO_SPAN,
                   readers={}, reading=set(), counters=set())


def take_note() -> str:
    """The first race a call's loads read through (their lanes read as NaN),
    then forgotten: the worker says it beside a wrong output."""
    from judge.worker import audit
    said = audit.memo(NOTE) or ""
    audit.memo(NOTE, None)
    return said


_note = [""]  # the launch now running's (end_launch moves it out)


# Triton's blocked layout deals a block's elements to its threads in runs of
# size_per_thread, round the launch's 32·num_warps threads, so two positions
# a multiple of that apart are one thread's (stored with a block of 1024,
# reloaded with one of 2048: the same thread, right on the H100). Neither the
# run nor the warps are known here: a race is said only where no layout of
# these would give both positions to one thread.
_RUNS = (1, 2, 4, 8, 16)
_THREADS = (32, 64, 128, 256, 512, 1024)


def _maybe_one_thread(first: int, second: int) -> bool:
    return any((first // run) % threads == (second // run) % threads for run in _RUNS for threads in _THREADS)


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
        if stored_at is not None and stored_at != position and not _maybe_one_thread(stored_at, position):
            raise RaceFound(
                f"data race: program {_launch['program']} loaded, at position {position} of a block, an address "
                f"it had stored from position {stored_at} of a block, with no tl.debug_barrier() between. A GPU "
                "computes a block's elements on different threads, which do not wait for each other's stores "
                "(Triton's interpreter computes the block whole, where it happens to come out right); put "
                "tl.debug_barrier() between the store and the load")
