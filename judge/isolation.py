"""The trusted side of the boundary: start, feed, police and kill the worker.

The judge process never imports a submission. A worker child does, in a
fresh scratch directory, with a scrubbed environment (no secret, no judge
state), its own Triton cache, its stdout and stderr captured and capped, and
wall-clock deadlines on every request. The worker's death before it answers,
for whatever reason, is reported as such; a worker past its deadline is
killed with its whole process group.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from . import protocol
from .errors import ProtocolError, WorkerDied, WorkerTimeout

JUDGE_ROOT = Path(__file__).resolve().parent.parent

# Variables a worker may inherit: what Python, CUDA and Triton need to start.
# Everything else (JUDGE_SECRET first of all) stays with the judge.
INHERITED_ENV = (
    "PATH", "PYTHONPATH", "LANG", "LC_ALL", "LC_CTYPE", "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH",
    "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "TRITON_F32_DEFAULT",
    "OMP_NUM_THREADS", "VIRTUAL_ENV",
)


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    load_timeout_s: float = Field(120.0, gt=0, description="importing the submission (and torch)")
    case_timeout_s: float = Field(60.0, gt=0, description="one case, all its trials")
    total_timeout_s: float = Field(900.0, gt=0, description="the whole submission")
    host_memory_bytes: int = Field(16 << 30, gt=0, description="host memory of a worker")
    gpu_memory_fraction: float = Field(0.5, gt=0, le=1, description="of the GPU, for a CUDA worker")
    output_cap_bytes: int = Field(64 << 10, gt=0, description="stdout and stderr kept, each")


class CappedStream:
    """Drains a pipe on a thread, keeping the first `cap` bytes: a flood costs
    the judge neither memory nor disk, and never blocks the worker."""

    def __init__(self, pipe, cap: int):
        self.cap = cap
        self.head = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe) -> None:
        while True:
            chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
            if not chunk:
                break
            self.total += len(chunk)
            room = self.cap - len(self.head)
            if room > 0:
                self.head += chunk[:room]
        pipe.close()

    def text(self, join_timeout: float = 2.0) -> str:
        self._thread.join(join_timeout)
        out = self.head.decode("utf-8", errors="replace")
        if self.total > len(self.head):
            out += f"\n… [{self.total - len(self.head):,} more bytes dropped]"
        return out


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "the worker stopped answering"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (the host may have run out of memory)" if name == "SIGKILL" else ""
        return f"the process was killed by {name}{hint}"
    return f"the process exited with status {returncode} before reporting"


class WorkerProcess:
    """One worker child, serving requests for one submission."""

    def __init__(self, submission: Path, device: str, limits: Limits):
        self.submission = Path(submission)
        self.device = device
        self.limits = limits
        self.scratch = Path(tempfile.mkdtemp(prefix="judge-worker-"))
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.stdout: CappedStream | None = None
        self.stderr: CappedStream | None = None

    # --- lifecycle -------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        tmp = self.scratch / "tmp"
        tmp.mkdir(exist_ok=True)
        env.update(
            HOME=str(self.scratch),
            TMPDIR=str(tmp),
            TRITON_CACHE_DIR=str(self.scratch / "triton-cache"),
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONUNBUFFERED="1",
            PYTHONPATH=os.pathsep.join(p for p in (str(JUDGE_ROOT), env.get("PYTHONPATH")) if p),
        )
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        return env

    def start(self) -> None:
        target = self.scratch / "submission.py"
        shutil.copyfile(self.submission, target)
        parent_sock, child_sock = socket.socketpair()
        cmd = [sys.executable, "-m", "judge.worker", "--fd", str(child_sock.fileno())]
        cmd += ["--memory-limit", str(self.limits.host_memory_bytes),
                "--memory-rlimit", "AS" if self.device == "cpu" else "DATA"]
        self.proc = subprocess.Popen(
            cmd, cwd=self.scratch, env=self._env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(child_sock.fileno(),),
            start_new_session=True,
        )
        child_sock.close()
        self.sock = parent_sock
        self.stdout = CappedStream(self.proc.stdout, self.limits.output_cap_bytes)
        self.stderr = CappedStream(self.proc.stderr, self.limits.output_cap_bytes)

    def kill(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable child
            pass
        # Children the submission left behind in the same group die too.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None and self.sock is not None:
            try:
                protocol.send(self.sock, {"op": "exit"})
                protocol.recv(self.sock, deadline=time.monotonic() + 5)
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - any trouble: fall through to kill
                pass
        self.kill()
        if self.sock is not None:
            self.sock.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def __enter__(self) -> "WorkerProcess":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- requests --------------------------------------------------------------

    def request(self, header: dict, timeout_s: float, max_blob_bytes: int) -> tuple[dict, list[bytearray]]:
        """Send one request and wait for its answer. Raises WorkerDied,
        WorkerTimeout (after killing the worker) or ProtocolError (likewise)."""
        assert self.sock is not None and self.proc is not None
        deadline = time.monotonic() + timeout_s
        try:
            protocol.send(self.sock, header)
            return protocol.recv(self.sock, deadline=deadline, max_blob_bytes=max_blob_bytes)
        except (EOFError, BrokenPipeError, ConnectionResetError):
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
                code = self.proc.returncode
            raise WorkerDied(describe_exit(code), code) from None
        except WorkerTimeout:
            self.kill()
            raise WorkerTimeout(f"no answer within {timeout_s:.0f} s; the worker was killed") from None
        except ProtocolError:
            self.kill()
            raise

    def output(self) -> tuple[str, str]:
        return (self.stdout.text() if self.stdout else "", self.stderr.text() if self.stderr else "")
