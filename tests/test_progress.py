"""A case that shows no progress is stopped before its full limit
(judge.progress): the signs read from outside the worker, the moving
deadline the protocol waits on, and the verdict a hanging solve gets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from judge import casework, progress, protocol
from judge.errors import WorkerTimeout
from judge.grader import GradeOptions, grade
from judge.isolation import Limits

ROOT = Path(__file__).resolve().parent.parent


def test_a_moving_deadline_is_read_again_while_waiting(monkeypatch):
    monkeypatch.setattr(protocol, "POLL_S", 0.05)
    a, b = socket.socketpair()
    moved = {"to": time.monotonic() + 0.2}

    def later():
        time.sleep(0.15)
        moved["to"] = time.monotonic() + 0.3  # progress: the deadline moves on
        time.sleep(0.2)
        protocol.send(a, {"status": "ok"})

    threading.Thread(target=later, daemon=True).start()
    reply, _ = protocol.recv(b, deadline=lambda: moved["to"])
    assert reply["status"] == "ok"
    started = time.monotonic()
    with pytest.raises(WorkerTimeout):
        protocol.recv(b, deadline=lambda: started + 0.2)
    assert time.monotonic() - started < 2


def test_a_new_cache_entry_is_progress(tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "POLL_S", 0.0)
    watch = progress.CompileWatch(tmp_path, None, idle_s=5)
    first = watch.deadline()
    time.sleep(0.02)
    assert watch.deadline() == first  # nothing new
    (tmp_path / "0123abcd").mkdir()  # a kernel compiled
    assert watch.deadline() > first


def test_the_autotuners_benchmark_shows_progress(tmp_path, monkeypatch):
    """Timing a config compiles nothing; the worker's benchmark touches the
    cache folder before each, which the watch reads as progress."""
    from judge.worker import autotune
    monkeypatch.setattr(progress, "POLL_S", 0.0)
    watch = progress.CompileWatch(tmp_path, None, idle_s=5)
    first = watch.deadline()
    time.sleep(0.02)
    assert watch.deadline() == first
    autotune._progress(str(tmp_path))
    assert watch.deadline() > first
    autotune._progress(None)  # no folder: nothing to touch, no error


def test_an_assembler_below_the_worker_is_progress(tmp_path, monkeypatch):
    """A process named ptxas (Triton runs it for every kernel it compiles)
    anywhere below the worker; a process of another name is not."""
    monkeypatch.setattr(progress, "POLL_S", 0.0)
    sleeper = tmp_path / "ptxas"
    sleeper.symlink_to(Path(sys.executable))
    other = tmp_path / "busy"
    other.symlink_to(Path(sys.executable))
    code = "import time; time.sleep(30)"
    parent = subprocess.Popen([str(other), "-c", f"import subprocess, sys, time\n"
                                                  f"p = subprocess.Popen([sys.argv[1], '-c', {code!r}])\n"
                                                  f"print('up', flush=True); time.sleep(30)", str(sleeper)],
                              stdout=subprocess.PIPE, text=True)
    quiet = subprocess.Popen([str(other), "-c", code])
    try:
        assert parent.stdout.readline().strip() == "up"
        time.sleep(0.2)  # the child's name is set once it has started
        assert progress.CompileWatch(None, parent.pid, 5)._assembling()
        assert not progress.CompileWatch(None, quiet.pid, 5)._assembling()
    finally:
        for p in (parent, quiet):
            p.kill()
            p.wait()
        subprocess.run(["pkill", "-f", str(sleeper)], check=False)


def test_a_hanging_solve_is_stopped_once_it_shows_no_progress(monkeypatch):
    """The whole path: a solve that loops in Python gets time_limit_exceeded
    after the idle limit, long before the case's own (the watch is applied
    on the CPU here; the judge applies it on a GPU only)."""
    def watch(self, worker):
        return progress.CompileWatch(worker.scratch / "triton-cache", worker.proc.pid, self.limits.idle_timeout_s)

    monkeypatch.setattr(casework.Run, "compile_watch", watch)
    started = time.monotonic()
    result = grade(ROOT / "submissions" / "faults" / "infinite_loop.py",
                   GradeOptions(device="cpu", seed=1, workers=1,
                                limits=Limits(case_timeout_s=120, idle_timeout_s=3, total_timeout_s=300)))
    assert result.verdict.value == "time_limit_exceeded"
    assert "no sign of progress for 3 s" in result.message
    assert time.monotonic() - started < 60


def test_the_idle_limit_applies_on_a_gpu_only(tmp_path):
    class Worker:
        triton_cache, scratch = tmp_path, tmp_path

        class proc:
            pid = os.getpid()

    run = type("R", (), {})()
    run.limits = Limits()
    run.device = "cpu"
    assert casework.Run.compile_watch(run, Worker()) is None
    run.device = "cuda"
    assert isinstance(casework.Run.compile_watch(run, Worker()), progress.CompileWatch)
    run.limits = Limits(idle_timeout_s=60, case_timeout_s=60)  # no shorter than the case's own: none
    assert casework.Run.compile_watch(run, Worker()) is None

