"""Helpers of the tests of a grading stepping aside (test_gpu_pause.py) and
of the CPUs kept for a timing (test_cpu_share.py): a process family to pause,
its scheduler state, and a fake of the driver's checkpoint lock."""

from __future__ import annotations

import subprocess
import sys
import time

# A parent that starts a child and waits: both sleep in short steps.
FAMILY = ("import subprocess, sys, time\n"
          "child = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.01)'])\n"
          "print(child.pid, flush=True)\n"
          "while True: time.sleep(0.01)\n")


def family_processes():
    """(parent, child pid): a process with a child of its own."""
    parent = subprocess.Popen([sys.executable, "-c", FAMILY], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    yield parent, child
    subprocess.run(["kill", "-9", str(child)], check=False)
    parent.kill()
    parent.wait()


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    return stat[stat.rfind(")") + 2]


def wait_for_state(pid: int, wanted: bool, timeout: float = 5.0) -> bool:
    """Whether the process is stopped (`wanted` True) or not, within `timeout`."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (state(pid) == "T") == wanted:
            return True
        time.sleep(0.01)
    return False


class FakeDriver:
    """The checkpoint lock, refused for the pids in `refuse`."""

    def __init__(self, refuse=()):
        self.refuse = set(refuse)
        self.locked: list[int] = []
        self.unlocked: list[int] = []

    def lock(self, pid, timeout_ms=0):
        if pid in self.refuse:
            return 600  # CUDA_ERROR_NOT_READY: work still queued at the timeout
        self.locked.append(pid)
        return 0

    def unlock(self, pid):
        self.unlocked.append(pid)
        return 0


def cpus_of(pid: int) -> set[int]:
    import os
    return set(os.sched_getaffinity(pid))
