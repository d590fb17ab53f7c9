"""The HTML report in a real headless browser (Debian's chromium): it
renders to a screenshot that is not blank. Skipped where no chromium is
installed. JUDGE_SCREENSHOT_TO=FILE keeps the screenshot (docs/img/)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from judge.batch.discover import Entry, Student
from judge.batch.store import Store
from judge.export.write import export
from tests.batch_results import accepted, compile_error, wrong_answer

BROWSER = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def example_store(out):
    """Example data (not a real batch): a class of twelve, three kinds of result."""
    store = Store(out)
    grid = open("submissions/correct/grid_2d.py").read()
    entries = [Entry(f"student{i:02d}", f"/class/student{i:02d}.py", f"{i:064x}",
                     grid if i % 4 == 0 else f"# {i}\n" + grid.replace("pid", f"p{i}") if i % 3 else "x = 1\n",
                     f"Student {i}") for i in range(12)]
    store.sync(entries, [Student("student12", "Student 12")])
    run = store.start_run(challenge="matrix_multiplication", policy="fp32", seed=2026, device="cuda",
                          options={"challenge": "matrix_multiplication"})
    for i, e in enumerate(entries):
        result = (accepted(1.9 + 0.35 * i) if i % 3 != 2 else wrong_answer("3 elements out of tolerance")
                  if i % 2 else compile_error())
        store.record(e.id, e.sha256, "c", run, result, lane=f"gpu{i % 2}", wall_s=20.0 + i)
    store.end_run(run, {"problems": []}, {"file": "submissions/correct/grid_2d.py", "start": {"latency_ms": 2.41},
                                          "end": {"latency_ms": 2.43}, "change_percent": 0.83})
    store.close()


@pytest.mark.skipif(BROWSER is None, reason="no chromium installed (apt-get install chromium)")
def test_report_renders_in_chromium(tmp_path):
    example_store(tmp_path / "results")
    report = export(tmp_path / "results", "html")
    shot = tmp_path / "report.png"
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--hide-scrollbars", "--window-size=1200,1900", f"--screenshot={shot}",
           report.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert shot.is_file() and shot.stat().st_size > 20_000
    from PIL import Image
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 1900)
    colors = image.resize((120, 190)).getcolors(maxcolors=1 << 16)
    assert colors is None or len(colors) > 50  # text, plots and coloured cells, not a blank page
    keep = os.environ.get("JUDGE_SCREENSHOT_TO")
    if keep:
        shutil.copyfile(shot, keep)
