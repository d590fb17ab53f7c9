"""The disk a worker fills, watched from the judge's side (trusted).

A worker writes to its scratch folder and its grading's Triton cache, folders
on the host's disk: a probe's file wrote 1.15 GB there in one case, and one
that kept on would fill the disk under every other grading of a batch and
its results store. Each file is capped by RLIMIT_FSIZE in the worker; this
watch caps their sum: once the folders hold more than the limit, or more
entries than any honest grading makes, it calls `on_exceeded` (the judge kills
the worker) and stops.
"""

from __future__ import annotations

import os
import threading

MAX_ENTRIES = 200_000  # files and folders: an honest grading makes a few thousand at most


def usage(folders, max_entries: int = MAX_ENTRIES) -> tuple[int, int]:
    """(bytes on disk, entries) under `folders`, links not followed; the walk
    stops past `max_entries`. Counted from allocated blocks: a sparse file
    costs the disk what it holds."""
    total = entries = 0
    stack = [str(f) for f in folders]
    while stack and entries <= max_entries:
        path = stack.pop()
        try:
            with os.scandir(path) as found:
                for entry in found:
                    entries += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total, entries


class DiskWatch:
    """A thread that checks `folders` every `period_s` seconds."""

    def __init__(self, folders, limit_bytes: int, on_exceeded, period_s: float = 1.0,
                 max_entries: int = MAX_ENTRIES):
        self.folders = [f for f in folders if f]
        self.limit_bytes = limit_bytes
        self.max_entries = max_entries
        self.on_exceeded = on_exceeded
        self.period_s = period_s
        self.exceeded: str | None = None  # what was found, once it was
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="judge-disk-watch", daemon=True)

    def start(self) -> "DiskWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            held, entries = usage(self.folders, self.max_entries)
            if held > self.limit_bytes or entries > self.max_entries:
                self.exceeded = (f"{held / 2**30:.1f} GiB in {entries} files" if entries <= self.max_entries
                                 else f"more than {self.max_entries} files")
                self.on_exceeded()
                return
