"""Triton's autotuner in the worker: a short benchmark in the cases, Triton's
own when the GPU is the timing's alone.

@triton.autotune times every config on each new key, by default with 25 ms
of warm-up and 100 ms of timed runs per config: on the H100, ~0.45 s per
small case for a file with four configs, 13 s over matrix multiplication's
cases. In a correctness case the choice does not matter to the verdict
(the case checks the output of whichever config is chosen, and every config
runs while the autotuner times it), so there the autotuner gets a few
milliseconds per config. The config that is timed, though, must be the one
Triton would choose, and a choice made while other processes share the GPU
is not: in a batch, lanes run their cases side by side on one GPU (on the
H100 an autotuned file read 14.5 ms in two of four batch gradings and
9.3-9.5 ms in the others, its configs timed beside other lanes' work). So
every case on a GPU gets the short benchmark: each config runs once, timed
by CUDA events (triton.testing.do_bench, even asked for 5 ms, runs each
config at least eight times: ~1.2 s of an autotuned file's three large
matrix products on the H100, on the path of a cold grading). When the timing starts,
alone on the GPU, `retune` forgets every choice made so far: Triton's own
benchmark chooses again in the timing's first calls, which count toward its
warm-up and never toward the latency (judge.casework.Run.retune).

On a new key the autotuner also compiles each config before timing it,
one after another: four configs of a plain matrix product cost ~3 s per
specialization on the H100's host, most of a small case. Here the configs
it is about to time are compiled side by side first, in threads (Triton's
compiler releases the GIL in its passes and in ptxas: four compile in about
the time of the slowest, bench/results/cost_autotune_h100.md); the
autotuner then finds them compiled. The kernels are the ones it would
build, with the same options; a config that fails to compile fails again,
as before, when the autotuner times it.

The switch is the worker's own: a submission that flips it changes only
its own choice of configs, and one that undoes the side-by-side compile
only its own speed.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from concurrent.futures import ThreadPoolExecutor

COMPILE_THREADS = 4  # configs compiled at once per worker (a grading has up to eight workers)
_quick = [False]
_extra_run = [False]  # the next quick benchmark runs its config once more (prune_configs, bench)
_tuned: "weakref.WeakSet" = weakref.WeakSet()  # autotuners that chose a config here (retune forgets it)


def install() -> bool:
    """Route the autotuner's default benchmark through the switch; False
    where this Triton has no driver benchmarker to replace."""
    try:
        from triton.runtime import driver
        full = driver.active.get_benchmarker()
    except Exception:  # noqa: BLE001 - an optimisation only
        return False

    cache = os.environ.get("TRITON_CACHE_DIR")

    def bench(kernel_call, quantiles=None, **kwargs):
        _progress(cache)
        if _quick[0]:
            if _extra_run[0]:
                # An odd number of benchmark runs on each new key: a kernel that
                # works in place without restore_value (a reversal) then shows it,
                # as Triton's own benchmark does by chance on a GPU and the CPU
                # mode does always (one run per config of two had undone itself).
                _extra_run[0] = False
                kernel_call()
            return _one_run(kernel_call, quantiles)
        return full(kernel_call, quantiles=quantiles, **kwargs)

    driver.active.get_benchmarker = lambda: bench
    _compile_configs_side_by_side()
    return True


def _one_run(kernel_call, quantiles=None):
    """A config's time from a single run, in the form do_bench returns
    (one value, or one per quantile asked). Enough to choose a config in a
    correctness case, where the choice does not decide the verdict."""
    from triton.runtime import driver
    device = driver.active.get_device_interface()
    start, end = device.Event(enable_timing=True), device.Event(enable_timing=True)
    start.record()
    kernel_call()
    end.record()
    device.synchronize()
    ms = start.elapsed_time(end)
    return [ms] * len(quantiles) if quantiles else ms


def _progress(cache: str | None) -> None:
    """A sign of progress for the judge's idle limit (judge.progress): the
    Triton cache folder's time, touched before each config is timed. A
    benchmark compiles nothing while it times, so a file with dozens of
    configs on a large case could go past the idle limit honestly (twelve
    small-tile configs, timed with Triton's full benchmark in a case, did
    not, on the H100: 6 s of large cases, no 4 s gap; the cases now time
    them shortly, and Triton's benchmark runs in the timing, which has no
    idle limit). A file that touches the folder itself gains only the
    case's own limit, as before."""
    if cache:
        try:
            os.utime(cache)
        except OSError:
            pass


def _compile_configs_side_by_side() -> None:
    """Have Autotuner.prune_configs, which the autotuner calls on each new
    key just before it times the configs it returns, compile those configs
    side by side."""
    from triton.runtime import autotuner
    original = getattr(autotuner.Autotuner, "prune_configs", None)
    if original is None:  # another Triton: the autotuner compiles them one by one
        return

    def prune_configs(self, kwargs, *rest, **more):
        configs = original(self, kwargs, *rest, **more)
        _tuned.add(self)
        _extra_run[0] = len(configs) % 2 == 0  # one more run on this key: odd in all (bench above)
        precompile(self, configs, kwargs)
        return configs

    autotuner.Autotuner.prune_configs = prune_configs


def precompile(tuner, configs, kwargs: dict) -> None:
    """Compile `configs` of the autotuned kernel `tuner` for the call now
    being tuned (tuner.nargs: its positional arguments), without launching.
    Threads started here, inside solve, run under the rules like any other
    (judge.worker.rules). Errors are left for the autotuner to meet."""
    nargs = getattr(tuner, "nargs", None)
    if len(configs) < 2 or not isinstance(nargs, dict) or not _compiles_directly(tuner.fn):
        return
    args = list(nargs.values())

    def compile_one(config) -> None:
        params = config.all_kwargs()
        if params.keys() & (kwargs.keys() - {"grid", "warmup"}):
            return  # a conflict the autotuner reports itself
        try:
            tuner.fn.run(*args, **{**kwargs, **params, "grid": kwargs.get("grid", (1,)), "warmup": True})
        except Exception:  # noqa: BLE001 - met again, and reported, when the autotuner runs the config
            pass

    with ThreadPoolExecutor(max_workers=min(len(configs), COMPILE_THREADS)) as pool:
        list(pool.map(compile_one, configs))


def _compiles_directly(fn) -> bool:
    """A jit function, maybe under @triton.heuristics: its run(warmup=True)
    compiles and launches nothing (a nested autotuner would time its own
    configs)."""
    from triton.runtime.autotuner import Heuristics
    from triton.runtime.jit import JITFunction
    while isinstance(fn, Heuristics):
        fn = fn.fn
    return isinstance(fn, JITFunction)


@contextlib.contextmanager
def quick(on: bool):
    """Short autotuner benchmarks inside the block when `on`."""
    before, _quick[0] = _quick[0], bool(on)
    try:
        yield
    finally:
        _quick[0] = before


def retune() -> int:
    """Forget the configs every autotuner chose so far (their compiled
    kernels stay), and the timings it may have cached on disk for this
    process, so that the next call times the configs again: called when a
    timing starts, alone on the GPU and with Triton's own benchmark.
    Returns how many autotuners will choose again."""
    count = 0
    for tuner in list(_tuned):
        cache = getattr(tuner, "cache", None)
        if isinstance(cache, dict) and cache:
            cache.clear()
            if getattr(tuner, "cache_results", False):
                tuner.cache_results = False  # its disk entry holds the choice made beside other work
            count += 1
    return count
