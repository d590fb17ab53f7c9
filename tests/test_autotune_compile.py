"""The worker compiles an autotuned kernel's configs side by side before the
autotuner times them (judge.worker.autotune.precompile). Here with a real
Autotuner over a real JITFunction whose compile-and-launch entry is replaced
by a recorder (no GPU needed); tests/test_trust.py and bench/gpu_examples.py
grade autotuned files on the GPU."""

from __future__ import annotations

import threading

import pytest
from triton import Config
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction

from judge.worker import autotune


def _kernel(x_ptr, n, BLOCK: int):
    pass


def _tuner(fn, configs):
    tuner = Autotuner(fn, ["x_ptr", "n"], configs, key=["n"], reset_to_zero=None, restore_value=None)
    tuner.nargs = {"x_ptr": "X", "n": 100}  # as Autotuner.run sets them before pruning
    return tuner


def _recording_jit(calls: list, barrier: threading.Barrier | None = None, fail: set = frozenset()):
    fn = JITFunction(_kernel)

    def run(*args, **kwargs):
        calls.append((args, kwargs, threading.get_ident()))
        if barrier is not None:
            barrier.wait()  # every config's compile in flight at once, or this times out
        if kwargs["BLOCK"] in fail:
            raise RuntimeError("does not compile")

    fn.run = run
    return fn


CONFIGS = [Config({"BLOCK": b}, num_warps=w) for b, w in ((16, 1), (32, 2), (64, 4))]


def test_each_config_is_compiled_once_without_a_launch_side_by_side():
    calls = []
    fn = _recording_jit(calls, threading.Barrier(len(CONFIGS), timeout=10))
    autotune.precompile(_tuner(fn, CONFIGS), CONFIGS, {"grid": (4,), "warmup": False})
    assert sorted(kw["BLOCK"] for _, kw, _ in calls) == [16, 32, 64]
    for args, kwargs, thread in calls:
        assert args == ("X", 100)
        assert kwargs["warmup"] is True  # compiled, never launched
        assert kwargs["grid"] == (4,)
        assert kwargs["num_warps"] == {16: 1, 32: 2, 64: 4}[kwargs["BLOCK"]]
        assert thread != threading.get_ident()
    assert len({thread for _, _, thread in calls}) == len(CONFIGS)


def test_a_config_that_fails_is_left_to_the_autotuner():
    calls = []
    fn = _recording_jit(calls, fail={32})
    autotune.precompile(_tuner(fn, CONFIGS), CONFIGS, {"grid": (1,), "warmup": False})  # raises nothing
    assert len(calls) == 3


def test_nothing_is_compiled_ahead_where_the_autotuner_would_not_compile_directly():
    calls = []
    fn = _recording_jit(calls)
    # one config: nothing to overlap
    autotune.precompile(_tuner(fn, CONFIGS[:1]), CONFIGS[:1], {"grid": (1,)})
    # a meta-parameter given twice: the autotuner reports the conflict itself
    autotune.precompile(_tuner(fn, CONFIGS), CONFIGS, {"grid": (1,), "BLOCK": 8})
    # an autotuner over an autotuner: run(warmup=True) would time the inner one's configs
    autotune.precompile(_tuner(_tuner(fn, CONFIGS), CONFIGS), CONFIGS, {"grid": (1,)})
    assert calls == []


def test_heuristics_over_the_jit_function_are_compiled_through():
    calls = []
    fn = _recording_jit(calls)
    tuner = _tuner(Heuristics(fn, ["x_ptr", "n"], {"EVEN": lambda nargs: nargs["n"] % 2 == 0}), CONFIGS)
    autotune.precompile(tuner, CONFIGS, {"grid": (1,), "warmup": False})
    assert sorted(kw["BLOCK"] for _, kw, _ in calls) == [16, 32, 64]
    assert all(kw["EVEN"] is True for _, kw, _ in calls)


def test_the_autotuner_compiles_what_it_pruned_before_timing(monkeypatch):
    monkeypatch.setattr(Autotuner, "prune_configs", Autotuner.prune_configs)  # restored afterwards
    autotune._compile_configs_side_by_side()
    calls = []
    fn = _recording_jit(calls)
    tuner = Autotuner(fn, ["x_ptr", "n"], CONFIGS, key=["n"], reset_to_zero=None, restore_value=None,
                      prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs[1:]})
    tuner.nargs = {"x_ptr": "X", "n": 100}
    kept = tuner.prune_configs({"grid": (1,), "warmup": False})
    assert [c.kwargs["BLOCK"] for c in kept] == [32, 64]
    assert sorted(kw["BLOCK"] for _, kw, _ in calls) == [32, 64]


@pytest.mark.parametrize("configs", [[], CONFIGS])
def test_without_arguments_bound_nothing_is_compiled(configs):
    calls = []
    tuner = _tuner(_recording_jit(calls), CONFIGS)
    tuner.nargs = None  # Autotuner.run has not bound the call
    autotune.precompile(tuner, configs, {"grid": (1,)})
    assert calls == []


class _FakeDevice:
    """What _one_run reads of Triton's device interface: events that say
    how many calls ran between them."""

    def __init__(self, ran: list):
        self.ran = ran

    def Event(self, enable_timing):  # noqa: N802 - the device interface's name
        ran = self.ran

        class Event:
            def record(self):
                self.at = len(ran)

            def elapsed_time(self, other):
                return 2.5 * (other.at - self.at)
        return Event()

    def synchronize(self):
        pass


class _FakeDriver:
    def __init__(self, ran: list):
        self.device = _FakeDevice(ran)

    def get_device_interface(self):
        return self.device


def test_a_case_runs_each_config_once_to_choose(monkeypatch):
    """In a correctness case a config is run once and timed by that run
    (triton.testing.do_bench would run it at least eight times)."""
    from triton.runtime import driver
    ran = []
    monkeypatch.setattr(driver, "_active", _FakeDriver(ran))
    assert autotune._one_run(lambda: ran.append(1), quantiles=(0.5, 0.2, 0.8)) == [2.5, 2.5, 2.5]
    assert autotune._one_run(lambda: ran.append(1)) == 2.5
    assert len(ran) == 2
