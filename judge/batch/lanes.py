"""Lanes: where submissions are graded, side by side. A lane is a child
process (judge.batch.lane) grading one file at a time; on a GPU host there
are one or more lanes per GPU, pinned with CUDA_VISIBLE_DEVICES; lanes that
share a GPU run their cases side by side and time alone (judge.gpu_lock),
so a submission is timed with nothing else running on its GPU. Results come
back to the batch process, the store's one writer, as events on a queue."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .. import cuda_visible
from ..errors import UsageError
from ..gpu_lock import gpu_name
from ..isolation import JUDGE_ROOT


@dataclass
class Job:
    key: str  # the submission id (or "drift:start"...)
    path: Path  # the file a lane grades
    options: dict  # GradeOptions as JSON
    source: bytes = b""  # for backends that ship the file (Ray)


@dataclass
class Event:
    kind: str  # "start" or "done"
    job: Job
    lane: str
    result: dict | None = None
    error: str | None = None
    wall_s: float | None = None


@dataclass
class LaneSpec:
    name: str  # "cpu0", "gpu1"...
    env: dict = field(default_factory=dict)  # overrides, e.g. CUDA_VISIBLE_DEVICES


def lane_specs(device: str, gpus: list[int], cpu_lanes: int, per_gpu: int = 1, lock_folder: Path | None = None,
               gpu_memory_fraction: float | None = None) -> list[LaneSpec]:
    """One lane per GPU, or `per_gpu` lanes sharing it, each worker then held
    to `gpu_memory_fraction` of it; every lane of a GPU holds its lock
    (judge.gpu_lock, in `lock_folder`), which other gradings on that GPU
    hold too. CPU lanes otherwise."""
    if device == "cuda":
        specs = []
        for g in gpus:
            for i in range(max(1, per_gpu)):
                env = {"CUDA_VISIBLE_DEVICES": as_visible(g)}
                if lock_folder is not None:
                    env["JUDGE_GPU_LOCK"] = f"{lock_folder}#{gpu_name(env['CUDA_VISIBLE_DEVICES'])}"
                if per_gpu > 1 and gpu_memory_fraction:
                    env["JUDGE_GPU_MEMORY_FRACTION"] = str(gpu_memory_fraction)
                specs.append(LaneSpec(f"gpu{g}" if per_gpu <= 1 else f"gpu{g}.{i}", env))
        return specs
    return [LaneSpec(f"cpu{i}", {"CUDA_VISIBLE_DEVICES": ""}) for i in range(max(1, cpu_lanes))]


# The least GPU memory a case worker of a shared GPU is left (its cap is
# 90% of the GPU over every case worker of it): room for a timing's three
# input sets of the largest case (matrix multiplication: 1.3 GB) and more.
MIN_WORKER_SHARE_BYTES = 4 << 30


def auto_lanes_per_gpu(gpus: int, gpu_bytes: int | None = None) -> int:
    """Gradings sharing each GPU when not asked: compiling is CPU work, so
    another grading per GPU pays for every four cores or so, up to four
    (the H100's 16 cores, the 20 matrix multiplication examples: 7.4 s per
    file in two lanes, 5.2-5.5 s in three, 4.8-5.1 s in four of three
    workers: bench/results/cost_workers_h100.md), and no more than leave
    each case worker MIN_WORKER_SHARE_BYTES of a GPU of `gpu_bytes`."""
    cores = os.cpu_count() or 1
    lanes = max(1, min(4, cores // max(1, gpus) // 4))
    while lanes > 1 and gpu_bytes is not None:
        workers = workers_per_grading(lanes * max(1, gpus))
        if 0.9 * gpu_bytes / (lanes * (workers or 1)) >= MIN_WORKER_SHARE_BYTES:
            break
        lanes -= 1
    return lanes


def workers_per_grading(lanes: int) -> int | None:
    """Case workers of each grading when `lanes` gradings share this host
    and none was asked: three quarters of the cores shared out (each lane
    also starts its next file's workers, and times in a worker of its
    own), at most four each. One lane: None, the grading's own default
    (judge.slots.default_workers)."""
    if lanes <= 1:
        return None
    return max(1, min(4, (os.cpu_count() or 1) * 3 // 4 // lanes))


def smallest_gpu_bytes(gpus: list[int]) -> int | None:
    """The memory of the smallest of these GPUs (None without CUDA)."""
    import torch
    if not gpus or not torch.cuda.is_available():
        return None
    return min(torch.cuda.get_device_properties(g).total_memory for g in gpus)


def as_visible(g: int) -> str:
    """GPU `g` as torch numbers them here, in CUDA_VISIBLE_DEVICES's terms
    for a lane: the g-th entry of this process's own CUDA_VISIBLE_DEVICES
    where it is set (a scheduler that gave this user GPUs 2 and 3 has their
    lanes on 2 and 3, not on 0 and 1)."""
    visible = cuda_visible.entry(g)
    if visible is None:
        listed = cuda_visible.entries() or []
        raise UsageError(f"--gpus: no GPU {g} among CUDA_VISIBLE_DEVICES={','.join(listed)} ({len(listed)} visible)")
    return visible


def visible_gpus(spec: str | None) -> list[int]:
    """`--gpus all` (or nothing): every GPU torch sees; `0,2`: those."""
    if spec and spec != "all":
        return [int(part) for part in spec.split(",") if part.strip()]
    import torch
    return list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []


class LaneProcess:
    def __init__(self, spec: LaneSpec, log: Path | None = None):
        self.spec = spec
        self.log = log
        self.proc: subprocess.Popen | None = None
        self.closed = False  # by the batch: no more starts (an interrupted grading is not retried)
        self.starting = threading.Lock()  # a start and the batch's close never cross

    def start(self) -> None:
        env = {**os.environ, **self.spec.env}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(JUDGE_ROOT), env.get("PYTHONPATH")) if p)
        # The lane's own stderr (library warnings) goes to the log, never over the display.
        log = open(self.log, "a") if self.log else subprocess.DEVNULL
        try:
            with self.starting:
                # Closed meanwhile (Ctrl-C): a lane started now was never stopped, and
                # died with the batch (SIGKILL) leaving its workers' folders behind.
                if self.closed:
                    raise RuntimeError(f"lane {self.spec.name} is closed")
                self.proc = subprocess.Popen([sys.executable, "-m", "judge.batch.lane"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1, env=env)
        finally:
            if log is not subprocess.DEVNULL:
                log.close()
        ready = self._read()
        if not ready or not ready.get("ready"):
            raise RuntimeError(f"lane {self.spec.name} did not start")

    def _read(self) -> dict | None:
        line = self.proc.stdout.readline() if self.proc and self.proc.stdout else ""
        return json.loads(line) if line.strip() else None

    def grade(self, job: Job, following: Job | None = None) -> dict:
        """The lane's reply; a lane that died is started again once and the
        job retried, then the death is the reply's error."""
        for attempt in range(2):
            if self.closed:
                break
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            try:
                request = {"job": job.key, "path": str(job.path), "options": job.options}
                if following is not None:
                    request["next"] = {"path": str(following.path), "options": following.options}
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
                reply = self._read()
            except (BrokenPipeError, OSError, ValueError):
                reply = None
            if reply is not None:
                return reply
            self.stop()
        return {"job": job.key, "error": f"lane {self.spec.name} died twice while grading this file"}

    def stop(self, now: bool = False) -> None:
        """End the lane: its stdin closed, it ends once its grading is over
        (now: SIGTERM at once, its grading unwinds and cleans up)."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            if now:
                self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.terminate()  # its grading unwinds and removes its workers' folders
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None


class LanePool:
    """Lanes on this machine. `call` grades one job on one lane (the drift
    check); `stream` grades jobs on every lane and yields events as they
    come, in the caller's thread (the one writer)."""

    def __init__(self, specs: list[LaneSpec], log: Path | None = None):
        self.lanes = [LaneProcess(spec, log) for spec in specs]

    @property
    def names(self) -> list[str]:
        return [lane.spec.name for lane in self.lanes]

    def call(self, index: int, job: Job, following: Job | None = None) -> Event:
        lane = self.lanes[index]
        reply = lane.grade(job, following)
        return Event("done", job, lane.spec.name, reply.get("result"), reply.get("error"), reply.get("wall_s"))

    def stream(self, jobs: list[Job]) -> Iterator[Event]:
        todo: queue.Queue = queue.Queue()
        for job in jobs:
            todo.put(job)
        events: queue.Queue = queue.Queue()

        def take() -> Job | None:
            try:
                return todo.get_nowait()
            except queue.Empty:
                return None
        # Each lane's first file is handed out before any lane starts: the
        # first lane's thread took the second file too, as its next, and a
        # class of two files was graded by one lane while the other idled.
        firsts = [take() for _ in self.lanes]

        def work(index: int) -> None:
            lane = self.lanes[index]
            job = firsts[index]
            while job is not None:
                # The lane's next file is taken now, so its workers can start
                # while this one is graded (the order across lanes stays fair).
                following = take()
                events.put(Event("start", job, lane.spec.name))
                try:
                    events.put(self.call(index, job, following))
                except Exception as exc:  # noqa: BLE001 - a lane that cannot start
                    events.put(Event("done", job, lane.spec.name, error=f"{type(exc).__name__}: {exc}"))
                job = following
            events.put(None)

        threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(len(self.lanes))]
        for t in threads:
            t.start()
        finished = 0
        while finished < len(threads):
            event = events.get()
            if event is None:
                finished += 1
            else:
                yield event

    def close(self, now: bool = False) -> None:
        for lane in self.lanes:
            with lane.starting:
                lane.closed = True
        for lane in self.lanes:
            lane.stop(now)
