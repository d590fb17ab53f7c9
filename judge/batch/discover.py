"""Finding the submissions of a class: a flat folder of .py files, one folder
per student (the student id is the folder's name), or both side by side, and
an optional roster CSV (id, name, email). Every oddity is one line in
`problems`, never an exception."""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError

# In a student's folder holding several .py files, the first of these names wins.
PREFERRED_NAMES = ("solution.py", "submission.py", "main.py", "kernel.py")
MAX_SOURCE_BYTES = 1 << 20
IGNORED = {"__pycache__", ".DS_Store", "expected.toml", ".ipynb_checkpoints"}


@dataclass
class Student:
    id: str
    name: str = ""
    email: str = ""


@dataclass
class Entry:
    """One submission to grade: the student and the file."""

    id: str
    path: Path
    sha256: str
    source: str
    name: str = ""
    email: str = ""


@dataclass
class Discovery:
    layout: str  # "flat", "folders", "mixed" or "empty"
    entries: list[Entry] = field(default_factory=list)
    missing: list[Student] = field(default_factory=list)  # on the roster, nothing submitted
    problems: list[str] = field(default_factory=list)


def read_roster(path: Path) -> list[Student]:
    """A CSV with a header naming an `id` column (or student_id, sid, sis_id),
    optionally `name` and `email`. Raises UsageError when it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read roster {path}: {exc}") from None
    reader = csv.DictReader(text.splitlines())
    fields = {(f or "").strip().lower(): f for f in reader.fieldnames or []}
    id_field = next((fields[k] for k in ("id", "student_id", "sid", "sis_id", "login") if k in fields), None)
    if id_field is None:
        raise UsageError(f"roster {path} has no id column (its header must name id, name, email)")
    name_field, email_field = fields.get("name"), fields.get("email")
    students, seen = [], set()
    for row in reader:
        sid = (row.get(id_field) or "").strip()
        if not sid or sid in seen:
            continue
        seen.add(sid)
        students.append(Student(sid, (row.get(name_field) or "").strip() if name_field else "",
                                (row.get(email_field) or "").strip() if email_field else ""))
    return students


def _read(path: Path, problems: list[str]) -> tuple[str, str] | None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        problems.append(f"{path}: unreadable ({exc.strerror or exc}); not graded")
        return None
    if len(data) > MAX_SOURCE_BYTES:
        problems.append(f"{path}: {len(data):,} bytes, over the {MAX_SOURCE_BYTES:,}-byte limit; not graded")
        return None
    return hashlib.sha256(data).hexdigest(), data.decode("utf-8", errors="replace")


def _pick(folder: Path, problems: list[str]) -> Path | None:
    files = sorted(p for p in folder.rglob("*.py") if not any(part in IGNORED or part.startswith(".")
                                                               for part in p.relative_to(folder).parts))
    if not files:
        others = [p for p in folder.rglob("*") if p.is_file()]
        problems.append(f"{folder}: " + ("empty folder" if not others else
                                         f"no .py file ({len(others)} other file(s)); nothing graded"))
        return None
    if len(files) == 1:
        return files[0]
    for name in PREFERRED_NAMES:
        chosen = [p for p in files if p.name == name]
        if len(chosen) == 1:
            problems.append(f"{folder}: {len(files)} .py files; graded {chosen[0].relative_to(folder)}")
            return chosen[0]
    problems.append(f"{folder}: {len(files)} .py files and none named {', '.join(PREFERRED_NAMES)}; "
                    "nothing graded")
    return None


def _match_roster(stem: str, roster_ids: set[str]) -> str:
    """LMS exports name files lastname_userid_fileid_original.py: a roster id
    among the name's parts is the student."""
    if stem in roster_ids:
        return stem
    for sep in ("_", "-", " "):
        hits = [part for part in stem.split(sep) if part in roster_ids]
        if len(hits) == 1:
            return hits[0]
    return stem


def discover(folder: Path, roster: list[Student] | None = None) -> Discovery:
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"no such folder: {folder}")
    by_id = {s.id: s for s in roster or []}
    problems: list[str] = []
    found: list[tuple[str, Path]] = []
    flat = folders = 0
    for item in sorted(folder.iterdir()):
        if item.name in IGNORED or item.name.startswith("."):
            continue
        if item.is_dir():
            folders += 1
            chosen = _pick(item, problems)
            if chosen is not None:
                found.append((item.name, chosen))
        elif item.suffix == ".py":
            flat += 1
            found.append((_match_roster(item.stem, set(by_id)), item))
        elif item.is_file() and not (roster and item.suffix == ".csv"):
            problems.append(f"{item}: not a .py file; skipped")
    discovery = Discovery(layout="empty" if not found else "mixed" if flat and folders
                          else "folders" if folders else "flat", problems=problems)
    taken: dict[str, Path] = {}
    for sid, path in found:
        if sid in taken:
            problems.append(f"{path}: duplicate id {sid!r} (also {taken[sid]}); only the first is graded")
            continue
        read = _read(path, problems)
        if read is None:
            continue
        taken[sid] = path
        student = by_id.get(sid)
        if roster is not None and student is None:
            problems.append(f"{path}: id {sid!r} is not on the roster; graded anyway")
        discovery.entries.append(Entry(id=sid, path=path.resolve(), sha256=read[0], source=read[1],
                                       name=student.name if student else "",
                                       email=student.email if student else ""))
    graded = {e.id for e in discovery.entries}
    discovery.missing = [s for s in roster or [] if s.id not in graded]
    return discovery
