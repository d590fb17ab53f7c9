"""Triton's autotuner in the worker: a short benchmark on small cases.

@triton.autotune times every config on each new key, by default with 25 ms
of warm-up and 100 ms of timed runs per config: on the H100, ~0.45 s per
small case for a file with four configs, 13 s over matrix multiplication's
cases. On a small correctness case the choice does not matter to the
verdict (the case checks the output of whichever config is chosen, and
every config runs while the autotuner times it), so there the autotuner
gets a few milliseconds per config. The large cases and the timed
performance case, which share the performance key, keep Triton's own
benchmark, so the config that is timed is chosen as Triton would.

The switch is the worker's own: a submission that flips it changes only
its own choice of configs.
"""

from __future__ import annotations

import contextlib

QUICK_WARMUP_MS = 1
QUICK_REP_MS = 5
_quick = [False]


def install() -> bool:
    """Route the autotuner's default benchmark through the switch; False
    where this Triton has no driver benchmarker to replace."""
    try:
        from triton import testing
        from triton.runtime import driver
        full = driver.active.get_benchmarker()
    except Exception:  # noqa: BLE001 - an optimisation only
        return False

    def bench(kernel_call, quantiles=None, **kwargs):
        if _quick[0]:
            return testing.do_bench(kernel_call, warmup=QUICK_WARMUP_MS, rep=QUICK_REP_MS, quantiles=quantiles)
        return full(kernel_call, quantiles=quantiles, **kwargs)

    driver.active.get_benchmarker = lambda: bench
    return True


@contextlib.contextmanager
def quick(on: bool):
    """Short autotuner benchmarks inside the block when `on`."""
    before, _quick[0] = _quick[0], bool(on)
    try:
        yield
    finally:
        _quick[0] = before
