"""The judge's own cache folder (baselines, the Triton cache seed, the
sandbox probes' answer): $XDG_CACHE_HOME/tritonjudge, else ~/.cache/tritonjudge."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tritonjudge"


def read_json(path: Path) -> dict:
    """The JSON object kept at `path`, or {} where there is none or it is
    not one (a missing, half-written or foreign file is measured again)."""
    import json
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data) -> bool:
    """Replace the file at `path` with `data` as JSON in one rename (a reader
    never sees half a file); False where it cannot be written (a read-only
    home: the caller measures again next time)."""
    import json
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1))
        os.replace(tmp, path)
        return True
    except OSError:
        return False
