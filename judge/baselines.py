"""Baseline latencies (library and reference kernels) on the performance
case, measured by the judge itself with the same method as submissions, on
the same inputs, and cached per GPU, driver, versions and shape so a batch
measures them once."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import timing
from .cachedir import cache_dir, read_json


def cache_path() -> Path:
    return cache_dir() / "baselines.json"


def cache_key(challenge: str, shape: str, gpu: dict, versions: dict) -> str:
    return "|".join([challenge, shape, str(gpu.get("name")), str(gpu.get("driver")),
                     versions.get("torch", ""), versions.get("triton", ""), f"timing method {timing.METHOD}"])


def _read_cache() -> dict:
    return read_json(cache_path())


def measure_all(calls: dict, repeats_budget_s: float = 2.0) -> dict[str, dict]:
    """Each named baseline timed with the submission's method."""
    return {name: timing.measure([call], budget_s=repeats_budget_s) for name, call in calls.items()}


def get(key: str, make_calls, refresh: bool = False) -> tuple[dict[str, dict], bool]:
    """(baselines, from_cache). `make_calls()` builds the name -> call dict
    only when a measurement is needed."""
    cache = _read_cache()
    if not refresh and key in cache:
        return cache[key], True
    measured = measure_all(make_calls())
    cache[key] = measured
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(cache, indent=1))
    tmp.replace(path)
    return measured, False
