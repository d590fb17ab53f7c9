"""Latency of solve on the GPU. Runs inside the worker.

Each timed call is preceded by a write of twice the L2 size, so no call
finds its inputs in cache, and is bracketed by CUDA events; the device is
synchronised after every call so that work left on other streams finishes
before the next one starts. Repeats continue until the standard error of the
mean is within `target_sem` of the median, or the time budget is spent.
"""

from __future__ import annotations

import math
import statistics
import time


def measure(fn, min_reps: int = 10, max_reps: int = 200, budget_s: float = 2.0,
            target_sem: float = 0.005, warmup_reps: int = 2) -> dict:
    import torch

    device = torch.cuda.current_device()
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20)
    flush = torch.empty(max(2 * l2, 1 << 20) // 4, dtype=torch.int32, device="cuda")

    for _ in range(warmup_reps):
        fn()
    torch.cuda.synchronize()

    times: list[float] = []
    started = time.monotonic()
    while len(times) < max_reps:
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
        if len(times) >= min_reps:
            median = statistics.median(times)
            sem = statistics.stdev(times) / math.sqrt(len(times))
            if sem <= target_sem * median or time.monotonic() - started > budget_s:
                break
    median = statistics.median(times)
    return {
        "median_ms": median,
        "mean_ms": statistics.fmean(times),
        "min_ms": min(times),
        "sem_ms": statistics.stdev(times) / math.sqrt(len(times)) if len(times) > 1 else 0.0,
        "reps": len(times),
        "l2_flush_bytes": flush.numel() * 4,
    }
