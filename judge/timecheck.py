"""The judge's own check of a latency the worker reports (issue 9, item 1).

The worker's timer runs in the submission's process, so a submission can
make it report anything (a patched torch.cuda.Event.elapsed_time, a patched
judge.timing). The judge holds a clock the worker cannot touch: with the
three-step timing request (WorkerProcess.request_timed) its clock starts
when it sends the timed calls' seed (no timed call can start before: their
inputs derive from it and from the judge's secret) and stops when the
report arrives (every timed call's check sum is in it, and each is checked,
so every call really ran, on fresh data, before the report). The GPU cannot
run the submission's kernels faster than they run, so

    window  ≈  reported total  +  the timer's own work per call × calls  +  a few host waits

The timer's own work (refill with fresh data, poison, L2 flush, the head
start of a short kernel's calls, output sums, host launch gaps, and arming
the rules around each call, which the worker's
audit hook makes dearer than it would be in the judge) is what the judge
measures itself: it times its own stand-in submission (one empty kernel
launch) in a fresh worker, by the same request, on the same GPU and shapes.
Only judge code runs there, so that worker's report is trusted.

A solve that synchronises (torch.cuda.synchronize() after its launches)
keeps the host from queueing ahead, so the timer's host work runs in series
with its calls; a report that does not fit the first stand-in is held
against a second one that synchronises the same way (NULL_SOLVE_SYNCED,
timed only then), and refused only if it fits neither.

Rule: the window may exceed what the report accounts for by at most
MARGIN (10%) of the accounted time plus FIXED_SLACK_S; beyond that, the
report under-states the truth by more than 10% and the submission is
`rejected`. A report longer than the window (the old check) is rejected too.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

MARGIN = 0.10  # under-reporting beyond 10% of the accounted time is rejected
FIXED_SLACK_S = 0.03  # messages, the final synchronisation, Python's scheduling
OVER_REPORT = 1.05  # a report may exceed the window by 5% + 50 ms (clock granularity), no more

RULE = "rule: the reported latency must be the latency the judge observes"
SUMMARY_RULE = "rule: the timing report must be the summary of its own call times"
SUMMARY_KEYS = ("median_ms", "mean_ms", "min_ms", "reps")


NULL_SOLVE = Path(__file__).resolve().parent / "worker" / "null_solve.py"
# A solve that waits for its own kernels (torch.cuda.synchronize()) keeps the
# host from queueing the timer's next call ahead: the timer's host work then
# runs in series with every call, which the first stand-in does not show
# (an honest short kernel that synchronised was refused 2 times in 3 on the
# H100). Timed only when a report does not fit the first: see timed.py.
NULL_SOLVE_SYNCED = Path(__file__).resolve().parent / "worker" / "null_solve_synced.py"
HARNESS_REPS = 60
CACHE_S = 600.0  # in this process; then the disk's answer, or a new measurement
DISK_CACHE_S = 3600.0  # across processes (judge.harness_store), where workers cannot write it
_cache: dict[str, tuple[float, dict]] = {}


def harness_cost(plan: dict, seeds: list[int], reps: int = HARNESS_REPS, device: str = "cuda",
                 limits=None, worker=None, stand_in: Path = NULL_SOLVE, fresh: bool = False,
                 head_start_s: float | None = None) -> dict:
    """Seconds per timed call of the timer's own work, as a worker does it:
    the judge's stand-in submission (judge/worker/null_solve.py: one empty
    kernel launch) timed by the same three-step request, in a fresh worker
    with the same rules, hooks and audit hook, on buffers of the same plan,
    `reps` calls. Only judge code runs in that worker, so its report is
    trusted: per call, the judge's window less the events' time. Cached per
    plan for CACHE_S in this process, and DISK_CACHE_S on disk where the
    sandbox keeps workers from writing it (judge.harness_store). `worker`:
    a started, not yet loaded WorkerProcess on `stand_in` (HarnessWorker
    starts one early on NULL_SOLVE; NULL_SOLVE_SYNCED is the stand-in that
    synchronises after its launch). `fresh`: measured now, whatever is cached.
    `head_start_s`: the head start the stand-in's calls get, one of
    judge.timing.HEAD_STARTS_S: the submission's, so that the check credits
    no more than the judge's own worker spent (by default the shortest).
    Returns {"per_call_s", "sync_s", "reps", "head_start_s"}."""
    from . import harness_store
    from .isolation import Limits, WorkerProcess
    from .timing import HEAD_START_S
    head_start_s = HEAD_START_S if head_start_s is None else head_start_s
    key = _key(plan, len(seeds), device, reps, stand_in, head_start_s)
    known = None if fresh else _known(key, device)
    if known is not None:
        if worker is not None:
            worker.close()
        return known
    own = worker is None
    worker = worker or WorkerProcess(stand_in, device, limits or Limits())
    try:
        if own:
            worker.start()
        reply, _ = worker.request({"op": "load", "path": "submission.py", "device": device, "arity": 0}, 300,
                                  max_blob_bytes=0)
        if reply.get("status") != "ok":
            raise RuntimeError(f"the judge's stand-in submission did not load: {reply}")
        options = {"min_reps": reps, "max_reps": reps, "budget_s": 60.0, "warmup_s": 0.05, "min_time_s": 0.0,
                   "head_start_s": head_start_s}
        reply, _, window = worker.request_timed({"op": "time", "plan": plan, "seeds": seeds, "options": options},
                                                7, 300, max_blob_bytes=0, keep_buffers=False)
        if reply.get("status") != "ok" or window is None:
            raise RuntimeError(f"the judge's stand-in submission could not be timed: {reply}")
        timed = reply["timing"]
        events_s = float(timed["mean_ms"]) * int(timed["reps"]) / 1000
        cost = {"per_call_s": max(0.0, window - events_s) / int(timed["reps"]), "sync_s": 0.0,
                "reps": int(timed["reps"]), "head_start_s": float(timed.get("head_start_s") or 0.0)}
    finally:
        worker.close()
    _cache[key] = (time.monotonic(), cost)
    harness_store.put(key, device, cost)
    return cost


def _key(plan: dict, sets: int, device: str, reps: int = HARNESS_REPS, stand_in: Path = NULL_SOLVE,
         head_start_s: float | None = None) -> str:
    """Per plan, per stand-in, per head start and per timing method: the timer's own work is what is measured."""
    import json

    from .timing import HEAD_START_S, METHOD
    extra = ([stand_in.name] if stand_in != NULL_SOLVE else []) + (
        [f"head {head_start_s}"] if head_start_s not in (None, HEAD_START_S) else [])
    return json.dumps([device, plan, sets, reps, METHOD] + extra, sort_keys=True, default=str)


def _known(key: str, device: str) -> dict | None:
    """A cost measured lately: in this process, else on disk."""
    from . import harness_store
    hit = _cache.get(key)
    if hit and time.monotonic() - hit[0] < CACHE_S:
        return hit[1]
    stored = harness_store.get(key, device, DISK_CACHE_S)
    if stored is not None:
        _cache[key] = (time.monotonic(), stored)
    return stored


def is_cached(plan: dict, sets: int, device: str = "cuda") -> bool:
    return _known(_key(plan, sets, device), device) is not None


class HarnessWorker:
    """A worker for harness_cost started ahead (its Python and torch import
    overlap with the grading), unless this process has the plan's cost
    cached already. Closed when not used."""

    def __init__(self, device: str, limits=None):
        from .isolation import Limits, WorkerProcess
        self.worker = WorkerProcess(NULL_SOLVE, device, limits or Limits())
        self.worker.start()

    def cost(self, plan: dict, seeds: list[int], device: str = "cuda", limits=None,
             head_start_s: float | None = None) -> dict:
        worker, self.worker = self.worker, None
        return harness_cost(plan, seeds, device=device, limits=limits, worker=worker, head_start_s=head_start_s)

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None


def recount(reported: dict) -> str | None:
    """The worker's summary (median, mean, min, calls) computed again here
    from its per-call times (`times_ms`), and written over its own; None,
    or the message of a `rejected` verdict when they disagree. The worker
    summarises with Python's statistics module, which the file may patch
    in that process (its median, the score, divided by 1000 with the mean
    left true passed the clock, which checks the total): the judge's
    figures are its own, and a worker whose figures differ from what its
    own times give had its timer changed. What the times themselves claim
    is the clock's to check (check())."""
    from .timing import summarise
    times = reported.get("times_ms")
    if not isinstance(times, list) or not times or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t >= 0 for t in times):
        return f"{SUMMARY_RULE}: the worker's timing report lists no valid per-call times"
    own = summarise([float(t) for t in times])
    for key in SUMMARY_KEYS:
        claimed = reported.get(key)
        if (not isinstance(claimed, (int, float)) or isinstance(claimed, bool)
                or not math.isclose(float(claimed), float(own[key]), rel_tol=1e-9, abs_tol=1e-12)):
            return (f"{SUMMARY_RULE}: the worker reported {key} = {claimed!r}, but its own {len(times)} call times "
                    f"give {own[key]!r}: its timer's summary was changed")
    reported.update(own)
    return None


def check(reported: dict, window_s: float | None, harness: dict) -> str | None:
    """None when the report fits the judge's clock; else the message of a
    `rejected` verdict. `reported`: the worker's timing dict (reps, mean_ms,
    groups); `window_s`: the judge's seconds from go to report
    (WorkerProcess.request_timed); `harness`: harness_cost()."""
    if window_s is None:
        return None
    try:
        reps = int(reported["reps"])
        total_s = float(reported["mean_ms"]) * reps / 1000
        groups = max(1, int(reported.get("groups") or 1))
    except (KeyError, TypeError, ValueError):
        return f"{RULE}: the worker's timing report is malformed"
    if reps <= 0 or not total_s > 0:
        return f"{RULE}: the worker reported no timed time ({reps} calls)"
    if total_s > window_s * OVER_REPORT + 0.05:
        return (f"{RULE}: the reported timing ({reps} calls, {total_s:.3f} s in all) does not fit in the "
                f"{window_s:.3f} s the judge's clock saw")
    # The stand-in's calls are short, so they had the timer's head start; a
    # long kernel's calls have none (judge.timing). A claimed head start is
    # capped at the stand-in's, and credited only to calls reported shorter
    # than where the worker stops giving one (with room for the clocks to
    # move between warm-up and timing): a long kernel claiming one to hide
    # time would have to report itself short, which the window then betrays.
    from .timing import GPU_BOUND_S
    head = float(harness.get("head_start_s", 0.0))
    try:
        claimed = min(max(float(reported.get("head_start_s") or 0.0), 0.0), head)
    except (TypeError, ValueError):
        claimed = 0.0
    if total_s / reps >= 1.5 * GPU_BOUND_S:
        claimed = 0.0
    per_call = max(0.0, float(harness["per_call_s"]) - head + claimed)
    overhead = reps * per_call + groups * float(harness.get("sync_s", 0.0))
    accounted = total_s + overhead
    if window_s > accounted * (1 + MARGIN) + FIXED_SLACK_S:
        unexplained = window_s - overhead - FIXED_SLACK_S
        return (f"{RULE}: the worker reported {reps} calls of {total_s / reps * 1000:.3f} ms "
                f"({total_s:.3f} s), but the judge's own clock saw {window_s:.3f} s for them, of which its "
                f"timer's own work accounts for at most {overhead:.3f} s: the calls took about "
                f"{max(unexplained, 0) / reps * 1000:.3f} ms each, {window_s / accounted:.2f}× what the "
                f"report accounts for (the margin is {MARGIN:.0%}); a patched timer under-reports")
    return None
