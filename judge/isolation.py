"""The trusted side of the boundary: start, feed, police and kill the worker.

The judge process never imports a submission. A worker child does, in a
fresh scratch directory, with a scrubbed environment (no secret, no judge
state), its own Triton cache, its stdout and stderr captured and capped, and
wall-clock deadlines on every request. The worker's death before it answers,
for whatever reason, is reported as such; a worker past its deadline is
killed with its whole process group.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from . import clock, cuda_ipc, protocol, reaper, scratch, triton_key
from .disk_watch import DiskWatch
from .hardening import protect_judge
from .worker_exit import CappedStream, describe_exit
from .errors import ProtocolError, WorkerDied, WorkerTimeout
from .sandbox import (JUDGE_ROOT, Sandbox, bwrap_prefix, detect_sandbox, give_to, new_user, pdeathsig_prefix,
                      readonly_plan, sandbox_for, unshare_prefix)

__all__ = ["JUDGE_ROOT", "INHERITED_ENV", "Limits", "Sandbox", "WorkerProcess", "detect_sandbox", "sandbox_for",
           "describe_exit"]

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
    idle_timeout_s: float = Field(20.0, gt=0, description="on a GPU, one case without a sign of progress (no "
                                  "answer, no kernel compiling: judge.progress)")
    interpreter_budget_s: float = Field(20.0, gt=0, description="one case under Triton's interpreter: a case "
                                        "whose launches would need longer is not run on CPU (no verdict)")
    total_timeout_s: float = Field(900.0, gt=0, description="the whole submission")
    host_memory_bytes: int = Field(16 << 30, gt=0, description="host memory of a worker")
    gpu_memory_fraction: float = Field(0.5, gt=0, le=1, description="of the GPU, for a CUDA worker")
    output_cap_bytes: int = Field(64 << 10, gt=0, description="stdout and stderr kept, each")
    disk_bytes: int = Field(2 << 30, gt=0, description="on disk, under a worker's scratch folder and its "
                            "grading's Triton cache together (judge.disk_watch); also each file's limit")


# Every worker is started from this one long-lived thread: bwrap's
# --die-with-parent kills the worker when the *thread* that started it ends
# (PR_SET_PDEATHSIG), and a grading starts workers from short-lived threads.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-spawner")


class KillGate:
    """Kills pass side by side; a grading stepping aside for another's
    timing (judge.gpu_lock) closes the gate (`with KILLS:`), which waits for
    the kills under way: a CUDA process's teardown is GPU work, and must not
    land in the middle of the other grading's timed calls."""

    def __init__(self):
        self._cond = threading.Condition()
        self._inside = 0
        self._closed = False

    @contextlib.contextmanager
    def passing(self):
        with self._cond:
            self._cond.wait_for(lambda: not self._closed)
            self._inside += 1
        try:
            yield
        finally:
            with self._cond:
                self._inside -= 1
                self._cond.notify_all()

    def __enter__(self):
        with self._cond:
            self._closed = True
            self._cond.wait_for(lambda: self._inside == 0)
        return self

    def __exit__(self, *exc) -> None:
        with self._cond:
            self._closed = False
            self._cond.notify_all()


KILLS = KillGate()


def _popen(cmd: list[str], **kwargs) -> subprocess.Popen:
    def start() -> subprocess.Popen:
        with reaper.spawning():  # registered before any reap can see it
            proc = subprocess.Popen(cmd, **kwargs)
            reaper.started(proc.pid)
            return proc
    return _SPAWNER.submit(start).result()


def _reader(sock: socket.socket):
    """A buffered file reading `sock`, which closes with it."""
    file = sock.makefile("rb")
    sock.close()  # the descriptor stays open until the file closes
    return file


class WorkerProcess:
    """One worker child, serving requests for one submission."""

    def __init__(self, submission: Path, device: str, limits: Limits, hidden: list[Path] = (),
                 triton_cache: Path | None = None):
        self.submission = Path(submission)
        # Shared by the workers of one grading (one submission, so nothing
        # crosses between submissions); else a folder of the worker's own.
        self.triton_cache = Path(triton_cache) if triton_cache else None
        self.device = device
        self.limits = limits
        self.hidden = [Path(p) for p in hidden]
        self.sandbox = sandbox_for(device)
        self.scratch = Path(scratch.folder("judge-worker-"))
        # A judge run as root: the user this worker switches to (judge.worker
        # .privileges). One per grading, the owner of its shared Triton cache
        # (judge.grader.shared_cache); else one of the worker's own.
        self.user: int | None = None
        if self.sandbox.own_user:
            owner = self.triton_cache.stat().st_uid if self.triton_cache else 0
            self.user = owner if owner != 0 else new_user()
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.stdout: CappedStream | None = None
        self.stderr: CappedStream | None = None
        self.can_share = True  # until CUDA IPC fails once with this worker (judge.cuda_ipc)
        self.importing = False  # the worker said it is done with its own start and imports the file
        self._ahead: tuple[dict, float] | None = None  # a request sent ahead (send_ahead) and when
        self.disk: DiskWatch | None = None  # its folders' size, once started (judge.disk_watch)

    # --- lifecycle -------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        tmp = self.scratch / "tmp"
        tmp.mkdir(exist_ok=True)
        env.update(
            HOME=str(self.scratch),
            TMPDIR=str(tmp),
            TRITON_CACHE_DIR=str(self.triton_cache or self.scratch / "triton-cache"),
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONUNBUFFERED="1",
            PYTHONPATH=os.pathsep.join(p for p in (str(JUDGE_ROOT), env.get("PYTHONPATH")) if p),
        )
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.update(triton_key.worker_env(self.device))
        if self.device == "cuda":
            from . import warm_cache
            env[warm_cache.NATIVE_SEED_ENV] = warm_cache.native_hashes()
        return env

    def _worker_command(self, fd: int) -> list[str]:
        return [sys.executable, "-m", "judge.worker", "--fd", str(fd),
                "--memory-limit", str(self.limits.host_memory_bytes), "--file-limit", str(self.limits.disk_bytes),
                "--memory-rlimit", "AS" if self.device == "cpu" else "DATA", "--device", self.device,
                *(["--user", str(self.user)] if self.user is not None else [])]

    def start(self) -> None:
        target = self.scratch / "submission.py"
        shutil.copyfile(self.submission, target)
        if self.triton_cache is None and self.device == "cuda":
            from . import warm_cache
            warm_cache.fill(self.scratch / "triton-cache")  # the judge's seed (judge.warm_cache)
        env = self._env()
        if self.user is not None:
            give_to(self.scratch, self.user)
        protect_judge()
        parent_sock, child_sock = socket.socketpair()
        cmd = self._worker_command(child_sock.fileno())
        if self.sandbox.tool == "bwrap":
            cmd = bwrap_prefix(self.scratch, self.hidden, pid=self.sandbox.pid_namespace,
                                writable=[self.triton_cache] if self.triton_cache else []) + cmd
        elif self.sandbox.tool == "unshare":
            jailed = self.sandbox.filesystem != "shared"
            if jailed:  # the worker builds it first thing (judge.worker.jail)
                plan = readonly_plan(self.scratch, self.hidden, [self.triton_cache] if self.triton_cache else [])
                cmd += ["--jail", json.dumps(plan)]
            cmd = unshare_prefix(shutil.which("unshare") or "unshare", pid=self.sandbox.pid_namespace,
                                  mount=jailed) + cmd
        if self.sandbox.tool != "bwrap":
            cmd = [*pdeathsig_prefix(), *cmd]
        reaper.become_subreaper()
        # Standard output and error are sockets, not pipes: a pipe's read end
        # is one open("/proc/self/fd/1") away for the worker, and what a
        # kernel prints goes there (judge.worker.courier keeps the worker
        # from replacing descriptor 1 itself). A socket cannot be reopened
        # that way, and its own end receives nothing the worker writes.
        streams = [socket.socketpair() for _ in range(2)]
        for judge_end, _ in streams:
            judge_end.shutdown(socket.SHUT_WR)
        try:
            self.proc = _popen(
                cmd, cwd=self.scratch, env=env, stdin=subprocess.DEVNULL,
                stdout=streams[0][1].fileno(), stderr=streams[1][1].fileno(), pass_fds=(child_sock.fileno(),),
                start_new_session=True,
            )
        finally:
            child_sock.close()
            for _, worker_end in streams:
                worker_end.close()
        self.sock = parent_sock
        self.stdout, self.stderr = (CappedStream(_reader(judge_end), self.limits.output_cap_bytes)
                                    for judge_end, _ in streams)
        self.disk = DiskWatch([self.scratch, self.triton_cache], self.limits.disk_bytes, self.kill).start()

    def kill(self) -> None:
        if self.proc is None:
            return
        with KILLS.passing():
            self._kill()

    def _kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable child
            pass
        # Children the submission left behind in the same group die too, and
        # any that left the group (setsid) and reparented to the judge.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        reaper.finished(self.proc.pid)
        reaper.reap()

    def close(self) -> None:
        """Kill the worker and its process group, and remove its scratch
        folder. No polite exit first: its state is disposable, and a CUDA
        process's own teardown takes seconds."""
        if self.disk is not None:
            self.disk.stop()
        self.kill()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        shutil.rmtree(self.scratch, ignore_errors=True)

    @contextlib.contextmanager
    def paused(self):
        """The worker and its process group stopped (SIGSTOP) meanwhile: it
        cannot free memory the judge is copying from. (A kernel of its
        still running may write there: the judge checks what it copied.)"""
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, signal.SIGSTOP)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            yield
        finally:
            try:
                os.killpg(self.proc.pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass

    def __enter__(self) -> "WorkerProcess":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- requests --------------------------------------------------------------

    def send_ahead(self, header: dict) -> None:
        """Send a request whose answer a later request(header, ...) awaits:
        the worker starts on it as soon as it is ready (a load sent while
        the judge still imports torch). A worker already gone is found by
        that request."""
        assert self.sock is not None and self._ahead is None
        with contextlib.suppress(OSError):
            protocol.send(self.sock, header)
            self._ahead = (header, clock.now())

    def request(self, header: dict, timeout_s: float, max_blob_bytes: int,
                share: bool = False, watch=None) -> tuple[dict, list]:
        """Send one request (unless send_ahead sent this very header: its
        time limit then runs from then) and wait for its answer. Raises WorkerDied,
        WorkerTimeout (after killing the worker) or ProtocolError (likewise).
        `share`: a CUDA worker may hand its buffers over by CUDA IPC
        (judge.cuda_ipc); they come back as uint8 CUDA tensors, the judge's
        own copies, instead of bytearrays. `watch`: a judge.progress.CompileWatch;
        the answer is then also awaited no longer than its deadline (no
        sign of progress for a while)."""
        assert self.sock is not None and self.proc is not None
        deadline = clock.now() + timeout_s  # a pause of this grading's workers does not count (judge.clock)
        share = share and self.device == "cuda" and self.can_share
        ahead, self._ahead = self._ahead, None
        assert ahead is None or ahead[0] == header, "a request was sent ahead and another one asked"
        try:
            if ahead is not None:
                deadline = ahead[1] + timeout_s
            else:
                protocol.send(self.sock, dict(header, share=True) if share else header)
            hard = deadline
            waited = (lambda: min(hard, watch.deadline())) if watch is not None else deadline
            reply, blobs = protocol.recv(self.sock, waited, max_blob_bytes, now=clock.now)
            if header.get("op") == "load" and reply.get("milestone") == "importing" and not blobs \
                    and not self.importing:
                self.importing = True  # the worker's own start is done: from here on, the file's doing
                reply, blobs = protocol.recv(self.sock, waited, max_blob_bytes, now=clock.now)
            if "shared" not in reply:
                return reply, blobs
            if not share or blobs:
                raise ProtocolError("shared buffers the judge did not ask for")
            try:
                return reply, cuda_ipc.fetch(reply.pop("shared"), max_blob_bytes, paused=self.paused)
            except cuda_ipc.Unavailable:
                # Not a verdict: this worker's buffers come by the socket from now on.
                self.can_share = False
                protocol.send(self.sock, {"op": "bytes"})
                again, blobs = protocol.recv(self.sock, deadline, max_blob_bytes, now=clock.now)
                if again.get("status") != "ok":
                    raise ProtocolError("the worker did not resend its buffers") from None
                return reply, blobs
        except (EOFError, BrokenPipeError, ConnectionResetError):
            try:
                code = self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
                code = self.proc.returncode
            if self.disk is not None and self.disk.exceeded:
                raise WorkerDied(f"the worker's folders held {self.disk.exceeded}, past the judge's limit of "
                                 f"{self.limits.disk_bytes / 2**30:.1f} GiB on disk: it was killed", code) from None
            raise WorkerDied(describe_exit(code, wrapped=self.sandbox.tool is not None), code) from None
        except WorkerTimeout:
            self.kill()
            if watch is not None and clock.now() < deadline:
                raise WorkerTimeout(watch.describe()) from None
            raise WorkerTimeout(f"no answer within {timeout_s:.0f} s; the worker was killed") from None
        except ProtocolError:
            self.kill()
            raise

    def request_timed(self, header: dict, call_seed: int, timeout_s: float,
                      max_blob_bytes: int, keep_buffers: bool = True,
                      share: bool = False, before_go=None) -> tuple[dict, list, float | None]:
        """A timing request in three steps, so that the judge's own clock
        brackets the timed calls alone: the worker warms up and says so; the
        judge sends the timed calls' seed (none can start before it) and
        starts its clock; the worker times and reports; the clock stops; the
        buffers follow (unless not `keep_buffers`). `before_go()`, when
        given, runs between warm-up and go (the grader waits there for the
        grading's other workers to be gone). Returns (reply, blobs, seconds
        between go and report); the seconds are None when the worker failed
        before timing."""
        asked = time.monotonic()
        deadline = asked + timeout_s
        header = dict(header, await_go=True)
        header.pop("call_seed", None)
        warm, _ = self.request(header, timeout_s, max_blob_bytes=0)
        if warm.get("status") != "warm":
            return warm, [], None
        if before_go is not None:
            before_go()
        started = time.monotonic()
        reply, _ = self.request({"op": "go", "call_seed": int(call_seed)}, max(deadline - started, 1.0),
                                max_blob_bytes=0)
        window_s = time.monotonic() - started
        if reply.get("status") != "ok":
            return reply, [], window_s
        sent = time.monotonic()
        done, blobs = self.request({"op": "buffers", "discard": not keep_buffers}, max(deadline - sent, 1.0),
                                   max_blob_bytes, share=share and keep_buffers)
        # The judge's clock on each step (phase_seconds); the worker's own
        # figures ride along as a diagnosis only.
        clocks = {"warm_up": round(started - asked, 3), "window": round(window_s, 3),
                  "buffers": round(time.monotonic() - sent, 3)}
        return dict(reply, buffers_status=done.get("status"), clocks=clocks), blobs, window_s

    def output(self) -> tuple[str, str]:
        """What the worker printed; complete once it has been closed (before
        that, waits up to 2 s per stream for more)."""
        return (self.stdout.text() if self.stdout else "", self.stderr.text() if self.stderr else "")
