"""The results store: one SQLite file, written by the batch process alone.

WAL mode and synchronous=FULL: a result row is written in one transaction,
so a kill -9 or a power cut leaves either the whole row or none of it.
Schema version 1:

- meta: key/value (schema_version, seed, config)
- runs: one row per `judge batch` invocation (settings, versions, GPUs,
  drift check, start/end)
- submissions: id (the student), path, sha256 and text of the file (the
  last one read), roster name/email, status (pending, graded, missing, or
  "submitted, not graded: REASON")
- results: one row per submission: the full result JSON (as `judge submit
  --json` prints it) and the columns a gradebook needs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from ..errors import UsageError
from .row_values import clean, gradebook_columns  # noqa: F401  (the store's public helpers)
from . import id_changes

SCHEMA_VERSION = 1
DB_NAME = "results.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at TEXT NOT NULL, ended_at TEXT,
    challenge TEXT, policy TEXT, seed INTEGER, device TEXT, backend TEXT,
    options TEXT, versions TEXT, gpus TEXT, drift TEXT, summary TEXT);
CREATE TABLE IF NOT EXISTS submissions (
    id TEXT PRIMARY KEY, path TEXT, sha256 TEXT, source TEXT,
    name TEXT NOT NULL DEFAULT '', email TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL, seen_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    submission_id TEXT PRIMARY KEY REFERENCES submissions(id),
    sha256 TEXT NOT NULL, config TEXT NOT NULL, run_id INTEGER, graded_at TEXT NOT NULL,
    lane TEXT, wall_s REAL,
    verdict TEXT NOT NULL, score REAL, max_score REAL, correctness_points REAL,
    performance_points REAL, latency_ms REAL, tflops REAL, percent_of_target REAL,
    cases_passed INTEGER, cases_run INTEGER, first_failing_case TEXT, message TEXT,
    flags TEXT NOT NULL DEFAULT '',
    result_json TEXT NOT NULL);
"""

# What a result row is compared by, to notice a change made behind the writer's back.
DIGEST = ("sha256 || '|' || config || '|' || verdict || '|' || COALESCE(score, '') || '|' || flags || '|' "
          "|| result_json")

# Verdicts graded again on the next run: the judge's fault, not the student's.
RETRY_VERDICTS = ("internal_error",)
# The status of a student whose file is there but cannot be graded (too
# large, a link...): "submitted, not graded: REASON". No grade is shown for
# them, not even one recorded for an earlier file (it stays in the store).
NOT_GRADED = "submitted, not graded"
GONE = f"{NOT_GRADED}: no file in the class folder in the last run"
# SQLite's codes for a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB).
DAMAGED_CODES = (11, 26)


def guarded(method):
    """A store method that reads or writes: damage met is one clear line (Store.reading)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.reading():
            return method(self, *args, **kwargs)
    return wrapper


def not_graded(status: str | None) -> bool:
    return bool(status) and (status == "missing" or status.startswith(NOT_GRADED))


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Store:
    def __init__(self, folder: Path, read_only: bool = False):
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        try:
            with self.reading():
                self._open(read_only)
                self._check_intact()
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise UsageError(self._unreadable(exc)) from None
        except OSError as exc:
            raise UsageError(f"{self.folder}: cannot open the results store there ({exc.strerror or exc})") from None

    def _unreadable(self, exc: Exception) -> str:
        """Why an SQLite file is no store of ours: never 'move it aside' for
        an intact store whose tables are in its -wal file (copied without it)."""
        if "no such table" in str(exc):
            return (f"{self.path} holds no results store tables: copied without its {DB_NAME}-wal file? Copy "
                    f"the whole results folder (every {DB_NAME}* file), or name the folder judge batch wrote")
        return (f"{self.path} is not a results store this judge can read ({exc}); if it is no store, move it "
                "aside, else give another --out")

    @contextlib.contextmanager
    def reading(self):
        """A damaged file (a bad page, a result JSON cut short) met anywhere
        in the store: one line saying so and what to do, never a traceback."""
        try:
            yield
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            if not (isinstance(exc, json.JSONDecodeError) or getattr(exc, "sqlite_errorcode", None) in DAMAGED_CODES
                    or any(word in str(exc) for word in ("malformed", "Could not decode"))):
                raise  # not damage: a locked store, say
            detail = " ".join(str(exc).split())[:100]  # one line
            raise UsageError(f"the results store {self.path} is damaged ({detail}); restore it from a "
                             f"backup, or save what it holds with `sqlite3 {self.path} .recover`, or give another "
                             "--out (the class is then graded again)") from None

    def _check_intact(self) -> None:
        row = self.conn.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise sqlite3.DatabaseError(f"database disk image is malformed: {(row or ['?'])[0][:80]}")

    def _open(self, read_only: bool) -> None:
        if read_only:
            self._open_read_only()
            version = self.meta("schema_version")
            if version is None or int(version) != SCHEMA_VERSION:
                raise UsageError(f"{self.path} has schema version {version}; this judge reads {SCHEMA_VERSION}")
            self._data_version, self._digests = 0, {}
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=FULL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        with self.transaction():
            for statement in SCHEMA.strip().split(";"):
                if statement.strip():
                    self.conn.execute(statement)
            version = self.meta("schema_version")
            if version is None:
                self.set_meta("schema_version", str(SCHEMA_VERSION))
            elif int(version) != SCHEMA_VERSION:
                raise UsageError(f"{self.path} has schema version {version}; this judge reads {SCHEMA_VERSION}")
        self._data_version = self._read_data_version()
        self._digests = self._all_digests()

    def _open_read_only(self) -> None:
        """An export reads only: from a folder it may not write as well
        (then as an immutable file: no batch may be writing it). An
        immutable open ignores the -wal file, where recent results live: a
        store whose -wal cannot be read that way is refused, saying why."""
        try:
            self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None, timeout=30)
            self.conn.execute("SELECT count(*) FROM meta").fetchone()
        except sqlite3.OperationalError as exc:
            wal, shm = Path(f"{self.path}-wal"), Path(f"{self.path}-shm")
            if wal.is_file() and wal.stat().st_size > 0:
                missing = f"its {shm.name} file is missing and " if not shm.exists() else ""
                where = "the folder is read-only" if not os.access(self.folder, os.W_OK) else f"({exc})"
                raise UsageError(f"{self.path}: {missing}{where}, so the results in {wal.name} cannot be read; "
                                 "copy the whole results folder somewhere writable and read it there "
                                 "(the store itself is intact)") from None
            self.conn = sqlite3.connect(f"file:{self.path}?immutable=1", uri=True, isolation_level=None)
        self.conn.row_factory = sqlite3.Row

    @classmethod
    def open_existing(cls, folder: Path, read_only: bool = False) -> "Store":
        if not (Path(folder) / DB_NAME).is_file():
            raise UsageError(f"no results store in {folder} (expected {DB_NAME}; run judge batch first)")
        return cls(folder, read_only=read_only)

    def close(self) -> None:
        self.conn.close()

    def transaction(self):
        store = self

        class _Tx:
            def __enter__(self):
                store.conn.execute("BEGIN IMMEDIATE")

            def __exit__(self, kind, exc, tb):
                store.conn.execute("COMMIT" if kind is None else "ROLLBACK")
                store._data_version = store._read_data_version()
                return False
        return _Tx()

    # --- meta ----------------------------------------------------------------

    @guarded
    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @guarded
    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # --- foreign writes --------------------------------------------------------

    def _read_data_version(self) -> int:
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def written_by_another(self) -> bool:
        """True when some other connection (another process: a submission
        that reached the file) committed to the store since our last write."""
        return self._read_data_version() != self._data_version

    def _all_digests(self) -> dict[str, str]:
        return {row[0]: row[1] for row in self.conn.execute(
            f"SELECT submission_id, {DIGEST} FROM results")}

    @guarded
    def repair(self) -> list[str]:
        """After a foreign write: every result row that is not what this
        process read or wrote is deleted (graded again on the next run);
        returns their ids."""
        current = self._all_digests()
        changed = sorted(k for k in set(current) | set(self._digests) if current.get(k) != self._digests.get(k))
        with self.transaction():
            for sid in changed:
                self.conn.execute("DELETE FROM results WHERE submission_id = ?", (sid,))
                self.conn.execute("UPDATE submissions SET status = 'pending' WHERE id = ?", (sid,))
        for sid in changed:
            self._digests.pop(sid, None)
        return changed

    # --- runs ------------------------------------------------------------------

    @guarded
    def start_run(self, **fields: Any) -> int:
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO runs(started_at, challenge, policy, seed, device, backend, options, versions, gpus) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (now(), fields.get("challenge"), fields.get("policy"), fields.get("seed"), fields.get("device"),
                 fields.get("backend"), json.dumps(fields.get("options")), json.dumps(fields.get("versions")),
                 json.dumps(fields.get("gpus"))))
            return int(cur.lastrowid)

    @guarded
    def end_run(self, run_id: int, summary: dict, drift: dict | None) -> None:
        with self.transaction():
            self.conn.execute("UPDATE runs SET ended_at = ?, summary = ?, drift = ? WHERE id = ?",
                              (now(), json.dumps(summary), json.dumps(drift), run_id))

    @guarded
    def recorded_in(self, run_id: int) -> int:
        return int(self.conn.execute("SELECT count(*) FROM results WHERE run_id = ?", (run_id,)).fetchone()[0])

    @guarded
    def runs(self) -> list[dict]:
        out = []
        for row in self.conn.execute("SELECT * FROM runs ORDER BY id"):
            item = dict(row)
            for key in ("options", "versions", "gpus", "drift", "summary"):
                item[key] = json.loads(item[key]) if item[key] else None
            out.append(item)
        return out

    # --- submissions -------------------------------------------------------------

    @guarded
    def sync(self, entries: Iterable, missing: Iterable, skipped: Iterable = (), complete: bool = False) -> None:
        """Record what was found: new files pending, changed files (hash)
        pending again; roster students with no file `missing`; files that
        cannot be graded "submitted, not graded: REASON" (an earlier result
        of theirs is kept in the store, never shown: rows). `complete`: these
        are the whole class folder, so a student of the store not among them
        has no file there any more (GONE)."""
        entries, skipped, missing = list(entries), list(skipped), list(missing)
        with self.transaction():
            if complete:  # an id changed in case only (a roster added) keeps its row
                id_changes.follow(self.conn, {x.id for x in (*entries, *skipped, *missing)}, self._digests)
            for e in entries:
                self._sync_entry(e)
            for s in skipped:
                self._set_status(s.id, f"{NOT_GRADED}: {clean(s.reason)}", clean(str(s.path)), s.name, s.email)
            for s in missing:
                self._set_status(s.id, "missing", None, s.name, s.email)
            # A file gone from the class folder (no roster to call it missing):
            # its grade was shown as if it were still there.
            seen = {x.id for x in (*entries, *skipped, *missing)}
            for sid, status in self.conn.execute("SELECT id, status FROM submissions").fetchall() if complete else ():
                if sid not in seen and not not_graded(status):
                    self._set_status(sid, GONE, None, "", "")

    def _sync_entry(self, e) -> None:
        row = self.conn.execute("SELECT sha256 FROM submissions WHERE id = ?", (e.id,)).fetchone()
        path, source, name, email = (clean(str(v)) for v in (e.path, e.source, e.name, e.email))
        if row is None:
            self.conn.execute("INSERT INTO submissions(id, path, sha256, source, name, email, status, "
                              "seen_at) VALUES (?,?,?,?,?,?,'pending',?)",
                              (e.id, path, e.sha256, source, name, email, now()))
            return
        # A student back from missing or not graded: graded if their result is for this very file.
        self.conn.execute("UPDATE submissions SET path = ?, sha256 = ?, source = ?, name = ?, email = ?, "
                          "seen_at = ?, status = CASE WHEN status IN ('graded', 'pending') THEN status "
                          "WHEN EXISTS (SELECT 1 FROM results WHERE submission_id = ? AND sha256 = ?) "
                          "THEN 'graded' ELSE 'pending' END WHERE id = ?",
                          (path, e.sha256, source, name, email, now(), e.id, e.sha256, e.id))

    def _set_status(self, sid: str, status: str, path: str | None, name: str, email: str) -> None:
        """A student with no gradable file: the status says so; the file's
        last hash and text, and any result, stay (nothing lost)."""
        if self.conn.execute("SELECT 1 FROM submissions WHERE id = ?", (sid,)).fetchone() is None:
            self.conn.execute("INSERT INTO submissions(id, path, name, email, status, seen_at) "
                              "VALUES (?,?,?,?,?,?)", (sid, path, clean(name), clean(email), status, now()))
        else:
            self.conn.execute("UPDATE submissions SET status = ?, path = COALESCE(?, path), seen_at = ? "
                              "WHERE id = ?", (status, path, now(), sid))

    @guarded
    def to_grade(self, ids: list[str], config: str, regrade: set[str] | None = None,
                 same: Iterable[str] = ()) -> list[str]:
        """Of `ids`, those with no result for their current file and settings
        (`config`, or an older key of the same settings in `same`), or whose
        result is the judge's own failure, or asked for again."""
        configs = {config, *same}
        todo = []
        for sid in ids:
            row = self.conn.execute(
                "SELECT r.sha256 AS rsha, r.config, r.verdict, s.sha256 AS ssha FROM submissions s "
                "LEFT JOIN results r ON r.submission_id = s.id WHERE s.id = ?", (sid,)).fetchone()
            if (row is None or row["rsha"] is None or row["rsha"] != row["ssha"] or row["config"] not in configs
                    or row["verdict"] in RETRY_VERDICTS or (regrade is not None and sid in regrade)):
                todo.append(sid)
        return todo

    @guarded
    def made_for(self) -> str | None:
        """The challenge this store's results are for (None: a new store)."""
        challenge = self.meta("challenge")
        if challenge is None:  # a store from before meta kept it: its last run says
            row = self.conn.execute("SELECT challenge FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            challenge = row[0] if row else None
        return challenge

    @guarded
    def submission(self, sid: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
        return dict(row) if row else None

    # --- results -----------------------------------------------------------------

    @guarded
    def record(self, sid: str, sha256: str, config: str, run_id: int | None, result: dict,
               lane: str = "", wall_s: float | None = None, flags: str = "") -> None:
        """One result, whole, in one transaction (replacing an older one)."""
        result = clean(result)
        cols = gradebook_columns(result)
        with self.transaction():
            self.conn.execute(
                "INSERT OR REPLACE INTO results(submission_id, sha256, config, run_id, graded_at, lane, wall_s, "
                "verdict, score, max_score, correctness_points, performance_points, latency_ms, tflops, "
                "percent_of_target, cases_passed, cases_run, first_failing_case, message, flags, result_json) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (sid, sha256, config, run_id, now(), lane, wall_s, cols["verdict"], cols["score"],
                 cols["max_score"], cols["correctness_points"], cols["performance_points"], cols["latency_ms"],
                 cols["tflops"], cols["percent_of_target"], cols["cases_passed"], cols["cases_run"],
                 cols["first_failing_case"], cols["message"], flags, json.dumps(result, allow_nan=False)))
            self.conn.execute("UPDATE submissions SET status = 'graded' WHERE id = ?", (sid,))
            self._digests[sid] = self.conn.execute(
                f"SELECT {DIGEST} FROM results WHERE submission_id = ?",
                (sid,)).fetchone()[0]

    @guarded
    def rows(self) -> list[dict]:
        """Every submission (graded, pending or missing) with its result, if
        any, in id order: what the exports read. `result` is the parsed JSON."""
        out = []
        current = self.meta("config")  # the last run's settings (a store from before it kept none)
        current = set(json.loads(current)) if current else None
        query = ("SELECT s.id, s.path, s.sha256 AS file_sha256, s.source, s.name, s.email, s.status, r.* "
                 "FROM submissions s LEFT JOIN results r ON r.submission_id = s.id ORDER BY s.id")
        for row in self.conn.execute(query):
            item = dict(row)
            item["result"] = json.loads(item.pop("result_json")) if item.get("result_json") else None
            if not_graded(item["status"]):  # no grade for a file no longer there (its result stays stored)
                item = {k: item[k] if k in ("id", "path", "name", "email", "status") else None for k in item}
                item["message"] = item["status"] if item["status"] != "missing" else None
            elif item["result"] is not None and item["sha256"] != item["file_sha256"]:
                item["status"], item["stale_because"] = "stale", "file"  # graded again on the next run
            elif item["result"] is not None and current is not None and item["config"] not in current:
                # Graded under other settings (policy, seed, scale...) than the
                # last run's, which was interrupted before it regraded this one.
                item["status"], item["stale_because"] = "stale", "settings"
            out.append(item)
        return out
