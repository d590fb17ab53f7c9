"""Triton's own version key, computed once by the judge and handed to workers.

Before its first compilation (or cache lookup) every process running Triton
hashes Triton's files, libtriton's ~hundreds of MB included: ~0.3 s of every
worker's start on the H100 box, paid again by each worker of each grading.
The key depends only on the installed Triton, so the judge computes it once,
keeps it in its cache folder against a stamp of those files (paths, sizes,
modification times), and passes it to each worker it starts
(`JUDGE_TRITON_KEY`, read by judge.worker.tritonkey before any submission
code runs). A worker that changed its key would only change its own cache's
keys: nothing of the judge's reads them.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from .cachedir import cache_dir, read_json, write_json

ENV = "JUDGE_TRITON_KEY"

_known: dict[str, str] = {}  # stamp -> key, in this process


def _root() -> Path:
    import triton
    return Path(triton.__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def stamp() -> str:
    """A digest of every file of the installed Triton (path, size, mtime):
    a changed file changes it, so a stale key is never handed out. Once per
    process (a Triton upgraded under a running judge is not followed)."""
    import triton
    digest = hashlib.sha256(triton.__version__.encode())
    root = _root()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            digest.update(f"{os.path.relpath(path, root)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _store() -> Path:
    return cache_dir() / "triton-key.json"


def value() -> str | None:
    """Triton's key for this installation: from this process, else from the
    judge's cache folder if the stamp matches, else computed (and kept).
    None when Triton cannot say (the worker then computes its own)."""
    try:
        current = stamp()
    except Exception:  # noqa: BLE001 - an optimisation only
        return None
    if current in _known:
        return _known[current]
    saved = read_json(_store())
    if saved.get("stamp") == current and isinstance(saved.get("key"), str):
        _known[current] = saved["key"]
        return saved["key"]
    try:
        from triton.runtime.cache import triton_key
        key = triton_key()
    except Exception:  # noqa: BLE001
        return None
    _known[current] = key
    write_json(_store(), {"stamp": current, "key": key})
    return key


def worker_env(device: str) -> dict[str, str]:
    """What a worker's environment gets: the key, on a GPU (the interpreter compiles nothing)."""
    if device != "cuda":
        return {}
    key = value()
    return {ENV: key} if key else {}
