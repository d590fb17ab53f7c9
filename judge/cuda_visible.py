"""CUDA_VISIBLE_DEVICES, read in one place (trusted side).

torch numbers the GPUs it sees from 0, in the order of this variable's
entries (indices or UUIDs); NVML and the lock files name them by what the
variable says. Where it is unset, torch's GPU g is the host's GPU g.
"""

from __future__ import annotations

import os


def entries() -> list[str] | None:
    """The variable's entries, blanks dropped, or None where it is unset."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def entry(g: int = 0) -> str | None:
    """torch's GPU `g` in the variable's terms: its g-th entry, `str(g)`
    where the variable is unset, None where it hides that GPU."""
    listed = entries()
    if listed is None:
        return str(g)
    return listed[g] if 0 <= g < len(listed) else None
