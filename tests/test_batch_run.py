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
           "--roster", str(roster)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "COLUMNS": "160"})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "invalid_submission" in run.stdout and "missing" in run.stdout
    assert "1 submission(s) found (folders layout), 1 graded now, 0 kept from before, 1 missing" in run.stdout
    for line in ("empty_one: empty folder", "notes.txt: not a .py file"):
        assert line in run.stdout
    assert "grading" in run.stderr and "1/1" in run.stderr  # the live panel


def test_settings_are_checked_before_the_store_is_touched(tmp_path):
    """A mistyped --regrade id graded nothing and exited 0; an unknown
    challenge was reported as an empty folder."""
    folder, out = tmp_path / "class", tmp_path / "results"
    folder.mkdir()
    shutil.copyfile(ROOT / "submissions" / "faults" / "empty.py", folder / "alice.py")
    run = subprocess.run(batch_cmd(folder, out, "--regrade", "alcie"), cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 2 and "--regrade alcie: no such submission (did you mean alice?)" in run.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    run = subprocess.run(batch_cmd(empty, out, "--challenge", "nope"), cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 2 and "unknown challenge 'nope'" in run.stderr
    assert not out.exists()


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


RELU = ROOT / "challenges" / "relu" / "examples"
QUICK = ["--challenge", "relu", "--device", "cpu", "--drift", "none"]


def judge(*args: str):
    from click.testing import CliRunner
    from judge.cli import main
    return CliRunner().invoke(main, [str(a) for a in args], env={"COLUMNS": "200"})


def relu_store(tmp_path: Path, sid: str = "alice"):
    """A class of one relu file and its store with an accepted result under
    the batch's own settings, recorded without grading (quick)."""
    from judge.batch.discover import discover
    from judge.batch.run import BatchOptions, config_key, grade_options
    from judge.batch.store import Store
    from tests.batch_results import accepted
    folder, out = tmp_path / "class", tmp_path / "results"
    folder.mkdir(parents=True)
    shutil.copyfile(RELU / "correct_block1024.py", folder / f"{sid}.py")
    store = Store(out)
    store.set_meta("seed", "5")
    store.set_meta("challenge", "relu")
    store.sync(discover(folder).entries, [])
    options = grade_options(BatchOptions(folder=folder, out=out, challenge="relu"), "cpu", 5)
    entry = discover(folder).entries[0]
    store.record(sid, entry.sha256, config_key(options), None, dict(accepted(), challenge="relu"))
    store.close()
    return folder, out


def test_a_file_replaced_by_an_ungradable_one_loses_its_grade(tmp_path):
    """Graded, then replaced by a file over the size limit: the table and
    the gradebook still showed `graded, accepted`."""
    folder, out = relu_store(tmp_path)
    (folder / "alice.py").write_text("#" * (1 << 20) + "\n")
    run = judge("batch", folder, "--out", out, *QUICK)
    assert run.exit_code == 0, run.output
    assert "submitted, not graded: over the" in run.output and "accepted" not in run.output
    assert judge("export", out, "--format", "csv").exit_code == 0
    gradebook = (out / "gradebook.csv").read_text()
    assert "submitted, not graded: over the" in gradebook and "accepted" not in gradebook


def test_a_file_submitted_but_not_gradable_is_not_missing(tmp_path):
    """Over the size limit, a link, several .py files and no solution.py:
    no row at all, or `missing` with a roster (as if nothing was sent)."""
    folder = tmp_path / "class"
    (folder / "carol").mkdir(parents=True)
    (folder / "bob.py").write_text("#" * (1 << 20) + "\n")
    (folder / "dave.py").symlink_to(RELU / "correct_block1024.py")
    for name in ("a.py", "b.py"):
        (folder / "carol" / name).write_text("pass\n")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\nbob,Bob\ncarol,Carol\ndave,Dave\nerin,Erin\n")
    out = tmp_path / "results"
    run = judge("batch", folder, "--out", out, *QUICK, "--roster", roster)
    assert run.exit_code == 0, run.output
    assert judge("export", out, "--format", "csv").exit_code == 0
    rows = {line.split(",")[0]: line for line in (out / "gradebook.csv").read_text().splitlines()[1:]}
    assert sorted(rows) == ["bob", "carol", "dave", "erin"]
    for sid, reason in (("bob", "over the 1,048,576-byte limit"), ("carol", "2 .py files"), ("dave", "a link")):
        assert f"submitted, not graded: {reason}" in rows[sid] and ",missing," not in rows[sid]
    assert ",missing," in rows["erin"]


def test_a_refused_batch_changes_nothing(tmp_path):
    """A bad --policy or --challenge with --seed 6 overwrote the stored seed
    (the next correct run regraded everyone); an empty class folder made a
    store and exited 0."""
    folder, out = relu_store(tmp_path)
    before = (out / "results.sqlite").read_bytes()
    for bad in (["--policy", "bogus"], ["--challenge", "nope"]):
        run = judge("batch", folder, "--out", out, *QUICK, "--seed", "6", *bad)
        assert run.exit_code == 2 and "error:" in run.output and "Traceback" not in run.output
    assert (out / "results.sqlite").read_bytes() == before
    conn = sqlite3.connect(out / "results.sqlite")
    assert conn.execute("SELECT value FROM meta WHERE key = 'seed'").fetchone()[0] == "5"
    conn.close()

    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no code")
    run = judge("batch", empty, "--out", tmp_path / "new", *QUICK)
    assert run.exit_code == 2 and "no submissions in" in run.output and not (tmp_path / "new").exists()


def test_another_challenge_into_the_same_store_is_refused(tmp_path):
    folder, out = relu_store(tmp_path)
    run = judge("batch", folder, "--out", out, "--challenge", "vector_addition", "--device", "cpu",
                "--drift", "none")
    assert run.exit_code == 2
    assert "holds results for the challenge relu, not vector_addition" in run.output


def test_the_default_policy_named_keeps_every_result(tmp_path):
    """--policy leetgpu (relu's default) regraded everything: the key held
    the policy as given (None against "leetgpu"). A store keyed so before
    keeps its results too."""
    from judge.batch.run import BatchOptions, config_key, grade_options, legacy_config_keys
    opts = BatchOptions(folder=tmp_path, out=tmp_path, challenge="relu")
    plain = grade_options(opts, "cpu", 5)
    named = grade_options(BatchOptions(folder=tmp_path, out=tmp_path, challenge="relu", policy="leetgpu"), "cpu", 5)
    assert config_key(plain) == config_key(named)
    assert config_key({**plain, "policy": None}) in legacy_config_keys(named)
    exact = grade_options(BatchOptions(folder=tmp_path, out=tmp_path, challenge="relu", policy="exact"), "cpu", 5)
    assert config_key(exact) != config_key(plain) and legacy_config_keys(exact) == []

    folder, out = relu_store(tmp_path / "store")
    run = judge("batch", folder, "--out", out, *QUICK, "--policy", "leetgpu", "--seed", "5")
    assert run.exit_code == 0 and "0 graded now, 1 kept from before" in run.output, run.output


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_an_interrupted_batch_ends_cleanly(tmp_path, how):
    """SIGTERM killed the batch silently, leaving /tmp/judge-worker-* folders
    and staged _grading_*.py copies; Ctrl-C said only "Aborted!". Both now
    stop the lanes, remove the copies, say what was recorded, exit 1."""
    folder, out, scratch = tmp_path / "class", tmp_path / "results", tmp_path / "tmp"
    folder.mkdir()
    scratch.mkdir()
    shutil.copyfile(RELU / "torch_relu.py", folder / "a_quick.py")
    (folder / "b_slow.py").write_text("import time\ntime.sleep(60)\n" + (RELU / "correct_block1024.py").read_text())
    # SIGINT as a terminal leaves it: a test run started in the background (`cmd &`) ignores SIGINT, and the
    # batch inherited that, graded on and exited 0.
    proc = subprocess.Popen(batch_cmd(folder, out, *QUICK), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "TMPDIR": str(scratch)}, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = json.loads(proc.stdout.readline())  # one result recorded, the next file under way
    if how == "sigterm":
        os.kill(proc.pid, signal.SIGTERM)
    else:  # a terminal's Ctrl-C: SIGINT to the whole process group, lanes included
        os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-2000:]
    assert "interrupted: 1 of 2 result(s)" in err and "run the same command again" in err
    assert "Traceback" not in err and "Aborted!" not in err
    assert sorted(recorded(out)) == [first["id"]]
    assert not list(out.glob("_grading_*"))
    assert not list(scratch.glob("judge-*"))
