"""The Ray backend on a local CPU Ray cluster: each file is one task, the
results come back to the one writer. The test extra installs Ray (CI runs
this); an install without it skips the test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from judge.batch.progress import Display
from judge.batch.run import BatchOptions, run_batch
from judge.batch.store import Store

pytest.importorskip("ray")
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_ray_local_cluster(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "results"
    folder.mkdir()
    shutil.copyfile(ROOT / "submissions/faults/empty.py", folder / "a.py")
    shutil.copyfile(ROOT / "submissions/faults/syntax_error.py", folder / "b.py")
    outcome = run_batch(BatchOptions(folder=folder, out=out, device="cpu", ray="local", seed=3, workers=1), Display)
    assert outcome.graded == 2
    store = Store.open_existing(out)
    rows = {r["id"]: r for r in store.rows()}
    runs = store.runs()
    store.close()
    assert rows["a"]["verdict"] == "invalid_submission" and rows["b"]["verdict"] == "compile_error"
    assert rows["a"]["lane"].startswith("ray:") and runs[-1]["backend"] == "ray:local"
    assert rows["a"]["result"]["submission"] == str(folder / "a.py")
