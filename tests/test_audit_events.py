"""The audit hook's checks of file events (judge.worker.audit_events),
called directly: a process's own memory is never opened, under any path
or link, and a path object io.FileIO was handed is not trusted."""

from __future__ import annotations

import pathlib
import sys

import pytest

from judge.worker import audit_events


class Refused(Exception):
    pass


def _checker(blamed: bool = True):
    def refuse(what):
        raise Refused(what)

    known = type("Known", (), {"judge_files": frozenset(), "passed_files": frozenset()})()
    return audit_events.checker("/scratch/submission.py", (), known, lambda frame, *a: blamed,
                                lambda frame: blamed, lambda frame: blamed, lambda frame: True, frozenset(),
                                refuse, lambda path: True, lambda program: True)


@pytest.mark.parametrize("path", ["/proc/self/mem", "/proc/1/task/1/mem", "mem", b"/proc/self/mem",
                                  "/proc/thread-self/mem", "./mem"])
def test_a_process_memory_is_never_opened(path):
    for blamed in (True, False):  # whoever asks: no one in a worker opens it honestly
        with pytest.raises(Refused, match="memory"):
            _checker(blamed)("open", (path, "r+b", 0), sys._getframe())


def test_no_link_is_made_to_a_process_memory():
    check = _checker()
    with pytest.raises(Refused, match="memory"):
        check("os.symlink", ("/proc/self/mem", "notes.txt", None), sys._getframe())
    check("os.symlink", ("data.bin", "alias.bin", None), sys._getframe())


def test_other_files_open_as_before():
    check = _checker()
    for path in ("/tmp/memo", "/proc/self/maps", b"/proc/self/status", "membership.txt", 3):
        check("open", (path, "r", 0), sys._getframe())


def test_a_path_object_handed_to_fileio_is_refused_to_the_file_alone():
    path = pathlib.PurePosixPath("/tmp/x")
    with pytest.raises(Refused, match="path object"):
        _checker(True)("open", (path, "r", 0), sys._getframe())
    _checker(False)("open", (path, "r", 0), sys._getframe())
