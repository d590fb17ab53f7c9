"""Finding the submissions of a class: a flat folder of .py files, one folder
per student (the student id is the folder's name), or both side by side, and
an optional roster CSV (id, name, email). Every oddity is one line in
`problems`, never an exception.

A class folder comes from students (an LMS download, a clone of their
repositories), so only regular files are read, never through a link (a link
to another student's file took their grade; one to a file outside the class
showed its contents in the message; a pipe hung the batch, /dev/zero filled
its memory), and a name that is not printable UTF-8 is shown with its odd
characters replaced (one crashed the store).

A student whose file is there but cannot be graded (too large, a link,
several .py files and none preferred...) is `skipped`: one row each, saying
why, never taken for a student who submitted nothing. Ids are NFC Unicode
(macOS writes names decomposed), and a roster id matches whatever the case."""

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
    data: bytes = field(default=b"", repr=False)  # the bytes read (and hashed): what is graded


@dataclass
class Skipped:
    """A student who submitted a file that cannot be graded, and why."""

    id: str
    path: Path
    reason: str
    name: str = ""
    email: str = ""


@dataclass
class Discovery:
    layout: str  # "flat", "folders", "mixed" or "empty"
    entries: list[Entry] = field(default_factory=list)
    missing: list[Student] = field(default_factory=list)  # on the roster, nothing submitted
    problems: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)  # submitted, not graded (reason)


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
        sid = unicodedata.normalize("NFC", (row.get(id_field) or "").strip())
        if not sid or id_key(sid) in seen:
            continue
        seen.add(id_key(sid))
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


def student_id(name: str) -> str:
    """A file or folder name as an id: printable, in NFC (a name typed on
    macOS comes decomposed, NFD, and did not match the same roster id)."""
    return unicodedata.normalize("NFC", printable(name))


def id_key(sid: str) -> str:
    """What two ids are compared by: case and Unicode form aside."""
    return unicodedata.normalize("NFC", sid).casefold()


def is_python(path: Path) -> bool:
    """A .py file, whatever the case of its extension (an upper-case .PY went unseen)."""
    return path.suffix.lower() == ".py"


def _regular(path: Path) -> bool:
    """A regular file itself (lstat: a link is not followed)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _read(path: Path, problems: list[str]) -> tuple[str, str, bytes] | str:
    """(sha256, text, bytes) of the file, or why it cannot be graded (also a line in `problems`)."""
    if not _regular(path):
        reason = "not a regular file (a link, a pipe, a device)"
    else:
        try:
            with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NOFOLLOW | os.O_NONBLOCK)) as fh:
                data = fh.read(MAX_SOURCE_BYTES + 1)
        except OSError as exc:
            reason = f"unreadable ({exc.strerror or exc})"
        else:
            if len(data) <= MAX_SOURCE_BYTES:
                return hashlib.sha256(data).hexdigest(), data.decode("utf-8", errors="replace"), data
            reason = f"over the {MAX_SOURCE_BYTES:,}-byte limit"
    problems.append(f"{printable(str(path))}: {reason}; not graded")
    return reason


def _pick(folder: Path, problems: list[str]) -> Path | None:
    """The file graded for a student's folder (None: nothing to grade)."""
    return pick_file(folder, problems)[0]


def pick_file(folder: Path, problems: list[str]) -> tuple[Path | None, str | None]:
    """(the file graded for a student's folder, None), or (None, why not):
    the reason is None for an empty folder (nothing submitted)."""
    candidates = sorted(p for p in _walk(folder) if is_python(p) and not any(
        part in IGNORED or part.startswith(".") for part in p.relative_to(folder).parts))
    files = [p for p in candidates if _regular(p)]
    for p in candidates:
        if p not in files:
            problems.append(f"{printable(str(p))}: not a regular file (a link, a pipe, a device); not read")
    if not files:
        others = [p for p in _walk(folder) if _regular(p)]
        if candidates:
            reason = "its .py files are not regular files (links, pipes, devices)"
        elif others:
            reason = f"no .py file ({len(others)} other file(s))"
        else:
            problems.append(f"{folder}: empty folder")
            return None, None
        problems.append(f"{folder}: {reason}; nothing graded")
        return None, reason
    if len(files) == 1:
        return files[0], None
    for name in PREFERRED_NAMES:
        chosen = [p for p in files if p.name.lower() == name]
        if len(chosen) == 1:
            problems.append(f"{folder}: {len(files)} .py files; graded {chosen[0].relative_to(folder)}")
            return chosen[0], None
    named = sorted({p.parent for p in files if p.name.lower() in PREFERRED_NAMES})
    if len(named) > 1:  # sectionA/bob/solution.py, sectionA/carl/solution.py: students one level down
        places = ", ".join(printable(str(p.relative_to(folder))) for p in named[:3]) + (", …" if len(named) > 3 else "")
        reason = (f"{len(files)} .py files in {len(named)} subfolders ({places}): a folder of student folders? "
                  "Grade it as a class folder of its own")
    else:
        reason = f"{len(files)} .py files and none named {', '.join(PREFERRED_NAMES)}"
    problems.append(f"{folder}: {reason}; nothing graded")
    return None, reason


def _walk(folder: Path):
    """Every file below a student's folder, links to folders not followed."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            yield Path(root) / name


def _match_roster(stem: str, roster: dict[str, Student], problems: list[str] | None = None,
                  where: str = "") -> tuple[str, int]:
    """(id, rank) of a file name against the roster (keyed by id_key): rank
    0 names a student exactly (or no student: the name itself), 1 whatever
    the case or Unicode form, 2 by a part of an LMS export's name
    (lastname_userid_fileid_original.py). A lower rank wins a duplicate id.

    By a part, the first one that is a roster id decides: the LMS writes the
    user's id before the name the student gave the upload, so a later part
    cannot take the file to another student (a decoy upload named
    '..._victim-victim.py' had taken a classmate's grade, its own file
    sorting first among the two)."""
    if stem in {s.id for s in roster.values()}:
        return stem, 0
    if id_key(stem) in roster:
        return roster[id_key(stem)].id, 1
    for sep in ("_", "-", " "):
        hits = [roster[id_key(part)].id for part in stem.split(sep) if id_key(part) in roster]
        if hits:
            others = sorted(set(hits) - {hits[0]})
            if others and problems is not None:
                problems.append(f"{where}: matched to {hits[0]!r}, the first roster id in its name "
                                f"(it also names {', '.join(repr(o) for o in others)})")
            return hits[0], 2
    return stem, 0


def _candidates(folder: Path, roster: dict[str, Student], problems: list[str]) -> tuple[list, str]:
    """(sid, path, rank, reason) for every student-looking item of the class
    folder (reason: why it cannot be graded, None to read it), and the layout."""
    found: list[tuple[str, Path, int, str | None]] = []
    flat = folders = 0
    for item in sorted(folder.iterdir()):
        if item.name in IGNORED or item.name.startswith("."):
            if item.name not in IGNORED:
                problems.append(f"{printable(str(item))}: a hidden name; skipped")
            continue
        if item.is_symlink():
            problems.append(f"{printable(str(item))}: a link; not followed, not graded")
            if is_python(item) or item.is_dir():
                sid, rank = _match_roster(student_id(item.stem if is_python(item) else item.name), roster)
                found.append((sid, item, rank, "a link (not followed)"))
        elif item.is_dir():
            folders += 1
            chosen, reason = pick_file(item, problems)
            if chosen is not None or reason is not None:
                sid, rank = _match_roster(student_id(item.name), roster)
                if rank == 2:  # a folder is named for its student, or for no one
                    sid, rank = student_id(item.name), 0
                found.append((sid, chosen or item, rank, reason))
        elif is_python(item):
            flat += 1
            sid, rank = _match_roster(student_id(item.stem), roster, problems, printable(str(item)))
            found.append((sid, item, rank, None))
        elif item.is_file() and not (roster and item.suffix == ".csv"):
            problems.append(f"{printable(str(item))}: not a .py file; skipped")
            sid, rank = _match_roster(student_id(item.stem), roster)
            if id_key(sid) in roster:  # a roster student's file of another kind: submitted all the same
                found.append((sid, item, rank, "not a .py file"))
    layout = "empty" if not found else "mixed" if flat and folders else "folders" if folders else "flat"
    return found, layout


def _warn_lookalikes(ids: list[str], problems: list[str]) -> None:
    """Two students whose ids differ only by case or Unicode form (Bob.py
    and bob.py): both graded, and said, as it may be one student twice."""
    groups: dict[str, list[str]] = {}
    for sid in ids:
        groups.setdefault(id_key(sid), []).append(sid)
    for same in groups.values():
        if len(same) > 1:
            problems.append(f"warning: ids {', '.join(repr(s) for s in sorted(same))} differ only by case or "
                            "Unicode form; graded as different students (one student twice?)")


def discover(folder: Path, roster: list[Student] | None = None) -> Discovery:
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"no such folder: {folder}")
    by_key = {id_key(s.id): s for s in roster or []}
    problems: list[str] = []
    found, layout = _candidates(folder, by_key, problems)
    discovery = Discovery(layout=layout, problems=problems)
    # A file named exactly as a student (or that student's folder) comes
    # first: another file that merely mentions the id cannot displace it;
    # one that can be read comes before one that cannot.
    found.sort(key=lambda item: (item[3] is not None, item[2]))
    taken: dict[str, Path] = {}
    why: dict[str, tuple[Path, str]] = {}
    for sid, path, _, reason in found:
        if sid in taken:
            if reason is None:
                problems.append(f"{printable(str(path))}: duplicate id {sid!r} (also "
                                f"{printable(str(taken[sid]))}); only the first is graded")
            continue
        read = _read(path, problems) if reason is None else reason
        if isinstance(read, str):
            why.setdefault(sid, (path, read))
            continue
        taken[sid] = path
        student = by_key.get(id_key(sid))
        if roster is not None and student is None:
            problems.append(f"{printable(str(path))}: id {sid!r} is not on the roster; graded anyway")
        discovery.entries.append(Entry(id=sid, path=path.resolve(), sha256=read[0], source=read[1],
                                       name=student.name if student else "",
                                       email=student.email if student else "", data=read[2]))
    for sid, (path, reason) in why.items():
        if sid not in taken:
            student = by_key.get(id_key(sid))
            discovery.skipped.append(Skipped(sid, path, reason, student.name if student else "",
                                             student.email if student else ""))
    _warn_lookalikes([e.id for e in discovery.entries] + [s.id for s in discovery.skipped], problems)
    # Every line printable, whichever names it quotes (a folder's name with a
    # terminal's escape sequences erased earlier lines of the summary).
    problems[:] = [printable(line) for line in problems]
    present = {e.id for e in discovery.entries} | {s.id for s in discovery.skipped}
    discovery.missing = [s for s in roster or [] if s.id not in present]
    return discovery
