"""CPU mode: how Triton's interpreter runs a launch's programs.

It runs them one by one: a kernel with one program per output element
(LeetGPU's starter shape) needs minutes for a case the H100 runs in
milliseconds. That is the interpreter's speed, not the submission's: each
launch is watched, and when its first programs show it cannot finish
within the case's interpreter budget it is stopped and the case reported
as not run on CPU, with the estimate (never a time limit verdict). A kernel
that never finishes its first program still times out, as it would on a
GPU. A grid past CUDA's limits is refused as the GPU's launcher refuses it,
and the programs run from the last id to the first (last_program_first).
"""

from __future__ import annotations

import time

class InterpreterTooSlow(BaseException):
    """Stops a launch the interpreter cannot finish in time (a BaseException,
    so that Triton's own `except Exception` does not turn it into a
    compilation error)."""


# The budget of the case being run, and what was found: kept in a closure's
# reach rather than on a class, set by the request loop.
_watch = {"total": 1, "done": 0, "started": 0.0}
MIN_PROGRAMS = 3  # programs timed before estimating a launch
MAX_GRID = ((1 << 31) - 1, 65535, 65535)  # CUDA's grid limits, x, y, z


class GridRefused(RuntimeError):
    """A grid CUDA's launch refuses: raised before any program runs, and,
    as on a GPU, the next launch may still run."""


# The case's deadline and what the watch found are kept in the audit hook
# (judge.worker.audit.memo): in this module's dict a file set them itself,
# and had any case it liked reported as not run.
DEADLINE, FOUND, ESTIMATE = ("interpreter deadline",), ("interpreter too slow",), ("interpreter estimate",)


LAUNCH_SECONDS = ("interpreter launch seconds",)  # (kernel, grid) -> what its last launch took, this case
# Programs the case's launches asked for, each launch's whole grid: a file
# that stalled the cases it could not do with idle grids of 2**31 programs,
# or with idle launches in a loop, asked for far more than the case's work
# (judge.casework.Run.stalled).
PROGRAMS = ("interpreter programs",)


# Every clock reading below is of time.monotonic as it was before the file
# was imported, bound as a default (sealed with its function): the watch
# read time.monotonic at each call, and a file that set it 10^6 s ahead in
# solve had its large cases stopped as too slow (not run, so left out of
# the verdict: tests/fixtures/clock_skips_large_cases.py).


def set_budget(seconds: float, _now=time.monotonic) -> None:
    from judge.worker import audit
    audit.memo(DEADLINE, _now() + seconds)
    audit.memo(FOUND, None)
    audit.memo(LAUNCH_SECONDS, ())
    audit.memo(PROGRAMS, 0)


def before_launch(key: tuple, _now=time.monotonic) -> None:
    """Stop a launch that took so long last time that it cannot end by the
    case's deadline. The watch between programs never meets a launch of one
    long program (an outer-product loop of 8191 steps: ~10 s a launch here,
    milliseconds on a GPU): each trial ran whole, and the case's time limit
    ended it with a verdict. A launch that never ends still does."""
    from judge.worker import audit
    took = dict(audit.memo(LAUNCH_SECONDS) or ()).get(key)
    deadline = audit.memo(DEADLINE)
    if took is None or deadline is None or _now() + took <= deadline:
        return
    found = (f"not run on CPU: one launch of this kernel took Triton's interpreter {took:.1f} s (a GPU runs its "
             "programs in parallel, in milliseconds), and the case's other launches would pass its interpreter "
             "budget. Grade on a GPU, or split the work over more programs to check this case on CPU.")
    audit.memo(FOUND, found)
    audit.memo(ESTIMATE, took)
    raise InterpreterTooSlow(found)


def after_launch(key: tuple, seconds: float) -> None:
    from judge.worker import audit
    audit.memo(LAUNCH_SECONDS, tuple({**dict(audit.memo(LAUNCH_SECONDS) or ()), key: seconds}.items()))


def too_slow() -> tuple[str, float, int] | None:
    """Why the last call was stopped, the seconds its launch would have
    needed and the programs the case's launches asked for, once (then forgotten)."""
    from judge.worker import audit
    found, estimate, programs = audit.memo(FOUND), audit.memo(ESTIMATE), audit.memo(PROGRAMS)
    audit.memo(FOUND, None)
    return (found, float(estimate or 0.0), int(programs or 0)) if found else None


def watch(builder) -> None:
    original_dim, original_idx = builder.set_grid_dim, builder.set_grid_idx

    def set_grid_dim(self, nx, ny, nz, _now=time.monotonic):
        if nx > MAX_GRID[0] or ny > MAX_GRID[1] or nz > MAX_GRID[2]:
            # What CUDA's launch refuses, and Triton's launcher reports.
            raise GridRefused("Triton Error [CUDA]: invalid argument "
                               f"(grid ({nx}, {ny}, {nz}): a GPU allows at most {MAX_GRID})")
        _watch.update(total=max(1, nx * ny * nz), done=0, started=_now())
        from judge.worker import audit
        audit.memo(PROGRAMS, int(audit.memo(PROGRAMS) or 0) + _watch["total"])
        return original_dim(self, nx, ny, nz)

    def set_grid_idx(self, x, y, z, _now=time.monotonic):
        from judge.worker import audit
        done = _watch["done"]
        # A grid of a few long programs is estimated after all but its last.
        enough = min(MIN_PROGRAMS, max(1, _watch["total"] - 1))
        deadline = audit.memo(DEADLINE) if done >= enough else None
        if deadline is not None:
            elapsed = _now() - _watch["started"]
            remaining = _watch["total"] - done
            needed = elapsed / done * remaining
            if _now() + needed > deadline:
                found = (
                    f"not run on CPU: this launch has {_watch['total']:,} programs, and Triton's interpreter, "
                    f"which runs them one by one at ~{1000 * elapsed / done:.1f} ms each, would need "
                    f"~{elapsed / done * _watch['total']:.0f} s for it; a GPU runs them in parallel. "
                    "Grade on a GPU, or use larger blocks (fewer programs) to check this case on CPU.")
                audit.memo(FOUND, found)
                audit.memo(ESTIMATE, elapsed / done * _watch["total"])
                raise InterpreterTooSlow(found)
        _watch["done"] = done + 1
        return original_idx(self, x, y, z)

    builder.set_grid_dim = set_grid_dim
    builder.set_grid_idx = set_grid_idx


def last_program_first(builder) -> None:
    """A launch's programs run from the last id to the first. A GPU runs
    them in no order a kernel may count on; the interpreter ran them in
    order, so a kernel that took its last program for the last to run (a
    sum the last id reads back from the others' atomics, with no ticket
    saying they are done) or program 0 for the first (it zeroes what the
    others then add to) came out right here and may not on a GPU. Run in
    reverse, such a kernel reads what is not there yet; one whose programs
    truly do not depend on each other's order is unaffected."""
    set_dim, set_idx = builder.set_grid_dim, builder.set_grid_idx
    dims = [1, 1, 1]

    def set_grid_dim(self, nx, ny, nz):
        dims[:] = [int(nx), int(ny), int(nz)]
        return set_dim(self, nx, ny, nz)

    def set_grid_idx(self, x, y, z):
        return set_idx(self, dims[0] - 1 - int(x), dims[1] - 1 - int(y), dims[2] - 1 - int(z))

    builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx
