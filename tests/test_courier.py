"""The worker's line to the judge (judge.worker.courier): the socket is out
of reach of every thread but the courier's, a complaint ends in rejected,
and a worker's reply of the wrong size is its fault, never the judge's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from judge.challenge import load
from judge.grader import GradeOptions
from judge.casework import Run

ROOT = Path(__file__).resolve().parent.parent

# Run in a child: a seccomp filter cannot be taken off the thread it is on.
CHILD = textwrap.dedent('''
    import os, socket, threading, sys
    sys.path.insert(0, {root!r})
    from judge import protocol
    from judge.worker.courier import Courier
    judge_end, worker_end = socket.socketpair()
    link = Courier(worker_end)
    protocol.send(judge_end, {{"op": "load"}})
    assert link.recv()["op"] == "load"
    assert link.bar_this_thread()
    def attempts():
        out = []
        for fd in link.barred:
            for name, call in (("write", lambda: os.write(fd, b"x")), ("read", lambda: os.read(fd, 1)),
                               ("dup", lambda: os.dup(fd)), ("dup2", lambda: os.dup2(1, fd)),
                               ("close", lambda: os.close(fd))):
                try:
                    call()
                    out.append(name + " went through")
                except OSError as exc:
                    out.append(name + " " + str(exc.errno))
        return out
    mine = attempts()
    theirs = []
    t = threading.Thread(target=lambda: theirs.extend(attempts()))
    t.start(); t.join()
    link.send({{"status": "ok", "seen": sorted(set(mine + theirs))}}, [b"abcd"])
    header, blobs = protocol.recv(judge_end)
    print(header["seen"], bytes(blobs[0]))
    os.write(link.complaint_fd, b"\\x00\\x00\\x00\\x0b" + b"rule: nope!")
    import time; time.sleep(5)
    print("still alive")
''')


def test_only_the_courier_threads_reach_the_judges_socket():
    if sys.platform != "linux":
        pytest.skip("seccomp is Linux's")
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("the filter knows x86-64's system calls")
    proc = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 3, proc.stderr  # the complaint ended the process
    assert "still alive" not in proc.stdout
    seen = eval(proc.stdout.splitlines()[0].rpartition("]")[0] + "]")
    assert seen == sorted({f"{name} 9" for name in ("write", "read", "dup", "dup2", "close")}), seen  # EBADF
    assert "b'abcd'" in proc.stdout  # while the courier's own threads carried the reply


class _Worker:
    def __init__(self, reply, blobs):
        self.answer = (reply, blobs)
        self.stopped = False

    def request(self, *args, **kwargs):
        return self.answer


class _Slot:
    def __init__(self, worker):
        self.worker = worker
        self.stopped = False

    def stop(self):
        self.stopped = True


def test_a_reply_of_the_wrong_size_is_a_runtime_error_not_the_judges_failure():
    challenge = load("matrix_multiplication")
    run = Run(challenge, Path("unused.py"), "cpu", GradeOptions(device="cpu", seed=3))
    slot = _Slot(_Worker({"status": "ok"}, [bytearray(4)]))
    result = run.run_case(challenge.example, "example", slot)
    assert result.status == "runtime_error"
    assert result.message.startswith("the worker sent garbage: expected buffers of")
    assert slot.stopped


STREAMS_CHILD = textwrap.dedent('''
    import os, socket, sys, tempfile
    sys.path.insert(0, {root!r})
    from judge.worker.courier import Courier
    from judge.worker.kernel_output import KERNEL_OUTPUT
    os.dup2(1, KERNEL_OUTPUT, inheritable=False)
    judge_end, worker_end = socket.socketpair()
    link = Courier(worker_end)
    assert link.bar_this_thread()
    spare = tempfile.TemporaryFile()
    seen = []
    for name, call in (("dup2 onto it", lambda: os.dup2(spare.fileno(), KERNEL_OUTPUT)),
                       ("dup3 onto it", lambda: os.dup2(spare.fileno(), KERNEL_OUTPUT, inheritable=False)),
                       ("close it", lambda: os.close(KERNEL_OUTPUT)),
                       ("dup2 onto 2", lambda: os.dup2(os.dup(2), 2))):
        try:
            call()
            seen.append(name + " went through")
        except OSError as exc:
            seen.append(name + " " + str(exc.errno))
    os.write(KERNEL_OUTPUT, b"printed by a kernel\\n")
    os.write(1, repr(seen).encode() + b"\\n")
''')


def test_where_kernels_print_stays_where_the_worker_put_it():
    """Kernels print to a descriptor of the worker's own
    (judge.worker.kernel_output); a file that replaced descriptor 1 with a
    file of its own read them back. That one can be neither replaced
    (dup2, dup3) nor closed; the standard streams still can be, as a child
    such as ptxas needs between its fork and its exec."""
    if sys.platform != "linux":
        pytest.skip("seccomp is Linux's")
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("the filter knows x86-64's system calls")
    proc = subprocess.run([sys.executable, "-c", STREAMS_CHILD.format(root=str(ROOT))], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "printed by a kernel" in proc.stdout
    seen = eval(proc.stdout.strip().splitlines()[-1])
    assert seen == ["dup2 onto it 9", "dup3 onto it 9", "close it 9", "dup2 onto 2 went through"]
