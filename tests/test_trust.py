"""Issue 9: processes that outlive their worker, the audit hook's blame,
and the trusted check of a reported latency."""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from judge import reaper
from judge.isolation import Limits, Sandbox, WorkerProcess, detect_sandbox
from tests.helpers import FIXTURES, HAS_CUDA

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
