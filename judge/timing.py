"""Latency on the GPU: one method, used for submissions (in the worker) and
for the baselines (in the judge).

* Warm-up outside the timed region: each input set is run before timing
  starts, so JIT compilation and @triton.autotune runs are not counted.
* Before every timed call, a write of twice the device's L2 (read from the
  device), so no call finds its operands in cache.
* CUDA events around each call; the end event waits for every stream the
  call launched on, so work sent to a side stream is counted.
* Three sets of buffers, rotated, refilled with fresh data before every
  timed call (`refill`, outside the timed region), so no call can reuse an
  earlier answer whether it caches by pointer or by content; each output is
  poisoned before its call and summed after it, so the judge can check every
  single timed call against the sum the fresh data implies.
* Adaptive repeats: at least `min_reps`, then until the standard error of
  the mean is within `target_sem` of the median or `budget_s` is spent.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from typing import Callable, Sequence

POISON = float("nan")


def l2_flush_buffer():
    import torch
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = getattr(props, "L2_cache_size", 0) or (50 << 20)
    return torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")


def summarise(times: list[float]) -> dict:
    median = statistics.median(times)
    sem = statistics.stdev(times) / math.sqrt(len(times)) if len(times) > 1 else 0.0
    return {"median_ms": median, "mean_ms": statistics.fmean(times), "min_ms": min(times),
            "sem_ms": sem, "reps": len(times)}


def measure(calls: Sequence[Callable[[], None]], outputs: Sequence | None = None,
            refill: Callable[[int, int], None] | None = None,
            streams: Callable[[], set] = set, judge_side: Callable = contextlib.nullcontext,
            min_reps: int = 10, max_reps: int = 500, budget_s: float = 3.0,
            target_sem: float = 0.005) -> dict:
    """Time `calls` (one per buffer set, rotated). `outputs[i]` is the tensor
    call i writes: poisoned before and summed after each timed call;
    `refill(r, i)` puts timed call r's fresh inputs into set i.
    `streams()` returns (and forgets) the streams launched on since it was
    last asked; `judge_side()` brackets the timer's own tensor work (exempt
    from the worker's operator guard)."""
    import torch

    flush = l2_flush_buffer()
    for call in calls:  # warm-up: compilation, autotuning, first-touch
        call()
    torch.cuda.synchronize()

    times: list[float] = []
    checks: list[list[float]] = []
    last_call: dict[int, int] = {}
    started = time.monotonic()
    while len(times) < max_reps:
        r = len(times)
        i = r % len(calls)
        with judge_side():
            if refill is not None:
                refill(r, i)
                last_call[i] = r
            if outputs is not None:
                outputs[i].fill_(POISON)
            flush.zero_()
        here = torch.cuda.current_stream()
        streams()  # forget the streams of earlier calls
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        calls[i]()
        for stream in streams():
            if stream != here:
                here.wait_stream(stream)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
        if outputs is not None:
            with judge_side():
                checks.append([r, i, float(outputs[i].double().sum())])
        if len(times) >= max(min_reps, len(calls)):
            stats = summarise(times)
            if stats["sem_ms"] <= target_sem * stats["median_ms"] or time.monotonic() - started > budget_s:
                break
    return dict(summarise(times), l2_flush_bytes=flush.numel() * 4, sets=len(calls), checks=checks,
                last_call=[last_call.get(i) for i in range(len(calls))])
