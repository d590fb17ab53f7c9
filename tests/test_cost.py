"""What makes a grading cheaper without changing what it decides: how the
cases are spread over the workers, the timer's stopping rule, the workers
starting before the judge imports torch, one grading's shared Triton cache."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from judge import cases as case_data
from judge import challenge as challenges
from judge.isolation import Limits, WorkerProcess
from judge.slots import assign, specialization
from judge.timing import median_halfwidth

ROOT = Path(__file__).resolve().parent.parent


def _ordered(name: str):
    ch = challenges.load(name)
    return ch, [(ch.example, "example")] + [(c, "functional") for c in ch.functional]


def test_specialization_follows_tritons_integer_rule():
    plan = {"call": [{"role": "in"}, {"role": "dim", "value": 1}, {"role": "dim", "value": 4096},
                     {"role": "dim", "value": 17}, {"role": "out"}]}
    assert specialization(plan) == ("1", "16", "n")


@pytest.mark.parametrize("slots", [1, 3, 4])
def test_on_a_gpu_each_specialization_compiles_in_one_worker(slots):
    ch, ordered = _ordered("matrix_multiplication")
    run = SimpleNamespace(device="cuda", challenge=ch)
    small = list(range(len(ordered)))
    queues = assign(small, ordered, run, slots, large=2)
    dealt = [i for q in queues for i in q]
    assert sorted(dealt) == small  # every case once
    assert all(list(q) == sorted(q) for q in queues)  # each queue in challenge order
    owner = {}
    for number, queue in enumerate(queues):
        for index in queue:
            key = specialization(case_data.input_plan(ch, ordered[index][0]))
            assert owner.setdefault(key, number) == number, key  # one worker per class
    assert queues[0][0] == 0  # the first slot runs the example before its large cases
    if slots > 1:
        assert all(queues[1:])  # nobody idles from the start


def test_under_the_interpreter_the_cases_are_dealt_in_turn():
    ch, ordered = _ordered("relu")
    run = SimpleNamespace(device="cpu", challenge=ch)
    queues = assign(list(range(len(ordered))), ordered, run, 3, large=0)
    assert sorted(i for q in queues for i in q) == list(range(len(ordered)))
    sizes = Counter(len(q) for q in queues)
    assert max(sizes) - min(sizes) <= 1


def test_median_interval_is_robust_to_a_few_slow_calls():
    steady = [10.0 + 0.01 * (i % 5) for i in range(60)]
    spiky = list(steady)
    spiky[::20] = [500.0] * 3  # three calls 50x slower (a pause of the host, say)
    assert median_halfwidth(steady) <= 0.005 * 10
    assert median_halfwidth(spiky) <= 0.005 * 10  # their rank moves the interval, not their size
    assert median_halfwidth([1.0, 2.0]) == float("inf")  # too few to say


def test_loading_a_challenge_and_the_grader_does_not_import_torch():
    """The workers of a grading start before the judge imports torch (seconds
    each): nothing on the way to their start may import it."""
    code = ("import sys, judge.cli, judge.grader\n"
            "from judge import challenge\n"
            "for name in challenge.available(): challenge.load(name)\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_gradings_workers_share_one_triton_cache(tmp_path):
    cache = tmp_path / "triton"
    cache.mkdir()
    shared = WorkerProcess(ROOT / "submissions" / "correct" / "grid_2d.py", "cpu", Limits(), triton_cache=cache)
    alone = WorkerProcess(ROOT / "submissions" / "correct" / "grid_2d.py", "cpu", Limits())
    try:
        assert shared._env()["TRITON_CACHE_DIR"] == str(cache)
        assert alone._env()["TRITON_CACHE_DIR"] == str(alone.scratch / "triton-cache")
        assert "--device" in shared._worker_command(3) and "cpu" in shared._worker_command(3)
    finally:
        shared.close()
        alone.close()


def test_the_judges_stand_in_submission_runs_anywhere():
    """judge/worker/null_solve.py, timed by the judge to learn its timer's
    cost: any arguments, one launch (here under the interpreter)."""
    code = ("import os; os.environ['TRITON_INTERPRET'] = '1'\n"
            "import importlib.util, torch\n"
            "spec = importlib.util.spec_from_file_location('n', 'judge/worker/null_solve.py')\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "m.solve(torch.zeros(4), torch.zeros(4), 4); m.solve(); print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_first_torch_op_under_the_guard_imports_no_compiler():
    """torch wraps a dispatch mode's handler in a dynamo guard that imports
    torch._dynamo (sympy, ~900 modules, 2-5 s) at the first op under it:
    every worker of a solve that calls torch.zero_ paid that, the timing's
    worker inside its exclusive hold of the GPU."""
    code = ("import sys, torch\n"
            "from judge.worker.rules import Guard\n"
            "with Guard()._make_mode():\n"
            "    torch.zeros(4).zero_()\n"
            "print('torch._dynamo' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_every_gpu_case_cuts_the_autotuner_short_and_the_timing_chooses_again():
    """On a GPU every case, the timed sizes too, cuts the autotuner's
    benchmark short (the config a case checks need not be the best); the
    timing, alone on the GPU, has the autotuners choose again with Triton's
    own benchmark, in a batch's lane as in a lone grading. Under the
    interpreter nothing is timed."""
    from judge.casework import Run
    alone = SimpleNamespace(device="cuda", options=SimpleNamespace(gpu_lock=None))
    shared = SimpleNamespace(device="cuda", options=SimpleNamespace(gpu_lock="/tmp/locks#0"))
    assert Run.retune.fget(alone) and Run.retune.fget(shared)
    assert not Run.retune.fget(SimpleNamespace(device="cpu", options=SimpleNamespace(gpu_lock=None)))


def test_a_timing_has_the_autotuners_choose_again():
    """Cases cut the autotuner's benchmark short and run beside other work;
    the timing, alone on the GPU, has every autotuner that chose a config
    choose again with Triton's own benchmark (its disk cache bypassed)."""
    from judge.worker import autotune

    class Tuner:  # what retune reads of triton.runtime.autotuner.Autotuner
        def __init__(self, cache_results):
            self.cache, self.cache_results = {(64, 64, 64, "torch.float32"): "config"}, cache_results

    tuners = [Tuner(True), Tuner(False)]
    for tuner in tuners:
        autotune._tuned.add(tuner)
    try:
        assert autotune.retune() == 2
        assert all(t.cache == {} and t.cache_results is False for t in tuners)
        assert autotune.retune() == 0  # nothing chosen since
    finally:
        for tuner in tuners:
            autotune._tuned.discard(tuner)


def test_the_two_stand_ins_are_costed_apart():
    """The stand-in that synchronises after its launch (a solve waiting for
    its own kernels) has its own cost, cached apart from the plain one."""
    from judge import timecheck
    plan = {"call": []}
    plain = timecheck._key(plan, 3, "cuda")
    synced = timecheck._key(plan, 3, "cuda", stand_in=timecheck.NULL_SOLVE_SYNCED)
    assert plain != synced and plain == timecheck._key(plan, 3, "cuda", stand_in=timecheck.NULL_SOLVE)
    assert timecheck.NULL_SOLVE_SYNCED.is_file()
    assert "torch.cuda.synchronize()" in timecheck.NULL_SOLVE_SYNCED.read_text()


@pytest.mark.gpu
def test_first_calls_that_kept_the_gpu_busy_count_toward_the_warm_up():
    """An autotuner choosing again in the timing's first calls keeps the GPU
    busy as warm-up would: given when they began, the timer's own warm-up
    runs only its one round once warmup_s has passed since then, and the
    full warm-up otherwise."""
    import time

    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from judge import timing
    x = torch.zeros(1 << 20, device="cuda")
    calls = [lambda: x.add_(1.0), lambda: x.add_(2.0)]
    settled = timing.measure(calls, warm_since=time.monotonic() - 1.0, warmup_s=0.5, budget_s=0.5)
    fresh = timing.measure(calls, warmup_s=0.5, budget_s=0.5)
    assert settled["warmup_calls"] == len(calls)
    assert fresh["warmup_calls"] > 10 * len(calls) and fresh["warmup_wall_s"] >= 0.5


def test_the_head_start_outlasts_the_host_path_per_call():
    """The least of the timer's head starts that outlasts 1.5× the host's
    median time to issue a call; the longest where none does; never less
    than the one a warm-up round already had."""
    from judge import timing
    assert timing.HEAD_STARTS_S[0] == timing.HEAD_START_S
    assert timing.head_start_for([]) == 0.002
    assert timing.head_start_for([0.0006, 0.0011, 0.0008]) == 0.002
    assert timing.head_start_for([0.0021, 0.0019, 0.0025]) == 0.004  # a two-kernel softmax's 2.1 ms
    assert timing.head_start_for([0.004, 0.005, 0.0042]) == 0.008
    assert timing.head_start_for([0.05]) == 0.008  # a longer path is timed, as before
    assert timing.head_start_for([0.0006], at_least=0.004) == 0.004


def test_the_stand_in_is_timed_at_the_head_start_the_calls_had():
    """The clock check credits no more head start than the judge's own
    stand-in spent: it is timed at the worker's reported head start where
    that is one the timer gives, else at the shortest; each its own cache
    entry."""
    from judge import timecheck, timed
    assert timed.stand_in_head_start({"head_start_s": 0.004}) == 0.004
    assert timed.stand_in_head_start({"head_start_s": 0.008}) == 0.008
    for other in (0.003, 0.0, None, True, "0.004", 1.0):
        assert timed.stand_in_head_start({"head_start_s": other}) == 0.002
    plan = {"call": [], "inputs": []}
    default = timecheck._key(plan, 3, "cuda")
    assert default == timecheck._key(plan, 3, "cuda", head_start_s=0.002)
    assert default != timecheck._key(plan, 3, "cuda", head_start_s=0.004)


@pytest.mark.gpu
def test_a_long_host_path_per_call_gets_a_longer_head_start():
    """A call whose host path is 3 ms (as a solve with scratch allocations
    and two launches under the guard took on an H100) gets the 8 ms head
    start, and its latency is its kernel's, not the host's."""
    import time

    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from judge import timing
    x = torch.zeros(1 << 16, device="cuda")

    def slow_host_call():
        time.sleep(0.003)
        x.add_(1.0)

    quick = timing.measure([lambda: x.add_(1.0)], budget_s=0.5)
    slow = timing.measure([slow_host_call], budget_s=1.0)
    assert quick["head_start_s"] == timing.HEAD_START_S
    assert slow["head_start_s"] == 0.008
    assert slow["median_ms"] < 0.2 and slow["median_ms"] < 3 * quick["median_ms"] + 0.02, (slow, quick)
