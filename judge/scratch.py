"""The judge's temporary folders: a worker's scratch (judge.isolation) and a
grading's Triton cache (judge.grader). Each is noted as it is made, so that
a process stopped between a folder's making and the code that would remove
it can remove what is left: a batch lane's SIGTERM in the middle of a
worker's start had left that worker's /tmp/judge-worker-* folder, holding
the student's file (judge.batch.lane)."""

from __future__ import annotations

import shutil
import tempfile
import threading

_made: list[str] = []
_lock = threading.Lock()


def folder(prefix: str) -> str:
    """A new folder under the system's temporary directory, noted."""
    path = tempfile.mkdtemp(prefix=prefix)
    with _lock:
        _made.append(path)
    return path


def remove_left() -> None:
    """Remove every folder noted here that is still there."""
    with _lock:
        paths, _made[:] = list(_made), []
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
