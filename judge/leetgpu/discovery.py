"""Discovering the clone's challenge folders and naming them `leetgpu/<name>`."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import UsageError

PREFIX = "leetgpu/"
ENV = "JUDGE_LEETGPU_REPO"


def repo_path() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value).expanduser() if value else None


def challenges_root(repo: Path) -> Path:
    """The clone's `challenges/` folder (PATH may be the clone or that folder)."""
    for candidate in (repo / "challenges", repo):
        if (candidate / "core").is_dir():
            return candidate
    raise UsageError(f"--leetgpu-repo {repo}: not a clone of LeetGPU's challenges repository "
                     f"(no challenges/core/ folder there)")


def folders() -> dict[str, Path]:
    """leetgpu/<name> -> folder, for every challenge folder of the clone.
    Names drop the number; two folders of the same name keep theirs."""
    repo = repo_path()
    if repo is None:
        return {}
    root = challenges_root(repo)
    found: list[tuple[str, Path]] = []
    for group in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "core"
                        and not p.name.startswith((".", "_"))):
        for folder in sorted(p for p in group.iterdir() if (p / "challenge.py").is_file()):
            short = re.sub(r"^\d+_", "", folder.name)
            found.append((short, folder))
    shorts = [s for s, _ in found]
    return {PREFIX + (s if shorts.count(s) == 1 else f.name): f for s, f in found}


def available() -> list[str]:
    return sorted(folders())
