"""A seed for every grading's Triton cache (trusted side).

Each grading's workers share a fresh Triton cache folder (judge.grader
.shared_cache): a submission's compiled kernels must never reach another
submission. But a fresh folder makes every worker rebuild, before its
first request, what no submission touches: Triton's C helpers (compiled
with the host compiler), the warm-up kernels and the timer's check-sum
kernel with their launchers (judge.worker.warmup), seconds on each
grading's critical path.

So the judge builds that once, in a process of its own that runs judge
code only (`python -m judge.worker.warmup --seed DIR`), keeps it under the
user's cache folder, and copies it into each fresh folder. Workers write
to their grading's copy only; the seed stays the judge's. When the seed
is missing (the first CUDA grading on a machine, or new versions), the
grading goes on without it and the seed is built beside it, for the next.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from . import triton_key
from .cachedir import cache_dir

_SOURCES = ("worker/warmup.py", "worker/warmup_kernels.py", "check_sums.py", "worker/launcher_source.py")
# The worker trusts the seed's shared objects by these hashes
# (judge.worker.native_code reads the same variable).
NATIVE_SEED_ENV = "JUDGE_NATIVE_SEED"
_hashes: dict[Path, str] = {}
_build_lock = threading.Lock()
_building: subprocess.Popen | None = None


def seed_path() -> Path:
    """The seed folder for these versions of Python, Triton and the warm-up."""
    import triton
    digest = hashlib.sha256(f"{platform.python_version()}|{triton.__version__}".encode())
    here = Path(__file__).resolve().parent
    for name in _SOURCES:
        digest.update((here / name).read_bytes())
    return cache_dir() / f"triton-seed-{digest.hexdigest()[:16]}"


def fill(cache: Path) -> bool:
    """Copy the seed into `cache` (a fresh folder); True when there was one.
    Without one, start building it (once per process) for later gradings."""
    seed = seed_path()
    if seed.is_dir():
        shutil.copytree(seed, cache, dirs_exist_ok=True)
        return True
    start_build(seed)
    return False


def native_hashes() -> str:
    """sha256 of every shared object in the seed (Triton's C helpers and the
    warm-up's launchers), comma-separated: what a worker may load from its
    copy of the seed (judge.worker.native_code). Empty without a seed."""
    seed = seed_path()
    if seed not in _hashes:
        if not seed.is_dir():
            return ""
        _hashes[seed] = ",".join(sorted(hashlib.sha256(f.read_bytes()).hexdigest()
                                        for f in seed.rglob("*.so") if f.is_file()))
    return _hashes[seed]


def start_build(seed: Path) -> None:
    """Build the seed in the background: a judge-only process warms a
    scratch cache and renames it into place (atomic, so a half-built seed
    is never copied; a concurrent builder that loses the race drops its own)."""
    global _building
    with _build_lock:
        if _building is not None and _building.poll() is None:
            return
        from .isolation import INHERITED_ENV, JUDGE_ROOT
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}  # no secret
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(JUDGE_ROOT), env.get("PYTHONPATH")) if p)
        env.update(triton_key.worker_env("cuda"))
        _building = subprocess.Popen([sys.executable, "-m", "judge.worker.warmup", "--seed", str(seed)],
                                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)


def wait_for_build(timeout_s: float = 120.0) -> bool:
    """Wait for a build this process started (tests, benchmarks); True when
    the seed exists afterwards."""
    with _build_lock:
        proc = _building
    if proc is not None:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
    return seed_path().is_dir()
