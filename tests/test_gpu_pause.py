"""A grading that shares its GPU steps aside for another's timing: its
processes paused (judge.gpu_pause), the lock handed over and taken back
(judge.gpu_lock), its deadlines standing still meanwhile (judge.clock).
Without a GPU the processes are only stopped; the driver's checkpoint lock
is faked to show what a refusal does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from judge import clock, protocol
from judge.errors import WorkerTimeout
from judge.gpu_lock import GpuLock
from judge.gpu_pause import Pause, descendants
from tests.pause_helpers import FakeDriver, cpus_of, state, wait_for_state


def side_by_side(*targets, timeout: float = 30.0) -> None:
    """Run the functions in threads of their own, and wait for them all."""
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)

def test_descendants_reach_grandchildren(family):
    parent, child = family
    found = descendants(parent.pid)
    assert child in found and parent.pid not in found
    assert parent.pid in descendants(os.getpid())


def test_a_pause_stops_a_family_and_resume_lets_it_go(family):
    parent, child = family
    driver = FakeDriver()
    pause = Pause(root=parent.pid, driver=driver)
    assert pause.stop()
    assert state(child) == "T"
    assert driver.locked == [child]
    pause.resume()
    assert wait_for_state(child, False)
    assert driver.unlocked == [child]


def test_a_refused_lock_undoes_the_whole_pause(family):
    parent, child = family
    pause = Pause(root=parent.pid, driver=FakeDriver(refuse={child}))
    assert not pause.stop()
    assert "CUDA error 600" in pause.failure
    assert wait_for_state(child, False)


def test_a_worker_held_for_its_timing_is_paused_with_its_children(family):
    """judge.grader keeps a grading's first case worker for the timing:
    the worker itself is paused with everything below it, and let go
    only when resumed."""
    parent, child = family
    driver = FakeDriver()
    pause = Pause(root=parent.pid, driver=driver, with_root=True)
    assert pause.stop()
    assert state(parent.pid) == "T" and state(child) == "T"
    assert sorted(driver.locked) == sorted([parent.pid, child])
    pause.resume()
    assert wait_for_state(parent.pid, False) and wait_for_state(child, False)


def test_a_worker_that_cannot_be_held_is_left_to_be_killed(family, monkeypatch):
    """hold() answers None, with nothing left paused, when the lock is
    refused (a kernel that never ends) or the driver has none."""
    from judge import gpu_pause
    parent, child = family
    monkeypatch.setattr(gpu_pause, "driver", lambda: FakeDriver(refuse={parent.pid}))
    assert gpu_pause.hold(parent.pid) is None
    assert wait_for_state(parent.pid, False) and wait_for_state(child, False)
    monkeypatch.setattr(gpu_pause, "driver", lambda: None)
    assert gpu_pause.hold(parent.pid) is None
    monkeypatch.setattr(gpu_pause, "driver", FakeDriver)
    held = gpu_pause.hold(parent.pid)
    assert held is not None and state(parent.pid) == "T"
    held.resume()
    assert wait_for_state(parent.pid, False)


def test_a_step_aside_leaves_a_held_worker_alone(family, monkeypatch):
    """A grading's step aside pauses its children but the worker already
    held for the timing: the checkpoint lock of a process locked and
    stopped does not return (a batch hung on it)."""
    from judge import gpu_pause
    parent, child = family
    driver = FakeDriver()
    monkeypatch.setattr(gpu_pause, "driver", lambda: driver)
    pause = gpu_pause.pauser(spare=lambda: (parent.pid,))()
    assert pause.stop()
    assert parent.pid not in pause.stopped and child not in pause.stopped
    assert parent.pid not in driver.locked and child not in driver.locked
    assert state(parent.pid) != "T" and state(child) != "T"
    pause.resume()


def test_the_clock_stands_still_while_paused():
    before = clock.now()
    paused_before = clock.paused_seconds()
    with clock.paused():
        inside = clock.now()
        time.sleep(0.2)
        assert clock.now() == inside
    assert clock.paused_seconds() - paused_before >= 0.2
    assert clock.now() - before < 0.15  # the 0.2 s inside did not count


def test_a_pause_moves_a_requests_deadline():
    judge_end, worker_end = socket.socketpair()
    try:
        # The answer comes after 0.5 s; the deadline is 0.2 s away, but the
        # clock stands still for 0.6 s of the wait.
        def worker():
            with clock.paused():
                time.sleep(0.5)
                protocol.send(worker_end, {"status": "ok"})
                time.sleep(0.1)

        thread = threading.Thread(target=worker)
        thread.start()
        reply, _ = protocol.recv(judge_end, clock.now() + 0.2, now=clock.now)
        thread.join()
        assert reply["status"] == "ok"
        # Without a pause the same wait ends at its deadline.
        with pytest.raises(WorkerTimeout):
            protocol.recv(judge_end, clock.now() + 0.2, now=clock.now)
    finally:
        judge_end.close()
        worker_end.close()


def _grading_beside_a_timing(tmp_path, family, driver, hold_s=3.0, elsewhere=frozenset()):
    """One grading holds its cases' lock for `hold_s` with the family as its
    processes; a timing comes 0.2 s later. Returns what each saw."""
    parent, child = family
    lock = GpuLock(tmp_path, "0")
    seen: dict = {}
    cases_in = threading.Event()

    def cases():
        waited: dict = {}
        told = seen.setdefault("told", [])
        with lock.shared(waited, pauser=lambda: Pause(root=parent.pid, driver=driver, elsewhere=elsewhere),
                         quiet=(threading.Lock(),), notify=told.append):
            cases_in.set()
            time.sleep(hold_s)
        seen["cases_out"] = time.monotonic()
        seen["paused"] = waited.get("gpu_paused", 0.0)

    def timing():
        cases_in.wait()
        time.sleep(0.2)
        asked = time.monotonic()
        with lock.exclusive():
            seen["timing_waited"] = time.monotonic() - asked
            seen["stopped_while_timing"] = state(child) == "T"
            seen["cpus_while_timing"] = cpus_of(child)
            time.sleep(0.3)
        seen["resumed_after"] = wait_for_state(child, False)

    side_by_side(cases, timing)
    return seen


def test_a_grading_steps_aside_for_a_timing(tmp_path, family):
    seen = _grading_beside_a_timing(tmp_path, family, FakeDriver())
    # The timing did not wait for the 3 s of cases; the grading's processes
    # were stopped while it ran and went on after it; the grading knows.
    assert seen["timing_waited"] < 1.5, seen
    assert seen["stopped_while_timing"] and seen["resumed_after"], seen
    assert seen["paused"] >= 0.3, seen
    assert seen["told"] == [True, False], seen  # judge submit's status line says so while it lasts


def test_a_grading_steps_aside_still_compiling_where_cpus_are_spare(tmp_path, family):
    """With CPUs to spare (judge.cpu_share), the grading that steps aside
    is locked off the GPU but runs on, on the CPUs the timing leaves."""
    parent, child = family
    before = cpus_of(child)
    driver = FakeDriver()
    seen = _grading_beside_a_timing(tmp_path, family, driver, hold_s=1.5, elsewhere=frozenset({0}))
    assert seen["timing_waited"] < 1.0, seen
    assert not seen["stopped_while_timing"] and seen["cpus_while_timing"] == {0}, seen
    assert child in driver.locked and child in driver.unlocked
    assert cpus_of(child) == before


def test_a_grading_that_cannot_pause_keeps_the_gpu(tmp_path, family):
    parent, child = family
    seen = _grading_beside_a_timing(tmp_path, family, FakeDriver(refuse={child}), hold_s=1.5)
    # Its processes were never left stopped; the timing waited for its cases.
    assert seen["timing_waited"] > 1.0, seen
    assert not seen["stopped_while_timing"], seen
    assert seen["paused"] < 1.0, seen


def test_stepping_aside_waits_for_the_judges_own_gpu_work(tmp_path, family):
    parent, child = family
    lock = GpuLock(tmp_path, "0")
    judge_work = threading.Lock()
    seen: dict = {}
    cases_in = threading.Event()

    def cases():
        with lock.shared(pauser=lambda: Pause(root=parent.pid, driver=FakeDriver()), quiet=(judge_work,)):
            with judge_work:  # a check on the GPU, under way when the timing comes
                cases_in.set()
                time.sleep(1.0)
            seen["check_done"] = time.monotonic()
            time.sleep(1.0)

    def timing():
        cases_in.wait()
        with lock.exclusive():
            seen["timing_in"] = time.monotonic()

    side_by_side(cases, timing)
    assert seen["timing_in"] >= seen["check_done"] - 0.05, seen


def test_kills_wait_while_a_grading_stands_aside():
    """A worker's death is GPU work (its context's teardown): kills pass side
    by side, wait while the gate is closed, and closing waits for them."""
    from judge.isolation import KillGate
    gate = KillGate()
    order: list[str] = []
    inside = threading.Event()

    def kill(name: str, hold: float = 0.0):
        with gate.passing():
            order.append(f"{name} in")
            inside.set()
            time.sleep(hold)
            order.append(f"{name} out")

    early = threading.Thread(target=kill, args=("early", 0.3))
    early.start()
    inside.wait()
    with gate:  # waits for the kill under way
        order.append("closed")
        late = threading.Thread(target=kill, args=("late",))
        late.start()
        time.sleep(0.2)
        order.append("opening")
    late.join(5)
    early.join(5)
    assert order == ["early in", "early out", "closed", "opening", "late in", "late out"], order


def _still_below(root: int):
    return lambda spare=(): Pause(root=root, driver=None, spare=spare)


def test_processes_of_a_grading_waiting_at_the_gate_are_kept_still(tmp_path, family):
    """Workers started ahead (importing torch, warming up on the GPU) of a
    grading that waits for another's timing stay stopped meanwhile."""
    parent, child = family
    lock = GpuLock(tmp_path, "0")
    seen: dict = {}
    timing_in = threading.Event()

    def timing():
        with lock.exclusive():
            timing_in.set()
            time.sleep(0.5)
            seen["stopped_meanwhile"] = state(child) == "T"

    def cases():
        timing_in.wait()
        with lock.shared(still=_still_below(parent.pid)):
            seen["running_inside"] = wait_for_state(child, False, 2.0)

    side_by_side(timing, cases)
    assert seen == {"stopped_meanwhile": True, "running_inside": True}, seen


def test_a_timing_keeps_its_own_other_processes_still(tmp_path, family):
    """While a grading times, its other processes (the next file's workers)
    are stopped; the worker timed (spared) is not."""
    parent, child = family
    timed_worker = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"])
    try:
        lock = GpuLock(tmp_path, "0")
        # Both are children of this process: the family is stopped, the spared one runs.
        with lock.exclusive(still=lambda spare=(): Pause(driver=None, spare=spare), spare=lambda: [timed_worker.pid]):
            assert state(parent.pid) == "T" and state(child) == "T"
            time.sleep(0.1)
            assert state(timed_worker.pid) != "T"
        assert wait_for_state(child, False) and wait_for_state(parent.pid, False)
    finally:
        timed_worker.kill()
        timed_worker.wait()


def test_a_pauser_that_breaks_leaves_the_grading_its_lock(tmp_path):
    """A fault in pausing (not a refusal: an exception) is the judge's own:
    the grading keeps the lock and ends cleanly; the timing waits for it."""
    lock = GpuLock(tmp_path, "0")
    seen: dict = {}
    cases_in = threading.Event()

    def broken():
        raise RuntimeError("no /proc here")

    def cases():
        with lock.shared(pauser=broken):
            cases_in.set()
            time.sleep(1.0)
        seen["cases_out"] = time.monotonic()

    def timing():
        cases_in.wait()
        with lock.exclusive():
            seen["timing_in"] = time.monotonic()

    side_by_side(cases, timing)
    assert seen["timing_in"] >= seen["cases_out"] - 0.05, seen
