"""Whose kernel a launch runs: the file's own, and nobody else's.

LeetGPU asks for one self-contained file whose own kernels do the work. A
file that launched a Triton kernel shipped inside torch (torch._native's
batched outer product, made to transpose a matrix) or the judge's reference
matrix product, loaded from its path, wrote no kernel and was accepted.

So a launch in the worker (judge.worker.launches) runs a kernel whose
Python function comes from the submission's file, from a file the worker
wrote itself (in its scratch folder: a template filled in and imported),
or from no file at all (source the file built and compiled itself: its own
work, as pasted code is). A kernel defined in any other file on disk (a
library's, the judge's)
is refused, unless the worker's own code launches it (the timer's check
sums): told by the identity of the judge function that launches, never by
a file name, since a copy of that module loaded from its path is the
file's.
"""

from __future__ import annotations

import os
import sys
import types

from judge.worker.refusals import named_builtins


def checker(submission: str, launchers: frozenset):
    """check(kernel) -> None for a kernel that may run, else the rule it
    breaks. `launchers`: code objects of the worker's own functions that
    launch its own kernels (judge.check_sums.sums)."""
    # Builtins bound here, for the launch check: a file can swap builtins' own at any moment.
    (frozenset, getattr, str, type,) = named_builtins('frozenset getattr str type')
    own = os.path.abspath(submission)
    scratch = os.path.dirname(own) + os.sep  # the worker's own folder (its TMPDIR is below it)
    isfile, abspath, getframe = os.path.isfile, os.path.abspath, sys._getframe

    def check(kernel) -> str | None:
        fn = getattr(kernel, "fn", None)
        if type(fn) is not types.FunctionType:  # Triton wraps functions; nothing to attribute
            return None
        filename = fn.__code__.co_filename
        if not isfile(filename) or abspath(filename).startswith(scratch):
            return None
        frame = getframe(2)  # past this check and the launch wrapper
        while frame is not None:
            code = frame.f_code
            if code in launchers:
                return None
            if abspath(code.co_filename) == own:
                break
            frame = frame.f_back
        return (f"rule: only the file's own kernels: {fn.__qualname__} is defined in "
                f"{_short(filename)}, not in the submission (write the kernel in the file)")

    return check


def _short(path: str) -> str:
    """The path from its package folder on (site-packages/torch/... -> torch/...)."""
    parts = path.replace(os.sep, "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[parts.index(marker) + 1:])
    return "/".join(parts[-3:])
