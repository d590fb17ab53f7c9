"""Checkers: small plug-ins that compare a case's outputs with the truth.

Each checker is a pydantic model built from one table of a policy in
challenge.toml (`{ kind = "allclose", atol = 1e-5, rtol = 1e-5 }`), with a
`compare(trials) -> judge.compare.Comparison`. A policy lists one or more;
all must pass.

    allclose    |got − ref| ≤ atol + rtol·|ref| against the float32 reference (LeetGPU's rule)
    exact       bitwise equal to the truth (integer outputs, copies, permutations)
    fp32_bound  float32 accuracy of a sum of products, any summation order
    tf32_bound  the same with TF32-rounded inputs allowed
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .allclose import AllClose
from .error_bound import Fp32Bound, Tf32Bound
from .exact import Exact

REGISTRY = {c.model_fields["kind"].default: c for c in (AllClose, Exact, Fp32Bound, Tf32Bound)}


def build(spec: dict[str, Any]):
    """A checker from its table in challenge.toml."""
    kind = spec.get("kind")
    cls = REGISTRY.get(kind)
    if cls is None:
        raise ValueError(f"unknown checker kind {kind!r} (known: {', '.join(REGISTRY)})")
    try:
        return cls.model_validate(spec)
    except ValidationError as exc:
        raise ValueError(f"checker {kind!r}: " + "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None


__all__ = ["AllClose", "Exact", "Fp32Bound", "Tf32Bound", "REGISTRY", "build"]
