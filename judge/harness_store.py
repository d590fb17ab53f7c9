"""The timer's own cost (judge.timecheck.harness_cost) kept on disk between
gradings, so a cold `judge submit` need not start the judge's stand-in
worker and time it again (~0.8 s on the H100).

It sits in the judge's cache folder, which decides verdicts (a cost set too
high would let a patched timer under-report), so it is read and written only
where the sandbox keeps every worker from writing there: a read-only file
system (bubblewrap, or unshare with the worker's jail). Keyed by the
measurement's plan and the GPU, its driver, the versions of torch and Triton
and the judge's timing code; an entry is used for an hour at most.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from .cachedir import cache_dir, read_json, write_json

# The code whose cost between timed calls the stored figure is: a change to
# any of it measures again (the inputs' refill runs through pristine and cases).
_TIMING_CODE = ("timing.py", "timecheck.py", "cases.py", "worker/server.py", "worker/buffers.py", "worker/rules.py",
                "worker/pristine.py", "worker/null_solve.py", "worker/null_solve_synced.py")


def _path() -> Path:
    return cache_dir() / "harness.json"


def usable(device: str) -> bool:
    """Only where workers cannot write the judge's cache folder."""
    if device != "cuda" or os.environ.get("JUDGE_NO_HARNESS_STORE"):
        return False
    from .sandbox import sandbox_for
    return sandbox_for(device).filesystem.startswith("read-only")


def _full_key(key: str) -> str:
    from . import gpuinfo
    here = Path(__file__).resolve().parent
    code = hashlib.sha256()
    for name in _TIMING_CODE:
        try:
            code.update((here / name).read_bytes())
        except OSError:
            code.update(name.encode())
    gpu = gpuinfo.snapshot()
    import torch
    import triton
    identity = [gpu.get("name"), gpu.get("driver"), os.environ.get("CUDA_VISIBLE_DEVICES"),
                torch.__version__, triton.__version__, code.hexdigest()]
    return hashlib.sha256(json.dumps([identity, key]).encode()).hexdigest()


def _read() -> dict:
    return read_json(_path())


def get(key: str, device: str, max_age_s: float) -> dict | None:
    """A stored cost for `key` (timecheck._key) younger than max_age_s, or None."""
    if not usable(device):
        return None
    hit = _read().get(_full_key(key))
    try:
        if hit and 0 <= time.time() - _at(hit) < max_age_s:
            cost = {name: float(hit["cost"][name]) for name in ("per_call_s", "sync_s", "head_start_s")}
            cost["reps"] = int(hit["cost"]["reps"])
            return cost
    except (KeyError, TypeError, ValueError):
        pass
    return None


def _at(entry) -> float:
    try:
        return float(entry["at"])
    except (KeyError, TypeError, ValueError):
        return float("-inf")


def put(key: str, device: str, cost: dict) -> None:
    if not usable(device):
        return
    known = _read()
    now = time.time()
    # Expired entries go: the file stays small.
    known = {k: v for k, v in known.items() if 0 <= now - _at(v) < 86400}
    known[_full_key(key)] = {"at": now, "cost": cost}
    write_json(_path(), known)  # a read-only home: measured again next time
