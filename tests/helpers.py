"""Shared helpers for the judge's tests."""

from __future__ import annotations

from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = ROOT / "submissions"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
HAS_CUDA = torch.cuda.is_available()

