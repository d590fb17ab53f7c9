"""Shared helpers for the judge's tests."""

from __future__ import annotations

import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "submissions"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
HAS_CUDA = torch.cuda.is_available()


def expected_verdicts() -> dict[str, str]:
    """submissions/expected.toml: path (relative to submissions/) -> verdict."""
    with (SUBMISSIONS / "expected.toml").open("rb") as fh:
        return {path: entry["verdict"] for path, entry in tomllib.load(fh).items()}
