"""The seal's record: what must not change once the file may run, and the
check that it has not (untrusted side: run inside the audit hook, whose
closure alone holds the record, judge.worker.audit).

Sealed are (owner, name) pairs, each compared by identity and by what its
function closes over (the worker's own code and tables, the gates'
stand-ins, what carries the worker's answers: judge.worker.arming), and
whole namespaces (owner, None), where a member added, removed or replaced
is a change: torch.Tensor's and Python's builtins, which the worker's own
code uses after solve (a property of the file's as torch.Tensor.cpu, or
builtins.sorted swapped, ran torch.add there).
"""

from __future__ import annotations

import sys

from judge.worker.refusals import named_builtins

_MODULE = type(sys)


CELLS = "<cells>"  # a pair (function, CELLS): only what its closure's cells hold is sealed


def recorder(record):
    """(add, verify, check) over one record kept in their closure: add(pairs)
    takes pairs as they are now; verify() reports the first change through
    `record` (the hook's, which answers the judge and ends the worker);
    check() is verify's quick form, asked at every operator the guard sees
    and every kernel launch: a change that lasts only for a moment (a
    table swapped around one torch.mm, then back) meets it there."""
    all, any, dict, getattr, id, isinstance, len, map, set, sorted, str, tuple, type, vars, zip = named_builtins(
        "all any dict getattr id isinstance len map set sorted str tuple type vars zip")
    from operator import attrgetter, is_
    contents_of = attrgetter("cell_contents")
    dict_get = dict.get  # (builtins' dict, bound as the record is made)
    dict_values = dict.values

    def all_same(current, recorded, _all=all, _map=map, _is=is_) -> bool:
        """Each value of `current` (a dict's values, in order) is the recorded one."""
        return _all(_map(_is, current, recorded))

    function = type(recorder)
    module = _MODULE
    sealed: list = []
    # What check() compares, as add() found it: whole namespaces (the judge's
    # modules and Python's builtins, never changed once the file may run;
    # torch.Tensor's is, by the guard itself during solve) by the identity of
    # every value in order, and single entries of plain dicts (the guard's own
    # state) by identity.
    spaces: list = []
    entries: list = []
    cells: list = []  # the filled cells of the judge's own sealed functions (none is ever rebound: no nonlocal)
    contents: list = []

    def fingerprint(value) -> tuple:
        if not isinstance(value, function):  # (a lazy namespace answers any attribute: torch.classes)
            return (id(value),)
        code = getattr(value, "__code__", None)
        cells = getattr(value, "__closure__", None) or ()
        return (id(value), id(code), id(getattr(value, "__defaults__", None)),
                tuple(id(c.cell_contents) for c in cells if _filled(c)))

    def add(pairs) -> None:
        for owner, name in pairs:
            if name == CELLS:
                take_cells(owner)
                continue
            if name is None or type(name) is frozenset:
                # A whole namespace: no member added, removed or replaced, but
                # for the names in `name` (those its own code rebinds: state).
                loose = name or frozenset()
                kept = {key: value for key, value in owner.items() if key not in loose}
                sealed.append((owner, None, kept, loose))
                if "__build_class__" in owner or ("__spec__" in owner and "__name__" in owner):
                    spaces.append((owner, len(owner), tuple(kept), tuple(kept.values()), loose))
                continue
            value = owner.get(name) if isinstance(owner, dict) else getattr(owner, name)
            sealed.append((owner, name, value, fingerprint(value)))
            if type(owner) is dict and "__name__" not in owner:
                entries.append((owner.get, name, value))
            elif isinstance(owner, module) and str(getattr(owner, "__name__", "")).startswith("judge."):
                entries.append((vars(owner).get, name, value))  # (its state set once, before the file: _GATED)
            if isinstance(value, function) and str(getattr(value, "__module__", "")).startswith("judge."):
                take_cells(value)

    def take_cells(value) -> None:
        for cell in getattr(value, "__closure__", None) or ():
            if _filled(cell):
                cells.append(cell)
                contents.append(cell.cell_contents)

    def verify() -> None:
        for owner, name, value, print_ in sealed:
            if name is None:
                keys = owner.keys() - print_
                if keys != value.keys() or any(owner.get(key, value) is not was for key, was in value.items()):
                    changed = sorted(_named(key) for key in keys | value.keys()
                                     if owner.get(key, value) is not value.get(key, owner))
                    if "__spec__" in value and "__name__" in value:  # a judge module's
                        record(f"rule: the submission tampered with the judge's guard "
                               f"({_named(value['__name__'])}.{', '.join(changed[:3])} was changed)")
                        return
                    module = value.get("__module__")
                    if "__build_class__" not in value and module not in (None, "torch"):  # the timer's classes
                        record(f"rule: no changes to the classes of {module} (the judge's timer uses them): "
                               f"{', '.join(changed[:3])} was changed")
                        return
                    what = "builtins" if "__build_class__" in value else "torch.Tensor"
                    record(f"rule: no changes to {what} (the worker's own code uses them after solve): "
                           f"{what}.{', '.join(changed[:3])} was changed")
                    return
                continue
            current = getattr(owner, name, None) if not isinstance(owner, dict) else owner.get(name)
            if current is not value or fingerprint(current) != print_:
                record(f"rule: the submission tampered with the judge's guard "
                       f"({getattr(owner, '__name__', type(owner).__name__)}.{name} was changed)")
                return
        check()

    # Every compare of check(), laid out at its first call: (owners, keys,
    # values) compared one key at a time; the namespaces and their sizes;
    # and the namespaces with no loose name, with their values in order,
    # compared by walking each one's values (half the time of a lookup per
    # key: the check runs at every operator and launch in solve, and its
    # cost is the worker's host path of a short kernel's timed call). A
    # namespace whose order changed with no value changed (a name deleted
    # and bound again) fails here and passes slow_check, which tells.
    flat: list = []

    def check() -> None:
        if not flat:
            flat.extend(([], [], [], [space[0] for space in spaces], [space[1] for space in spaces], [], []))
            for owner, _size, keys, values, loose in spaces:
                if loose:
                    flat[0].extend([owner] * len(keys))
                    flat[1].extend(keys)
                    flat[2].extend(values)
                else:
                    flat[5].append(owner)
                    flat[6].append(values)
            whole = {id(space[0]): space[4] for space in spaces}  # namespace -> its loose names
            for get, name, value in entries:
                owner = get.__self__
                if id(owner) in whole and name not in whole[id(owner)]:
                    continue  # compared with its whole namespace already
                flat[0].append(owner)
                flat[1].append(name)
                flat[2].append(value)
        owners, keys, values, namespaces, sizes, whole_spaces, in_order = flat
        try:
            same = list(map(len, namespaces)) == sizes \
                and all(map(is_, map(dict_get, owners, keys), values)) \
                and all(map(all_same, map(dict_values, whole_spaces), in_order)) \
                and all(map(is_, map(contents_of, cells), contents))
        except ValueError:  # a cell emptied
            same = False
        if not same:
            slow_check()

    def slow_check() -> None:
        """Which change: as check(), one owner at a time (also where a
        module's own state was first bound after the seal: not a change)."""
        for owner, size, keys, values, loose in spaces:
            if not all(map(is_, map(owner.get, keys), values)) or (
                    len(owner) != size and (owner.keys() - loose) != set(keys)):
                return changed(owner, keys, values, loose)
        for get, name, value in entries:
            if get(name) is not value:
                return verify()
        try:
            same = all(map(is_, map(contents_of, cells), contents))
        except ValueError:  # a cell emptied
            same = False
        if not same:
            verify()  # (it compares the cells too: the fingerprint)
            record("rule: the submission tampered with the judge's guard (a closure of the judge's own was changed)")

    def changed(owner, keys, values, loose) -> None:
        was = dict(zip(keys, values))
        names = sorted(_named(key) for key in (owner.keys() - loose) | was.keys()
                       if owner.get(key, was) is not was.get(key, owner))
        where = "builtins" if "__build_class__" in owner else owner.get("__name__", "a module")
        record(f"rule: the submission tampered with the judge's guard ({where}.{', '.join(names[:3]) or '?'} "
               "was changed)")

    return add, verify, check


def _named(key, _type=type, _str=str) -> str:
    """A namespace's key for a message: a key of the file's may be any
    object, whose own __str__ or ordering must not run inside the hook."""
    return key if _type(key) is _str else "(a key that is not a string)"


def _filled(cell, error=ValueError) -> bool:
    try:
        cell.cell_contents
    except error:
        return False
    return True
