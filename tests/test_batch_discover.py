"""judge.batch.discover: both layouts, the roster, and every bad input as a
line in `problems`, never an exception."""

from __future__ import annotations

import os

import pytest

from judge.batch.discover import discover, read_roster
from judge.errors import UsageError


def write(path, text="def solve(*a):\n    pass\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_flat_folder(tmp_path):
    write(tmp_path / "alice.py")
    write(tmp_path / "bob.py", "")
    write(tmp_path / "notes.txt", "hello")
    found = discover(tmp_path)
    assert found.layout == "flat"
    assert [e.id for e in found.entries] == ["alice", "bob"]
    assert len(found.entries[0].sha256) == 64 and found.entries[1].source == ""
    assert any("notes.txt" in p and "not a .py file" in p for p in found.problems)


def test_one_folder_per_student_and_roster(tmp_path):
    subs = tmp_path / "subs"
    write(subs / "alice" / "solution.py")
    write(subs / "bob" / "deep" / "kernel.py")
    write(subs / "carol" / "a.py")
    write(subs / "carol" / "b.py")  # two files, neither preferred: not graded
    (subs / "dave").mkdir()  # empty folder
    write(subs / "erin" / "solution.py")
    write(subs / "erin" / "helper.py")  # two files, solution.py preferred
    roster = tmp_path / "roster.csv"
    roster.write_text("ID,Name,Email\nalice,Alice A,a@x\nbob,Bob,b@x\nfrank,Frank,f@x\nalice,dup,d@x\n")
    students = read_roster(roster)
    assert [s.id for s in students] == ["alice", "bob", "frank"]
    found = discover(subs, students)
    assert found.layout == "folders"
    assert [e.id for e in found.entries] == ["alice", "bob", "erin"]
    assert found.entries[0].name == "Alice A" and found.entries[0].email == "a@x"
    assert [s.id for s in found.missing] == ["frank"]
    text = "\n".join(found.problems)
    assert "carol" in text and "nothing graded" in text
    assert "dave: empty folder" in text
    assert "graded solution.py" in text
    assert "'erin' is not on the roster" in text


def test_students_one_level_down_are_named_as_such(tmp_path):
    """sectionA/bob/solution.py and sectionA/carl/solution.py: the reason
    said no file was named solution.py."""
    write(tmp_path / "sectionA" / "bob" / "solution.py")
    write(tmp_path / "sectionA" / "carl" / "solution.py")
    write(tmp_path / "dora" / "solution.py")
    found = discover(tmp_path)
    assert [e.id for e in found.entries] == ["dora"]
    text = "\n".join(found.problems)
    assert "2 subfolders (bob, carl): a folder of student folders?" in text and "none named" not in text


def test_lms_names_and_duplicates(tmp_path):
    write(tmp_path / "smith_alice_123_matmul.py")
    write(tmp_path / "alice.py")  # the same student twice
    write(tmp_path / "alice2" / "solution.py")
    roster = [s for s in read_roster(write(tmp_path.parent / "r.csv", "id\nalice\nalice2\n"))]
    found = discover(tmp_path, roster)
    assert found.layout == "mixed"
    assert sorted(e.id for e in found.entries) == ["alice", "alice2"]
    assert any("duplicate id 'alice'" in p for p in found.problems)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(tmp_path):
    path = write(tmp_path / "locked.py")
    path.chmod(0)
    found = discover(tmp_path)
    assert found.entries == [] and "unreadable" in found.problems[0]


def test_bad_inputs_raise_usage_errors(tmp_path):
    with pytest.raises(UsageError):
        discover(tmp_path / "nope")
    with pytest.raises(UsageError, match="no id column"):
        read_roster(write(tmp_path / "r.csv", "name,email\nx,y\n"))


def test_oversized_file(tmp_path):
    write(tmp_path / "big.py", "#" * (1 << 20) + "\n")
    found = discover(tmp_path)
    assert found.entries == [] and "limit" in found.problems[0]


def test_only_regular_files_are_read(tmp_path):
    """A link to another student's file (it took their grade), a link out of
    the class (its contents showed in the message), a pipe (it hung the
    batch): none is read, each is one line in `problems`."""
    write(tmp_path / "alice" / "solution.py")
    own = write(tmp_path / "mallory" / "mine.py")
    (tmp_path / "mallory" / "solution.py").symlink_to(tmp_path / "alice" / "solution.py")
    secret = write(tmp_path.parent / "secret.txt", "hmac-key\n")
    (tmp_path / "leak.py").symlink_to(secret)
    os.mkfifo(tmp_path / "pipe.py")
    found = discover(tmp_path)
    by_id = {e.id: e for e in found.entries}
    assert sorted(by_id) == ["alice", "mallory"]
    assert by_id["mallory"].path == own.resolve()
    assert all("hmac-key" not in e.source for e in found.entries)
    assert sum("not a regular file" in p or "a link" in p for p in found.problems) == 3


def test_names_made_printable(tmp_path):
    """A name that is not UTF-8, or carries a terminal's escape sequence, is
    stored and shown with those characters replaced."""
    write(tmp_path / os.fsdecode(b"x\xff.py"))
    write(tmp_path / "zz\x1b[2Kbob.py")
    ids = sorted(e.id for e in discover(tmp_path).entries)
    assert ids == ["x\ufffd", "zz\ufffd[2Kbob"]
    assert all(s.encode("utf-8") for s in ids)


def test_an_exact_name_wins_over_a_partial_roster_match(tmp_path):
    """With a roster, a_bob.py mentions bob; bob.py is bob's, whatever sorts first."""
    write(tmp_path / "a_bob.py", "# not bob's\n")
    write(tmp_path / "bob.py", "# bob's\n")
    roster = read_roster(write(tmp_path.parent / "r.csv", "id\nbob\n"))
    found = discover(tmp_path, roster)
    assert [(e.id, e.source) for e in found.entries] == [("bob", "# bob's\n")]
    assert any("a_bob.py" in p and "duplicate id 'bob'" in p for p in found.problems)


def test_submitted_but_ungradable_files_get_a_row(tmp_path):
    """An oversized file, a link, a folder of several .py files with no
    solution.py: each student is `skipped` with the reason (no row at all
    before, or `missing` on a roster); an upper-case .PY is graded."""
    write(tmp_path / "big.py", "#" * (1 << 20) + "\n")
    (tmp_path / "linked.py").symlink_to(write(tmp_path.parent / "elsewhere.py"))
    write(tmp_path / "carol" / "a.py")
    write(tmp_path / "carol" / "b.py")
    write(tmp_path / "upper.PY")
    roster = read_roster(write(tmp_path.parent / "r.csv", "id\nbig\nlinked\ncarol\nupper\nnobody\n"))
    found = discover(tmp_path, roster)
    assert [e.id for e in found.entries] == ["upper"]
    reasons = {s.id: s.reason for s in found.skipped}
    assert sorted(reasons) == ["big", "carol", "linked"]
    assert "limit" in reasons["big"] and "link" in reasons["linked"] and "2 .py files" in reasons["carol"]
    assert [s.id for s in found.missing] == ["nobody"]
    assert discover(tmp_path).skipped and sorted(s.id for s in discover(tmp_path).skipped) == sorted(reasons)


def test_ids_are_nfc_and_roster_ids_match_whatever_the_case(tmp_path):
    """josé.py written decomposed (macOS) against josé on the roster, Dave/
    against dave: one student each. Bob.py and bob.py with no roster: both
    graded, with a warning."""
    import unicodedata
    write(tmp_path / unicodedata.normalize("NFD", "josé.py"))
    write(tmp_path / "Dave" / "solution.py")
    roster = read_roster(write(tmp_path.parent / "r.csv", "id\n" + unicodedata.normalize("NFC", "josé") + "\ndave\n"))
    found = discover(tmp_path, roster)
    assert sorted(e.id for e in found.entries) == sorted(["dave", unicodedata.normalize("NFC", "josé")])
    assert found.missing == [] and not any("not on the roster" in p for p in found.problems)

    other = tmp_path.parent / "case"
    write(other / "Bob.py")
    write(other / "bob.py")
    found = discover(other)
    assert sorted(e.id for e in found.entries) == ["Bob", "bob"]
    assert any("differ only by case" in p for p in found.problems)


def test_a_later_part_of_an_lms_name_cannot_take_another_students_file(tmp_path):
    """The LMS writes lastname_userid_fileid_ before the student's own name
    for the upload: a decoy upload whose own name names a classmate, and
    sorts before the classmate's file, took the classmate's grade (theirs
    was dropped as a duplicate). The first roster id in the name decides."""
    write(tmp_path / "zedalice_222_9001_solution.py")
    write(tmp_path / "aaronmallory_111_9002_solution.py")
    write(tmp_path / "aaronmallory_111_9002_222_x-222.py")
    roster = read_roster(write(tmp_path.parent / "r.csv", "id\n111\n222\n"))
    found = discover(tmp_path, roster)
    by_id = {e.id: e.path.name for e in found.entries}
    assert by_id["222"] == "zedalice_222_9001_solution.py"
    assert by_id["111"] in ("aaronmallory_111_9002_solution.py", "aaronmallory_111_9002_222_x-222.py")
    assert any("matched to '111'" in p and "'222'" in p for p in found.problems)


def test_every_problem_line_is_printable(tmp_path):
    """A student folder's name carrying a terminal's escape sequences was
    quoted raw in 'N .py files; graded ...' and erased earlier lines of the
    instructor's terminal."""
    evil = tmp_path / "eve\x1b[2K\x1b[1A"
    write(evil / "solution.py")
    write(evil / "helper.py")
    (tmp_path / "empty\x1b[8m").mkdir()
    found = discover(tmp_path)
    assert found.problems and all("\x1b" not in line for line in found.problems)
