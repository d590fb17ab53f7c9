"""Finding the submissions of a class: a flat folder of .py files, one folder
per student (the student id is the folder's name), or both side by side, and
an optional roster CSV (id, name, email). Every oddity is one line in
`problems`, never an exception.

A class folder comes from students (an LMS download, a clone of their
repositories), so only regular files are read, never through a link (a link
to another student's file took their grade; one to a file outside the class
showed its contents in the message; a pipe hung the batch, /dev/zero filled
its memory), and a name that is not printable UTF-8 is shown with its odd
characters replaced (one crashed the store)."""

from __future__ import annotations

import csv
import hashlib
import os
import stat
import unicodedata
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


def printable(text: str) -> str:
    """A name as it can be stored and shown: bytes that were not UTF-8 (kept
    by Python as lone surrogates), control characters (a terminal's escape
    sequences), format characters (a right-to-left override or a zero-width
    space makes one id look like another) and noncharacters replaced by U+FFFD."""
    text = text.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
    return "".join("\ufffd" if unicodedata.category(c) in ("Cc", "Cs", "Cf", "Cn") else c for c in text)


def _regular(path: Path) -> bool:
    """A regular file itself (lstat: a link is not followed)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _read(path: Path, problems: list[str]) -> tuple[str, str] | None:
    if not _regular(path):
        problems.append(f"{printable(str(path))}: not a regular file (a link, a pipe, a device); not graded")
        return None
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW | os.O_NONBLOCK)) as fh:
            data = fh.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        problems.append(f"{printable(str(path))}: unreadable ({exc.strerror or exc}); not graded")
        return None
    if len(data) > MAX_SOURCE_BYTES:
        problems.append(f"{printable(str(path))}: over the {MAX_SOURCE_BYTES:,}-byte limit; not graded")
        return None
    return hashlib.sha256(data).hexdigest(), data.decode("utf-8", errors="replace")


def _pick(folder: Path, problems: list[str]) -> Path | None:
    candidates = sorted(p for p in _walk(folder) if p.suffix == ".py" and not any(
        part in IGNORED or part.startswith(".") for part in p.relative_to(folder).parts))
    files = [p for p in candidates if _regular(p)]
    for p in candidates:
        if p not in files:
            problems.append(f"{printable(str(p))}: not a regular file (a link, a pipe, a device); not read")
    if not files:
        others = [p for p in _walk(folder) if _regular(p)]
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


def _walk(folder: Path):
    """Every file below a student's folder, links to folders not followed."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            yield Path(root) / name


def _match_roster(stem: str, roster_ids: set[str]) -> tuple[str, bool]:
    """(id, exact). LMS exports name files lastname_userid_fileid_original.py:
    a roster id among the name's parts is the student, unless a file is
    named exactly as a student is (that one is theirs)."""
    if stem in roster_ids:
        return stem, True
    for sep in ("_", "-", " "):
        hits = [part for part in stem.split(sep) if part in roster_ids]
        if len(hits) == 1:
            return hits[0], False
    return stem, True


def discover(folder: Path, roster: list[Student] | None = None) -> Discovery:
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"no such folder: {folder}")
    by_id = {s.id: s for s in roster or []}
    problems: list[str] = []
    found: list[tuple[str, Path, bool]] = []
    flat = folders = 0
    for item in sorted(folder.iterdir()):
        if item.name in IGNORED or item.name.startswith("."):
            if item.name not in IGNORED:
                problems.append(f"{printable(str(item))}: a hidden name; skipped")
            continue
        if item.is_symlink():
            problems.append(f"{printable(str(item))}: a link; not followed, not graded")
        elif item.is_dir():
            folders += 1
            chosen = _pick(item, problems)
            if chosen is not None:
                found.append((printable(item.name), chosen, True))
        elif item.suffix == ".py":
            flat += 1
            sid, exact = _match_roster(printable(item.stem), set(by_id))
            found.append((sid, item, exact))
        elif item.is_file() and not (roster and item.suffix == ".csv"):
            problems.append(f"{printable(str(item))}: not a .py file; skipped")
    discovery = Discovery(layout="empty" if not found else "mixed" if flat and folders
                          else "folders" if folders else "flat", problems=problems)
    # A file named exactly as a student (or that student's folder) comes
    # first: another file that merely mentions the id cannot displace it.
    found.sort(key=lambda item: not item[2])
    taken: dict[str, Path] = {}
    for sid, path, _ in found:
        if sid in taken:
            problems.append(f"{printable(str(path))}: duplicate id {sid!r} (also {printable(str(taken[sid]))}); "
                            "only the first is graded")
            continue
        read = _read(path, problems)
        if read is None:
            continue
        taken[sid] = path
        student = by_id.get(sid)
        if roster is not None and student is None:
            problems.append(f"{printable(str(path))}: id {sid!r} is not on the roster; graded anyway")
        discovery.entries.append(Entry(id=sid, path=path.resolve(), sha256=read[0], source=read[1],
                                       name=student.name if student else "",
                                       email=student.email if student else ""))
    graded = {e.id for e in discovery.entries}
    discovery.missing = [s for s in roster or [] if s.id not in graded]
    return discovery
