"""Issue 9: processes that outlive their worker, the audit hook's blame,
and the trusted check of a reported latency."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from judge import reaper, timecheck
from judge.isolation import Limits, Sandbox, WorkerProcess, detect_sandbox
from tests.helpers import FIXTURES, HAS_CUDA, ROOT

ESCAPER = textwrap.dedent("""
    import os, sys, time
    out = sys.argv[1]
    for _ in range(2):                      # twice: a double fork, each grandchild in its own session
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                with open(out, "a") as fh:
                    fh.write(os.readlink("/proc/self") + "\\n")  # the pid the host sees
                time.sleep(300)
            os._exit(0)
    time.sleep(300)
""")


class Escaper(WorkerProcess):
    """A worker whose 'submission' leaves processes behind that left its
    session (what the audit hook refuses to a real submission: this tests
    the layer below it)."""

    record: Path

    def _worker_command(self, fd: int) -> list[str]:
        return [sys.executable, "-c", ESCAPER, str(self.record)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("layer", ["sandbox as detected", "no sandbox: subreaper only"])
def test_no_process_outlives_its_worker(tmp_path, layer):
    worker = Escaper(FIXTURES / "double_fork.py", "cpu", Limits())
    worker.record = Path(os.environ.get("TMPDIR", "/tmp")) / f"escaper-{os.getpid()}-{time.monotonic_ns()}"
    if layer.startswith("no sandbox"):
        worker.sandbox = Sandbox(tool=None, network="open", filesystem="shared")
    worker.start()
    try:
        deadline = time.monotonic() + 20
        pids: list[int] = []
        while time.monotonic() < deadline:
            if worker.record.exists():
                pids = [int(p) for p in worker.record.read_text().split()]
                if len(pids) == 2:
                    break
            time.sleep(0.1)
        if detect_sandbox().tool == "bwrap" and not layer.startswith("no sandbox"):
            pytest.skip("the escapers' record is in bwrap's private /tmp")
        assert len(pids) == 2, "the escapers did not start"
        worker.close()
        time.sleep(0.5)
        left = [p for p in pids if _alive(p)]
        assert not left, f"processes outlived the worker: {left}"
        assert not reaper.orphans()
    finally:
        worker.close()
        worker.record.unlink(missing_ok=True)


# --- the judge's clock against the reported latency (item 1) -------------------

HARNESS = {"per_call_s": 0.0004, "sync_s": 0.00005, "reps": 24}


def test_timecheck_accepts_an_honest_report():
    # 200 calls of 15 ms, the timer's work overlapping or not: the window is what they add up to.
    honest = {"reps": 200, "mean_ms": 15.0, "groups": 40}
    assert timecheck.check(honest, 200 * 0.015 + 200 * 0.0004, HARNESS) is None
    assert timecheck.check(honest, 200 * 0.015 * 1.02, HARNESS) is None


def test_timecheck_rejects_a_timer_that_under_reports():
    lying = {"reps": 200, "mean_ms": 0.015, "groups": 40}  # a thousandth of the truth
    message = timecheck.check(lying, 200 * 0.015 + 0.05, HARNESS)
    assert message and message.startswith("rule:") and "under-reports" in message
    # 20% under the truth is caught; 5% is within the stated margin.
    assert timecheck.check({"reps": 200, "mean_ms": 12.0, "groups": 40}, 3.0 + 0.08, HARNESS)
    assert timecheck.check({"reps": 200, "mean_ms": 14.25, "groups": 40}, 3.0 + 0.08, HARNESS) is None


def test_timecheck_rejects_a_report_longer_than_the_window():
    assert timecheck.check({"reps": 100, "mean_ms": 50.0, "groups": 10}, 1.0, HARNESS)
    assert timecheck.check({"reps": "x"}, 1.0, HARNESS)


def test_recount_takes_the_judges_own_summary_of_the_call_times():
    from judge.timing import summarise
    times = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95, 1.3]
    report = dict(summarise(times), times_ms=list(times))
    report["median_ci_ms"] = 123.0  # a figure the judge does not compare: recomputed all the same
    assert timecheck.recount(report) is None
    assert report["median_ms"] == 1.05 and report["reps"] == 7 and report["median_ci_ms"] != 123.0


@pytest.mark.parametrize("change", [
    {"median_ms": 0.00105},  # statistics.median patched in the worker: the score a thousandth of the truth
    {"mean_ms": 0.5}, {"min_ms": 0.0}, {"reps": 6}, {"median_ms": "1.05"}, {"median_ms": True},
    {"times_ms": []}, {"times_ms": None}, {"times_ms": [1.0, float("nan")]}, {"times_ms": [1.0, -2.0]},
    {"times_ms": [1.0, "2"]}])
def test_recount_rejects_a_summary_that_is_not_its_own_times(change):
    from judge.timing import summarise
    times = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95, 1.3]
    report = dict(summarise(times), times_ms=list(times))
    report.update(change)
    message = timecheck.recount(report)
    assert message and message.startswith(timecheck.SUMMARY_RULE)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("name, honest", [("submissions/correct/grid_2d.py", True),
                                          ("tests/fixtures/gpu/lying_event_timer.py", False),
                                          ("tests/fixtures/gpu/lying_timing_module.py", False)])
def test_timecheck_on_the_gpu(name, honest):
    """The three-step timing request and the judge's own harness cost on the
    H100: an honest kernel fits, its report with every call time divided by
    1000 does not. (A file that patches the timer, the worker's own timing
    code or torch.cuda.Event, is refused on its load: they are sealed before
    the file runs.)"""
    from judge import cases as case_data
    from judge.challenge import load as load_challenge
    from judge.timing import summarise
    root = Path(__file__).resolve().parent.parent
    challenge = load_challenge("matrix_multiplication")
    case = challenge.performance
    plan = case_data.input_plan(challenge, case)
    seeds = [11, 12, 13]
    with WorkerProcess(root / name, "cuda", Limits()) as worker:
        reply, _ = worker.request({"op": "load", "path": str(worker.scratch / "submission.py"), "device": "cuda",
                                   "arity": 6}, 120, 0)
        if not honest:
            assert reply["status"] == "rejected" and ("was changed" in reply["message"]
                                                      or "judge.timing" in reply["message"]), reply
            return
        assert reply["status"] == "ok", reply
        reply, blobs, window = worker.request_timed({"op": "time", "plan": plan, "seeds": seeds}, 777, 300,
                                                   max_blob_bytes=1 << 34)
    assert reply["status"] == "ok", reply
    harness = timecheck.harness_cost(plan, seeds)
    report = dict(reply["timing"])
    assert timecheck.recount(report) is None
    verdict = timecheck.check(report, window, harness)
    assert verdict is None, (verdict, report["median_ms"], window, harness)
    lying = dict(report, times_ms=[t / 1000 for t in report["times_ms"]])
    lying.update(summarise(lying["times_ms"]))
    assert timecheck.recount(lying) is None
    assert timecheck.check(lying, window, harness), (lying["median_ms"], window, harness)


def test_timecheck_counts_the_head_start_only_where_the_calls_had_it():
    """The stand-in's short calls had the timer's head start (judge.timing);
    a long kernel's calls did not, and a claim beyond the stand-in's is
    capped, so it buys no room for an under-report."""
    harness = {"per_call_s": 0.0008, "sync_s": 0.0, "reps": 60, "head_start_s": 0.0005}
    reps, kernel_s = 200, 0.009
    window = reps * (kernel_s + 0.0003) + 0.01  # the timer's own work without the head start
    assert timecheck.check({"reps": reps, "mean_ms": 9.0, "groups": 4, "head_start_s": 0.0}, window, harness) is None
    # 80% of the truth reported: caught, whatever head start it claims.
    for claim in (0.0, 0.0005, 5.0, "x"):
        lie = {"reps": reps, "mean_ms": 7.2, "groups": 4, "head_start_s": claim}
        assert timecheck.check(lie, window, harness), claim
    # Reporting itself short enough to be credited one betrays it by far.
    assert timecheck.check({"reps": reps, "mean_ms": 2.9, "groups": 4, "head_start_s": 0.0005}, window, harness)
    # A short kernel that had the head start: its window holds it.
    window = reps * (0.00002 + 0.0008) + 0.005
    assert timecheck.check({"reps": reps, "mean_ms": 0.02, "groups": 4, "head_start_s": 0.0005}, window,
                           harness) is None


class _FakeStream:
    """A CUDA stream as the fence sees it: what it was made to wait for."""

    def __init__(self):
        self.waited = []
        self.cuda_stream = id(self)  # its raw handle: the fence compares handles (a launcher names a stream raw)

    def wait_stream(self, other):
        self.waited.append(other)


def test_work_on_another_stream_waits_for_the_timers_stream():
    """judge.worker.rules.after_start, called by the launch hook and the
    operator guard: during a timed call (the fence set), work queued on a
    stream other than the timer's waits for it; otherwise nothing is done."""
    from judge.worker import rules

    timer, side = _FakeStream(), _FakeStream()
    rules.after_start(side)
    assert side.waited == []
    rules.fence(timer)
    try:
        rules.after_start(timer)
        rules.after_start(side)
    finally:
        rules.fence(None)
    assert timer.waited == [] and side.waited == [timer]
    rules.after_start(side)
    assert side.waited == [timer]


def test_the_operator_guard_fences_torch_work_during_a_timed_call(monkeypatch):
    """The operator guard's path to after_start, with the CUDA stream faked
    (CPU): an allowed operator run on a side stream during a timed call
    makes that stream wait for the timer's."""
    import torch

    from judge.worker import rules

    timer, side = _FakeStream(), _FakeStream()
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: side)
    guard = rules.Guard()
    rules.fence(timer)
    try:
        with guard.armed():
            torch.zeros(4).fill_(1.0)
    finally:
        rules.fence(None)
    assert guard.violation is None
    assert side.waited and all(w is timer for w in side.waited)


def test_the_seal_on_the_workers_own_code_reads_the_same_object_twice():
    """The worker seals every function, class and method of its own modules
    and what carries its answers (judge.worker.arming), and a seal compares
    identities: an attribute that yields a new object on each access (a
    classmethod, bound anew) would reject every file. All the modules a CPU
    or GPU worker imports are imported here."""
    import importlib

    from judge.worker import arming
    names = arming.OWN_MODULES + arming.GUARD_MODULES
    for name in names:
        importlib.import_module(name)
    pairs = arming.own_callables(names) + arming.transport()
    assert len(pairs) > 100
    owners = {getattr(owner, "__name__", "") for owner, _ in pairs}
    assert {"judge.protocol", "judge.worker.server", "judge.worker.races", "socket"} <= owners
    for owner, name in pairs:
        assert getattr(owner, name) is getattr(owner, name), (owner, name)


# Worker modules whose code is done before the file is imported, or that is
# no part of a grading's worker: nothing of theirs is called afterwards.
RUN_BEFORE_THE_FILE = {"judge.worker.__init__", "judge.worker.jail", "judge.worker.privileges",
                       "judge.worker.warmup", "judge.worker.warmup_kernels", "judge.worker.tritonkey",
                       "judge.worker.null_solve", "judge.worker.null_solve_synced"}


def test_every_worker_module_is_sealed_or_done_before_the_file_runs():
    """A module added to judge/worker/ is sealed (judge.worker.arming lists
    it) unless its work ends before the file is imported: three helpers of
    the audit hook (who asks, genuine imports, a kernel's origin) were left
    out of the seal when they were written."""
    from judge.worker import arming
    sealed = set(arming.OWN_MODULES + arming.GUARD_MODULES)
    folder = ROOT / "judge" / "worker"
    modules = {"judge.worker." + path.stem for path in folder.glob("*.py")}
    assert modules - sealed - RUN_BEFORE_THE_FILE == set()
    assert RUN_BEFORE_THE_FILE <= modules  # the list names modules that exist


def test_a_worker_being_started_is_never_taken_for_an_orphan():
    """One grading starts workers while another reaps (a batch lane starts
    the next file's workers while the current file's close): a worker
    forked but not yet registered must not be killed as an orphan. It was,
    about one grading in ten with six gradings side by side in one process
    (an honest file read 'the process was killed by SIGKILL' on its load)."""
    import subprocess
    import threading

    from judge import isolation
    reaper.become_subreaper()
    stop = threading.Event()

    def reap_all_the_time():
        while not stop.is_set():
            reaper.reap()

    reaping = threading.Thread(target=reap_all_the_time, daemon=True)
    reaping.start()
    started = []
    try:
        for _ in range(40):
            started.append(isolation._popen([sys.executable, "-c", "import time; time.sleep(30)"],
                                            stdin=subprocess.DEVNULL, start_new_session=True))
        time.sleep(0.3)
        killed = [p.pid for p in started if p.poll() is not None]
    finally:
        stop.set()
        reaping.join(10)
        for proc in started:
            proc.kill()
            proc.wait()
            reaper.finished(proc.pid)
    assert not killed, f"workers killed as orphans while starting: {killed}"
