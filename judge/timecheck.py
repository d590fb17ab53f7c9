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

The timer's own work (refill with fresh data, poison, L2 flush, output sums,
host launch gaps) is what the judge measures itself, in its own CUDA context
on the same GPU, with the same code (judge.timing) and the same shapes, each
call followed by a synchronisation: an upper bound of what an honest
submission's calls add to the window even when solve synchronises the device.

Rule: the window may exceed what the report accounts for by at most
MARGIN (10%) of the accounted time plus FIXED_SLACK_S; beyond that, the
report under-states the truth by more than 10% and the submission is
`rejected`. A report longer than the window (the old check) is rejected too.
"""

from __future__ import annotations

import time

MARGIN = 0.10  # under-reporting beyond 10% of the accounted time is rejected
FIXED_SLACK_S = 0.03  # messages, the final synchronisation, Python's scheduling
OVER_REPORT = 1.05  # a report may exceed the window by 5% + 50 ms (clock granularity), no more

RULE = "rule: the reported latency must be the latency the judge observes"


def harness_cost(plan: dict, seeds: list[int], reps: int = 60, device: str = "cuda") -> dict:
    """Seconds per timed call of the timer's own work, measured here in the
    judge: judge.timing.measure itself, as the worker runs it (refill with
    fresh data, poison, L2 flush, the operator guard armed around each call,
    output sums, a host wait per group), around a solve that does nothing,
    on buffers of the performance case's shapes, timed by the judge's clock
    from the end of warm-up to the report. Returns {"per_call_s", "sync_s", "reps"}."""
    import torch

    from . import cases as case_data
    from .timing import measure
    from .worker.rules import Guard

    sets = [case_data.make_inputs(plan, seed, device) for seed in seeds]
    outputs = [[torch.empty(spec["shape"], dtype=getattr(torch, spec.get("dtype", "float32")), device=device)
                for spec in plan["outputs"].values()] for _ in seeds]
    poison = [spec.get("role", "out") == "out" for spec in plan["outputs"].values()]

    def refill(r: int, i: int) -> None:
        fresh = case_data.make_inputs(plan, case_data.call_seed(seeds[0], r), device)
        for name, value in fresh.items():
            sets[i][name].copy_(value)

    began = {}
    guard = Guard()
    report = measure([lambda: None] * len(seeds), outputs=outputs, poison=poison, refill=refill,
                     around_call=guard.armed, ready=lambda: began.setdefault("t", time.perf_counter()),
                     min_reps=reps, max_reps=reps, budget_s=60.0, warmup_s=0.05, min_time_s=0.0)
    window = time.perf_counter() - began["t"]
    return {"per_call_s": window / max(1, report["reps"]), "sync_s": 0.0, "reps": report["reps"]}


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
    overhead = reps * float(harness["per_call_s"]) + groups * float(harness.get("sync_s", 0.0))
    accounted = total_s + overhead
    if window_s > accounted * (1 + MARGIN) + FIXED_SLACK_S:
        unexplained = window_s - overhead - FIXED_SLACK_S
        return (f"{RULE}: the worker reported {reps} calls of {total_s / reps * 1000:.3f} ms "
                f"({total_s:.3f} s), but the judge's own clock saw {window_s:.3f} s for them, of which its "
                f"timer's own work accounts for at most {overhead:.3f} s: the calls took about "
                f"{max(unexplained, 0) / reps * 1000:.3f} ms each, {window_s / accounted:.2f}× what the "
                f"report accounts for (the margin is {MARGIN:.0%}); a patched timer under-reports")
    return None
