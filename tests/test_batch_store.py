"""judge.batch.store: schema, resume (hash and settings), regrade, and a
write by another process noticed and undone."""

from __future__ import annotations

import sqlite3

import pytest

from judge.batch.discover import Entry, Student
from judge.batch.store import SCHEMA_VERSION, Store
from judge.errors import UsageError
from tests.batch_results import accepted, compile_error


def entry(sid, sha="a" * 64):
    return Entry(id=sid, path=f"/x/{sid}.py", sha256=sha, source="pass\n")


def test_schema_wal_and_version(tmp_path):
    store = Store(tmp_path)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"meta", "runs", "submissions", "results"} <= tables
    assert store.meta("schema_version") == str(SCHEMA_VERSION)
    store.close()
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(UsageError, match="schema version 99"):
        Store(tmp_path)


def test_resume_hash_settings_and_regrade(tmp_path):
    store = Store(tmp_path)
    store.sync([entry("a"), entry("b")], [Student("c", "Carol")])
    assert store.to_grade(["a", "b"], "cfg") == ["a", "b"]
    run = store.start_run(challenge="matrix_multiplication")
    store.record("a", "a" * 64, "cfg", run, accepted(), lane="gpu0", wall_s=3.0)
    store.close()

    store = Store(tmp_path)  # a new process: what was recorded is kept
    assert store.to_grade(["a", "b"], "cfg") == ["b"]
    assert store.to_grade(["a", "b"], "other settings") == ["a", "b"]
    assert store.to_grade(["a", "b"], "cfg", regrade={"a"}) == ["a", "b"]
    store.sync([entry("a", "f" * 64)], [])  # a's file changed
    assert store.to_grade(["a"], "cfg") == ["a"]
    rows = {r["id"]: r for r in store.rows()}
    assert rows["a"]["status"] == "stale" and rows["a"]["verdict"] == "accepted"
    assert rows["c"]["status"] == "missing" and rows["c"]["result"] is None
    store.record("a", "f" * 64, "cfg", run, compile_error())
    rows = {r["id"]: r for r in store.rows()}
    assert rows["a"]["verdict"] == "compile_error" and rows["a"]["cases_run"] == 1
    assert store.conn.execute("SELECT count(*) FROM results").fetchone()[0] == 1


def test_gradebook_columns(tmp_path):
    store = Store(tmp_path)
    store.sync([entry("a")], [])
    store.record("a", "a" * 64, "cfg", None, accepted(latency_ms=2.5))
    row = store.rows()[0]
    assert row["score"] == 70.0 and row["latency_ms"] == 2.5 and row["percent_of_target"] == 80.0
    assert row["cases_passed"] == 3 and row["cases_run"] == 3 and row["first_failing_case"] is None
    assert row["result"]["verdict"] == "accepted"


def test_internal_errors_are_graded_again(tmp_path):
    store = Store(tmp_path)
    store.sync([entry("a")], [])
    store.record("a", "a" * 64, "cfg", None, {"verdict": "internal_error", "message": "lane died"})
    assert store.to_grade(["a"], "cfg") == ["a"]


def test_foreign_write_is_noticed_and_undone(tmp_path):
    store = Store(tmp_path)
    store.sync([entry("a"), entry("b")], [])
    store.record("a", "a" * 64, "cfg", None, compile_error())
    assert not store.written_by_another()
    intruder = sqlite3.connect(tmp_path / "results.sqlite")
    intruder.execute("UPDATE results SET verdict = 'accepted', score = 100")
    intruder.commit()
    intruder.close()
    assert store.written_by_another()
    assert store.repair() == ["a"]
    assert store.to_grade(["a", "b"], "cfg") == ["a", "b"]


def test_what_a_submission_puts_in_its_result_is_stored(tmp_path):
    """A lone surrogate in a message (SQLite refused it, and the batch died)
    and NaN in an error (no JSON word for it) are stored, replaced."""
    store = Store(tmp_path)
    store.sync([entry("surr")], [])
    result = dict(compile_error(), message="lone \ud800 surrogate")
    result["cases"] = [dict(result["cases"][0], max_abs_err=float("nan"))] if result.get("cases") else \
        [{"name": "example", "status": "wrong_answer", "max_abs_err": float("inf")}]
    store.record("surr", "a" * 64, "cfg", None, result)
    row = next(r for r in store.rows() if r["id"] == "surr")
    assert "\ufffd" in row["message"] or "?" in row["message"]
    assert row["result"]["cases"][0]["max_abs_err"] is None
    store.close()


def test_one_batch_at_a_time_per_results_folder(tmp_path):
    """Two batches on one --out mixed up students (staged files of the same
    names): the second is refused while the first holds the folder."""
    from judge.batch.run import writer_lock
    with writer_lock(tmp_path / "out"):
        with pytest.raises(UsageError, match="another judge batch"):
            with writer_lock(tmp_path / "out"):
                pass
    with writer_lock(tmp_path / "out"):  # free again once the first has ended
        pass


def test_ids_that_look_like_others_are_shown_as_they_are():
    """A right-to-left override or a zero-width space in a file name made one
    id look like another in the report and the gradebook."""
    from judge.batch.discover import printable
    assert printable("bob\u202eyp.exe") == "bob\ufffdyp.exe"
    assert printable("al\u200bice") == "al\ufffdice"
    assert printable("Zoë") == "Zoë"


def test_json_lines_are_strict_json(capsys):
    """--json lines: an infinite error or a lone surrogate in a name were
    written as Infinity and \\udcff, which strict JSON readers refuse."""
    import json
    from judge.batch.progress import JsonLines
    display = JsonLines(1, ["cpu0"])
    display.done("cpu0", "x", "wrong_answer", {"id": "x\udcff", "result": {"max_abs_err": float("inf"), "n": 1}})
    line = capsys.readouterr().out.strip()
    parsed = json.loads(line, parse_constant=lambda name: pytest.fail(f"non-standard JSON constant {name}"))
    assert parsed["result"] == {"max_abs_err": None, "n": 1}
    line.encode("utf-8")  # no lone surrogate left


def test_a_file_that_became_ungradable_shows_no_old_grade(tmp_path):
    """Graded, then replaced by an oversized file (or a link): the old
    `graded, accepted` row stayed. The student is now "submitted, not
    graded: REASON" with no grade; the old result stays in the store and
    counts again if the same file comes back."""
    from judge.batch.discover import Skipped
    store = Store(tmp_path)
    store.sync([entry("a")], [])
    store.record("a", "a" * 64, "cfg", None, accepted())
    store.sync([], [], [Skipped("a", "/x/a.py", "over the 1,048,576-byte limit")])
    row = store.rows()[0]
    assert row["status"] == "submitted, not graded: over the 1,048,576-byte limit"
    assert row["verdict"] is None and row["score"] is None and row["result"] is None and row["source"] is None
    assert store.conn.execute("SELECT count(*) FROM results").fetchone()[0] == 1  # nothing lost
    store.sync([entry("a")], [])  # the same file back: its result is current again
    assert store.rows()[0]["status"] == "graded" and store.to_grade(["a"], "cfg") == []


def test_a_damaged_store_is_one_clear_error(tmp_path):
    """A damaged page gave sqlite3.DatabaseError's traceback (database disk
    image is malformed), from batch and export alike."""
    store = Store(tmp_path)
    store.sync([Entry(id=f"s{i}", path=f"/x/{i}.py", sha256="a" * 64, source="x" * 3000) for i in range(40)], [])
    store.close()
    with open(tmp_path / "results.sqlite", "r+b") as fh:
        fh.seek(4096)
        fh.write(b"\xa5" * 2000)
    for read_only in (False, True):
        with pytest.raises(UsageError, match="is damaged .*restore it from a backup"):
            Store(tmp_path, read_only=read_only)

    other = tmp_path / "json"
    store = Store(other)
    store.sync([entry("a")], [])
    store.record("a", "a" * 64, "cfg", None, accepted())
    store.conn.execute("UPDATE results SET result_json = '{\"verdict\": \"acc\x01'")
    with pytest.raises(UsageError, match="is damaged"):
        store.rows()


def test_a_store_copied_without_its_shm_file_is_not_called_unreadable(tmp_path, monkeypatch):
    """Copied without results.sqlite-shm into a read-only folder: its
    results, in the -wal file, cannot be read there. Said so; never
    'not a results store ... move it aside'."""
    import shutil
    store = Store(tmp_path / "src")
    store.sync([entry("a")], [])
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("results.sqlite", "results.sqlite-wal"):  # copied while the batch still had it open
        shutil.copyfile(tmp_path / "src" / name, copy / name)
    store.close()
    real_connect = sqlite3.connect

    def read_only_folder(database, *args, **kwargs):  # what a folder this process cannot write gives (root can)
        if "mode=ro" in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(database, *args, **kwargs)
    monkeypatch.setattr(sqlite3, "connect", read_only_folder)
    monkeypatch.setattr("judge.batch.store.os.access", lambda *a: False)
    with pytest.raises(UsageError) as info:
        Store.open_existing(copy, read_only=True)
    message = str(info.value)
    assert "results.sqlite-shm file is missing" in message and "read-only" in message
    assert "move it aside" not in message and "intact" in message


def test_a_store_of_another_challenge_is_refused(tmp_path):
    """A second challenge graded into the same --out merged the two."""
    from judge.batch.run import BatchOptions, open_store
    store = Store(tmp_path)
    store.start_run(challenge="relu")  # a store from before meta kept the challenge: its runs say
    store.close()
    with pytest.raises(UsageError, match="holds results for the challenge relu, not vector_addition.*another --out"):
        open_store(BatchOptions(folder=tmp_path, out=tmp_path, challenge="vector_addition"))
    open_store(BatchOptions(folder=tmp_path, out=tmp_path, challenge="relu")).close()


def test_a_file_gone_from_the_class_shows_no_grade_and_gets_it_back_on_return(tmp_path):
    """Without a roster nothing called a removed file missing: its old grade
    stayed in the gradebook as "graded" (the sixteenth session's batch probe)."""
    from judge.batch.store import GONE
    store = Store(tmp_path)
    store.sync([entry("a"), entry("b")], [], complete=True)
    store.record("a", "a" * 64, "cfg", None, accepted())
    store.record("b", "a" * 64, "cfg", None, accepted())
    store.sync([entry("b")], [], complete=True)  # a's file was moved away
    rows = {r["id"]: r for r in store.rows()}
    assert rows["a"]["status"] == GONE and rows["a"]["verdict"] is None and rows["a"]["score"] is None
    assert rows["b"]["status"] == "graded" and rows["b"]["verdict"] == "accepted"
    store.sync([entry("a"), entry("b")], [], complete=True)  # back, unchanged: its result stands, not regraded
    rows = {r["id"]: r for r in store.rows()}
    assert rows["a"]["status"] == "graded" and rows["a"]["verdict"] == "accepted"
    assert store.to_grade(["a", "b"], "cfg") == []


def test_an_id_that_changes_case_keeps_its_row(tmp_path):
    """A roster added to a batch: Z.PY, graded as Z, is then z. A phantom Z
    row ("no file in the class folder") stayed beside z, graded again; and a
    roster without z turned Zed's named row into that phantom."""
    store = Store(tmp_path)
    store.sync([entry("Z"), entry("b")], [], complete=True)
    store.record("Z", "a" * 64, "cfg", None, accepted())
    store.sync([entry("z"), entry("b")], [], complete=True)
    rows = {r["id"]: r for r in store.rows()}
    assert set(rows) == {"z", "b"} and rows["z"]["verdict"] == "accepted" and rows["z"]["status"] == "graded"
    assert store.to_grade(["z", "b"], "cfg") == ["b"]  # its result kept, not graded again
    assert not store.written_by_another() and store.repair() == []  # the store's own record followed
    store.sync([entry("Z"), entry("z")], [], complete=True)  # both there: two students, nothing renamed
    assert {r["id"] for r in store.rows()} == {"Z", "z", "b"}
