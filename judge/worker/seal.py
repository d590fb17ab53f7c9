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

from judge.worker.refusals import named_builtins


def recorder(record):
    """(add, verify) over one record kept in their closure: add(pairs) takes
    pairs as they are now; verify() reports the first change through
    `record` (the hook's, which answers the judge and ends the worker)."""
    any, dict, getattr, id, isinstance, sorted, tuple, type = named_builtins(
        "any dict getattr id isinstance sorted tuple type")
    function = type(recorder)
    sealed: list = []

    def fingerprint(value) -> tuple:
        if not isinstance(value, function):  # (a lazy namespace answers any attribute: torch.classes)
            return (id(value),)
        code = getattr(value, "__code__", None)
        cells = getattr(value, "__closure__", None) or ()
        return (id(value), id(code), id(getattr(value, "__defaults__", None)),
                tuple(id(c.cell_contents) for c in cells if _filled(c)))

    def add(pairs) -> None:
        for owner, name in pairs:
            if name is None:  # a whole namespace: no member added, removed or replaced
                sealed.append((owner, None, dict(owner), ()))
                continue
            value = owner.get(name) if isinstance(owner, dict) else getattr(owner, name)
            sealed.append((owner, name, value, fingerprint(value)))

    def verify() -> None:
        for owner, name, value, print_ in sealed:
            if name is None:
                if owner.keys() != value.keys() or any(owner[key] is not was for key, was in value.items()):
                    changed = sorted(key for key in owner.keys() | value.keys()
                                     if owner.get(key, value) is not value.get(key, owner))
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

    return add, verify


def _filled(cell, error=ValueError) -> bool:
    try:
        cell.cell_contents
    except error:
        return False
    return True
