"""The judge's own cache folder (baselines, the Triton cache seed, the
sandbox probes' answer): $XDG_CACHE_HOME/tritonjudge, else ~/.cache/tritonjudge."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tritonjudge"
