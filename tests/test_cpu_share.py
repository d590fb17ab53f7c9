"""The CPUs a grading that steps aside keeps running on (judge.cpu_share):
its locked processes are confined, not stopped, and get their CPUs back;
with the real driver's checkpoint lock on a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from judge.gpu_pause import Pause
from tests.pause_helpers import FakeDriver, cpus_of, state, wait_for_state


class NoContextDriver(FakeDriver):
    """A driver for which none of the processes has a CUDA context."""

    def lock(self, pid, timeout_ms=0):
        return 3  # CUDA_ERROR_NOT_INITIALIZED


def test_a_locked_process_runs_on_confined_instead_of_stopped(family):
    """A grading stepping aside keeps compiling: its locked processes (CUDA
    calls blocked) are held off the timing's CPUs, not stopped, and get
    every thread's CPUs back on resume."""
    parent, child = family
    before = cpus_of(child)
    driver = FakeDriver()
    pause = Pause(root=parent.pid, driver=driver, elsewhere=frozenset({0}))
    assert pause.stop()
    assert driver.locked == [child] and pause.running == [child] and pause.stopped == []
    assert state(child) != "T" and cpus_of(child) == {0}
    pause.resume()
    assert cpus_of(child) == before and driver.unlocked == [child]


def test_a_process_without_cuda_is_stopped_unless_it_is_a_compiler_tool(family, monkeypatch):
    """No CUDA context yet: it could make one, so it is stopped, unless it
    runs one of Triton's NVIDIA tools (told by the file it runs)."""
    from judge import cpu_share
    parent, child = family
    pause = Pause(root=parent.pid, driver=NoContextDriver(), elsewhere=frozenset({0}))
    assert pause.stop()
    assert pause.stopped == [child] and state(child) == "T"
    pause.resume()
    assert wait_for_state(child, False)
    exe = os.stat(f"/proc/{child}/exe")
    monkeypatch.setattr(cpu_share, "_TOOLS", [{(exe.st_dev, exe.st_ino)}])
    pause = Pause(root=parent.pid, driver=NoContextDriver(), elsewhere=frozenset({0}))
    assert pause.stop()
    assert pause.running == [child] and state(child) != "T" and cpus_of(child) == {0}
    pause.resume()


def test_a_compiler_tool_is_known_by_the_file_it_runs_not_its_name():
    from judge import cpu_share
    cpu_share._TOOLS.clear()
    me = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert not cpu_share.runs_a_compiler_tool(me.pid)
    finally:
        me.kill()
        me.wait()
    assert not cpu_share.runs_a_compiler_tool(2 ** 22 + 12345)  # no such process


def test_the_cpus_kept_for_a_timing():
    from judge import cpu_share
    assert cpu_share.reserved(frozenset(range(4))) == frozenset()
    assert cpu_share.elsewhere(frozenset(range(4))) == frozenset()  # small host: stopped, as before
    assert cpu_share.reserved(frozenset(range(16))) == {14, 15}
    assert cpu_share.elsewhere(frozenset(range(16))) == set(range(14))
    assert len(cpu_share.reserved(frozenset(range(64)))) == 8


def test_threads_born_while_confined_get_their_process_cpus_back():
    from judge.cpu_share import Confinement
    code = ("import threading, time\n"
            "stop = threading.Event()\n"
            "threading.Thread(target=stop.wait, daemon=True).start()\n"
            "print('ready', flush=True)\n"
            "input()\n"
            "threading.Thread(target=stop.wait, daemon=True).start()\n"
            "print('more', flush=True)\n"
            "time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        before = cpus_of(proc.pid)
        held = Confinement(frozenset({0}))
        assert held.confine(proc.pid)
        tids = os.listdir(f"/proc/{proc.pid}/task")
        assert all(cpus_of(int(t)) == {0} for t in tids)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "more"
        held.restore()
        tids = os.listdir(f"/proc/{proc.pid}/task")
        assert len(tids) == 3 and all(cpus_of(int(t)) == before for t in tids)
    finally:
        proc.kill()
        proc.wait()


# A CUDA process that counts on the CPU and, when asked, runs a kernel.
CUDA_CHILD = ("import sys, threading, time, torch\n"
              "x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize()\n"
              "ticks = [0]\n"
              "def count():\n"
              "    while True:\n"
              "        ticks[0] += 1; time.sleep(0.001)\n"
              "threading.Thread(target=count, daemon=True).start()\n"
              "print('ready', flush=True)\n"
              "for line in sys.stdin:\n"
              "    if line.startswith('ticks'):\n"
              "        print(ticks[0], flush=True)\n"
              "    else:\n"
              "        print(float((x * 2).sum()), flush=True)\n")


@pytest.mark.gpu
def test_the_checkpoint_lock_blocks_cuda_and_leaves_the_cpu(tmp_path):
    """What stepping aside without stopping relies on, with the real
    driver: a locked process runs on the CPU, its CUDA calls wait until
    the unlock, then complete."""
    import torch
    from judge import gpu_pause
    if not torch.cuda.is_available() or gpu_pause.driver() is None:
        pytest.skip("needs a CUDA device whose driver has the checkpoint lock")
    proc = subprocess.Popen([sys.executable, "-c", CUDA_CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        pause = Pause(root=proc.pid, driver=gpu_pause.driver(), with_root=True, elsewhere=frozenset({0}))
        assert pause.stop(), pause.failure
        assert pause.running == [proc.pid] and state(proc.pid) != "T" and cpus_of(proc.pid) == {0}
        proc.stdin.write("ticks\n")
        proc.stdin.flush()
        first = int(proc.stdout.readline())
        time.sleep(0.3)
        proc.stdin.write("ticks\nsum\n")
        proc.stdin.flush()
        assert int(proc.stdout.readline()) > first + 50  # counting on the CPU while locked
        answered: list[str] = []
        reader = threading.Thread(target=lambda: answered.append(proc.stdout.readline()))
        reader.start()
        reader.join(1.5)
        assert not answered  # its CUDA call waits for the unlock
        pause.resume()
        reader.join(30)
        assert answered and float(answered[0]) == float(1 << 21)
    finally:
        proc.kill()
        proc.wait()
