"""The results store: one SQLite file, written by the batch process alone.

WAL mode and synchronous=FULL: a result row is written in one transaction,
so a kill -9 or a power cut leaves either the whole row or none of it.
Schema version 1:

- meta: key/value (schema_version, seed, config)
- runs: one row per `judge batch` invocation (settings, versions, GPUs,
  drift check, start/end)
- submissions: id (the student), path, sha256 and text of the file,
  roster name/email, status (pending, graded, missing)
- results: one row per submission: the full result JSON (as `judge submit
  --json` prints it) and the columns a gradebook needs.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from ..errors import UsageError

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


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def clean(value: Any) -> Any:
    """What a submission may put in its result, made storable: a lone
    surrogate (from an exception message, or a file name that was not UTF-8)
    replaced, which SQLite refused and the batch died of; NaN and infinities
    (the error of a NaN output) as None, which JSON has no word for."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="replace").decode("utf-8")
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def gradebook_columns(result: dict) -> dict[str, Any]:
    """The gradebook's columns of one result JSON, read defensively (a field
    missing or renamed gives None, never an error)."""
    score = result.get("score") or {}
    timing = result.get("timing") or {}
    perf = result.get("performance") or {}
    cases = [c for c in result.get("cases") or [] if isinstance(c, dict)]
    ran = [c for c in cases if c.get("status") not in ("skipped", "not_run")]
    failing = next((c for c in ran if c.get("status") != "accepted"), None)
    target = score.get("target")
    percent = (perf.get("percent_of") or {}).get(target) if target else None
    return dict(
        verdict=str(result.get("verdict") or "internal_error"),
        score=_num(score.get("total")), max_score=_num(score.get("maximum")),
        correctness_points=_num(score.get("correctness")), performance_points=_num(score.get("performance")),
        latency_ms=_num(result.get("latency_ms")), tflops=_num(timing.get("tflops")),
        percent_of_target=_num(percent),
        cases_passed=sum(1 for c in ran if c.get("status") == "accepted"), cases_run=len(ran),
        first_failing_case=failing.get("name") if failing else None,
        message=str(result.get("message") or ""),
    )


class Store:
    def __init__(self, folder: Path, read_only: bool = False):
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        try:
            self._open(read_only)
        except (sqlite3.DatabaseError, ValueError) as exc:
            raise UsageError(f"{self.path} is not a results store this judge can read ({exc}); move it aside "
                             "or give another --out") from None
        except OSError as exc:
            raise UsageError(f"{self.folder}: cannot open the results store there ({exc.strerror or exc})") from None

    def _open(self, read_only: bool) -> None:
        if read_only:
            # An export reads only: from a folder it may not write as well
            # (then as an immutable file: no batch may be writing it).
            try:
                self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None, timeout=30)
                self.conn.execute("SELECT count(*) FROM meta").fetchone()
            except sqlite3.OperationalError:
                self.conn = sqlite3.connect(f"file:{self.path}?immutable=1", uri=True, isolation_level=None)
            self.conn.row_factory = sqlite3.Row
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

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

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

    def start_run(self, **fields: Any) -> int:
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO runs(started_at, challenge, policy, seed, device, backend, options, versions, gpus) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (now(), fields.get("challenge"), fields.get("policy"), fields.get("seed"), fields.get("device"),
                 fields.get("backend"), json.dumps(fields.get("options")), json.dumps(fields.get("versions")),
                 json.dumps(fields.get("gpus"))))
            return int(cur.lastrowid)

    def end_run(self, run_id: int, summary: dict, drift: dict | None) -> None:
        with self.transaction():
            self.conn.execute("UPDATE runs SET ended_at = ?, summary = ?, drift = ? WHERE id = ?",
                              (now(), json.dumps(summary), json.dumps(drift), run_id))

    def runs(self) -> list[dict]:
        out = []
        for row in self.conn.execute("SELECT * FROM runs ORDER BY id"):
            item = dict(row)
            for key in ("options", "versions", "gpus", "drift", "summary"):
                item[key] = json.loads(item[key]) if item[key] else None
            out.append(item)
        return out

    # --- submissions -------------------------------------------------------------

    def sync(self, entries: Iterable, missing: Iterable) -> None:
        """Record what was found: new files pending, changed files (hash)
        pending again; roster students with no file `missing`."""
        with self.transaction():
            for e in entries:
                row = self.conn.execute("SELECT sha256 FROM submissions WHERE id = ?", (e.id,)).fetchone()
                path, source, name, email = (clean(str(v)) for v in (e.path, e.source, e.name, e.email))
                if row is None:
                    self.conn.execute("INSERT INTO submissions(id, path, sha256, source, name, email, status, "
                                      "seen_at) VALUES (?,?,?,?,?,?,'pending',?)",
                                      (e.id, path, e.sha256, source, name, email, now()))
                else:
                    self.conn.execute("UPDATE submissions SET path = ?, sha256 = ?, source = ?, name = ?, "
                                      "email = ?, seen_at = ? WHERE id = ?",
                                      (path, e.sha256, source, name, email, now(), e.id))
            for s in missing:
                row = self.conn.execute("SELECT status FROM submissions WHERE id = ?", (s.id,)).fetchone()
                if row is None:
                    self.conn.execute("INSERT INTO submissions(id, name, email, status, seen_at) "
                                      "VALUES (?,?,?,'missing',?)", (s.id, s.name, s.email, now()))

    def to_grade(self, ids: list[str], config: str, regrade: set[str] | None = None) -> list[str]:
        """Of `ids`, those with no result for their current file and settings
        (or whose result is the judge's own failure, or asked for again)."""
        todo = []
        for sid in ids:
            row = self.conn.execute(
                "SELECT r.sha256 AS rsha, r.config, r.verdict, s.sha256 AS ssha FROM submissions s "
                "LEFT JOIN results r ON r.submission_id = s.id WHERE s.id = ?", (sid,)).fetchone()
            if (row is None or row["rsha"] is None or row["rsha"] != row["ssha"] or row["config"] != config
                    or row["verdict"] in RETRY_VERDICTS or (regrade is not None and sid in regrade)):
                todo.append(sid)
        return todo

    def submission(self, sid: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM submissions WHERE id = ?", (sid,)).fetchone()
        return dict(row) if row else None

    # --- results -----------------------------------------------------------------

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

    def rows(self) -> list[dict]:
        """Every submission (graded, pending or missing) with its result, if
        any, in id order: what the exports read. `result` is the parsed JSON."""
        out = []
        query = ("SELECT s.id, s.path, s.sha256 AS file_sha256, s.source, s.name, s.email, s.status, r.* "
                 "FROM submissions s LEFT JOIN results r ON r.submission_id = s.id ORDER BY s.id")
        for row in self.conn.execute(query):
            item = dict(row)
            item["result"] = json.loads(item.pop("result_json")) if item.get("result_json") else None
            if item["result"] is not None and item["sha256"] != item["file_sha256"]:
                item["status"] = "stale"  # the file changed since: graded on the next batch run
            out.append(item)
        return out
