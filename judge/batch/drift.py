"""The batch's drift check: one honest submission graded at the start and
at the end of a batch, so that a GPU whose speed changed meanwhile (heat,
a neighbour's load) shows in the run's record rather than in the scores
of the files graded late."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError
from .lanes import Event

if TYPE_CHECKING:
    from .run import BatchOptions


def drift_file(opts: BatchOptions, device: str) -> Path | None:
    """The honest submission graded at the start and the end: --drift FILE,
    or on a GPU the challenge's first accepted example."""
    if opts.drift == "none" or (opts.drift == "auto" and device != "cuda"):
        return None
    if opts.drift != "auto":
        path = Path(opts.drift)
        if not path.is_file():
            raise UsageError(f"--drift: no such file: {path}")
        return path
    from .. import goldens
    for golden in goldens.examples():
        if golden.challenge == opts.challenge and golden.verdict == "accepted":
            return golden.path
    return None


def drift_report(start: Event | None, end: Event | None, path: Path) -> dict:
    def side(event: Event | None) -> dict:
        result = (event.result if event else None) or {}
        return {"verdict": result.get("verdict"), "latency_ms": result.get("latency_ms"),
                "lane": event.lane if event else None, "error": event.error if event else None}
    a, b = side(start), side(end)
    change = None
    if a["latency_ms"] and b["latency_ms"]:
        change = round(100.0 * (b["latency_ms"] - a["latency_ms"]) / a["latency_ms"], 3)
    return {"file": str(path), "start": a, "end": b, "change_percent": change}
