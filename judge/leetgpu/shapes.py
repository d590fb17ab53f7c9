"""The tests' shapes and dimensions, and how an argument's shape is shown."""

from __future__ import annotations

from .generation import TESTS, run_generator


def probe(code: dict, test: str) -> tuple[list[dict], str]:
    """The tests' shapes and dimensions: from a run on the meta device (no
    data), else two CPU runs with different seeds that must agree."""
    import torch
    try:
        got = run_generator(code, test, 0, "meta")
        return (got if test == "functional" else [got]), "meta"
    except Exception:  # noqa: BLE001 - it needs values: run it for real
        pass
    first = run_generator(code, test, 0, "cpu")
    again = run_generator(code, test, 1, "cpu")
    first, again = (first, again) if test == "functional" else ([first], [again])

    def sizes(tests):
        return [{k: (tuple(v.shape) if isinstance(v, torch.Tensor) else v) for k, v in t.items()} for t in tests]

    if sizes(first) != sizes(again):
        raise ValueError(f"{TESTS[test]}() draws its sizes from torch's random numbers: they change with "
                         f"the seed, which the judge cannot follow")
    return first, "cpu"


def axis_names(arg: str, cases: list[dict], dims: list[str]) -> list:
    """Arg.shape for display: per axis a dimension it always equals, else a
    constant, else `*` (each case gives its shapes)."""
    from ..challenge import PER_CASE
    shapes = [c["shapes"][arg] for c in cases]
    if len({len(s) for s in shapes}) != 1:
        return [PER_CASE]
    out = []
    for axis in range(len(shapes[0])):
        sizes = [s[axis] for s in shapes]
        match = next((d for d in dims if all(c["dims"][d] == n for c, n in zip(cases, sizes))), None)
        out.append(match if match else sizes[0] if len(set(sizes)) == 1 else PER_CASE)
    return out
