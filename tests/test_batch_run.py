"""Real batches on the CPU (Triton's interpreter): a batch killed with
SIGKILL mid-way and resumed grades every file exactly once with its expected
verdict; a submission that goes for the results store neither changes a
recorded result nor goes unnoticed; `judge gradescope` writes a valid
results.json whatever happens."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judge import goldens
from judge.export.gradescope import validate

ROOT = Path(__file__).resolve().parent.parent
# Fast files first, so that the kill lands after a result and before the end.
FILES = {"a_empty": "faults/empty.py", "b_syntax": "faults/syntax_error.py",
         "c_grid": "correct/grid_2d.py", "d_no_solve": "faults/no_solve.py"}


def expected_verdicts() -> dict[str, str]:
    by_path = {g.relative(ROOT / "submissions"): g.verdict for g in goldens.read(ROOT / "submissions")}
    return {sid: by_path[rel] for sid, rel in FILES.items()}


def batch_cmd(folder: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "judge.cli", "batch", str(folder), "--out", str(out), "--device", "cpu",
            "--seed", "5", "--json", *extra]


def recorded(out: Path) -> dict[str, tuple]:
    conn = sqlite3.connect(out / "results.sqlite")
    try:
        return {row[0]: row[1:] for row in conn.execute(
            "SELECT submission_id, verdict, graded_at, flags, result_json FROM results")}
    finally:
        conn.close()


@pytest.mark.slow
def test_sigkill_mid_batch_then_resume(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "results"
    folder.mkdir()
    for sid, rel in FILES.items():
        shutil.copyfile(ROOT / "submissions" / rel, folder / f"{sid}.py")
    proc = subprocess.Popen(batch_cmd(folder, out), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    first = json.loads(proc.stdout.readline())  # the first result is in the store: kill now
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = recorded(out)
    assert first["id"] in before and 1 <= len(before) < len(FILES)

    rerun = subprocess.run(batch_cmd(folder, out), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    lines = [json.loads(x) for x in rerun.stdout.splitlines()]
    assert sorted(x["id"] for x in lines) == sorted(set(FILES) - set(before))  # only the rest was graded
    after = recorded(out)
    assert {sid: row[0] for sid, row in after.items()} == expected_verdicts()
    for sid, row in before.items():
        assert after[sid] == row  # kept, untouched
    for sid, row in after.items():
        result = json.loads(row[3])
        assert result["submission"] == str(folder / f"{sid}.py") and result["seed"] == 5
    conn = sqlite3.connect(out / "results.sqlite")
    assert conn.execute("SELECT count(*) FROM results").fetchone()[0] == len(FILES)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM runs WHERE ended_at IS NOT NULL").fetchone()[0] == 1
    assert not list(out.glob("_grading_*"))  # no staged copy left behind
    conn.close()

    again = subprocess.run(batch_cmd(folder, out, "--regrade", "a_empty"), cwd=ROOT, capture_output=True,
                           text=True, timeout=600)
    assert [json.loads(x)["id"] for x in again.stdout.splitlines()] == ["a_empty"]


HOSTILE = '''
import os, sqlite3
OUT = {out!r}
try:
    with open(os.path.join(OUT, "pwned.txt"), "w") as fh:
        fh.write("x")
except OSError:
    pass
try:
    conn = sqlite3.connect(os.path.join(OUT, "results.sqlite"), timeout=2)
    conn.execute("UPDATE results SET verdict = 'accepted', score = 100")
    conn.commit()
except Exception:
    pass
# no solve: invalid_submission, once the damage is done
'''


@pytest.mark.slow
def test_submission_going_for_the_store(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "results"
    folder.mkdir()
    shutil.copyfile(ROOT / "submissions" / "faults" / "empty.py", folder / "a_honest.py")
    (folder / "z_hostile.py").write_text(textwrap.dedent(HOSTILE.format(out=str(out))))
    run = subprocess.run(batch_cmd(folder, out), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = {json.loads(x)["id"]: json.loads(x) for x in run.stdout.splitlines()}
    sandbox = lines["z_hostile"]["result"]["sandbox"]
    rows = recorded(out)
    # invalid_submission (no solve), or rejected where the worker's rules refuse the attempt itself
    assert rows["z_hostile"][0] in ("invalid_submission", "rejected")
    if "read-only" in sandbox or rows["z_hostile"][2] == "":
        # The worker cannot see the results folder at all (or was stopped before writing).
        assert "read-only" in sandbox or rows["z_hostile"][0] == "rejected"
        assert not (out / "pwned.txt").exists()
        assert rows["a_honest"][0] == "invalid_submission" and rows["z_hostile"][2] == ""
    else:
        # No file-system sandbox here (README: threat model): the write lands,
        # but it is noticed, the grading flagged and the changed row dropped.
        assert rows["z_hostile"][2] == "store_written_during_grading"
        assert "a_honest" not in rows
        assert "another process wrote to the results store" in run.stderr
        rerun = subprocess.run(batch_cmd(folder, out), cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert [json.loads(x)["id"] for x in rerun.stdout.splitlines()] == ["a_honest"]
        assert recorded(out)["a_honest"][0] == "invalid_submission"


@pytest.mark.slow
def test_gradescope_command(tmp_path):
    sub, res = tmp_path / "submission", tmp_path / "results"
    sub.mkdir()
    shutil.copyfile(ROOT / "submissions" / "faults" / "syntax_error.py", sub / "solution.py")
    cmd = [sys.executable, "-m", "judge.cli", "gradescope", "--device", "cpu", "--submission", str(sub),
           "--results", str(res)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    doc = json.loads((res / "results.json").read_text())
    assert validate(doc) == [] and doc["score"] == 0 and doc["output"].startswith("compile_error")
    assert doc["tests"][0]["status"] == "failed" and doc["tests"][-1]["name"] == "performance"

    (sub / "solution.py").unlink()  # nothing submitted: still a results.json, saying so
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    doc = json.loads((res / "results.json").read_text())
    assert run.returncode == 2 and doc["score"] == 0 and "empty folder" in doc["output"] and validate(doc) == []


@pytest.mark.slow
def test_batch_display_roster_and_folders(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "results"
    (folder / "alice").mkdir(parents=True)
    (folder / "empty_one").mkdir()
    shutil.copyfile(ROOT / "submissions" / "faults" / "empty.py", folder / "alice" / "solution.py")
    (folder / "notes.txt").write_text("not code")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,email\nalice,Alice,a@x\nbob,Bob,b@x\n")
    cmd = [sys.executable, "-m", "judge.cli", "batch", str(folder), "--out", str(out), "--device", "cpu",
           "--roster", str(roster), "--regrade", "nobody"]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "COLUMNS": "160"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "invalid_submission" in run.stdout and "missing" in run.stdout
    assert "1 submission(s) found (folders layout), 1 graded now, 0 kept from before, 1 missing" in run.stdout
    for line in ("empty_one: empty folder", "notes.txt: not a .py file", "--regrade nobody: no such submission"):
        assert line in run.stdout
    assert "grading" in run.stderr and "1/1" in run.stderr  # the live panel


def test_drift_check_runs_in_the_lanes_queue_and_is_no_student(tmp_path):
    """The drift check's two gradings go through the lanes first and last,
    beside the class's files: recorded in the run's drift, never as a student."""
    folder, out = tmp_path / "class", tmp_path / "results"
    folder.mkdir()
    for name in ("empty", "no_solve"):
        shutil.copyfile(ROOT / "submissions" / "faults" / f"{name}.py", folder / f"{name}.py")
    # A student whose file is named like the check: once taken for it, never recorded.
    shutil.copyfile(ROOT / "submissions" / "faults" / "empty.py", folder / "drift:start.py")
    drift = ROOT / "submissions" / "faults" / "syntax_error.py"  # quick: what it gets is beside the point here
    run = subprocess.run(batch_cmd(folder, out, "--lanes", "2", "--drift", str(drift)), cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert sorted(recorded(out)) == ["drift:start", "empty", "no_solve"]
    conn = sqlite3.connect(out / "results.sqlite")
    try:
        (drift_json,) = conn.execute("SELECT drift FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    report = json.loads(drift_json)
    assert report["start"]["verdict"] == report["end"]["verdict"] == "compile_error"
    assert report["start"]["lane"] and report["end"]["lane"]
