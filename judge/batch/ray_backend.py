"""The Ray backend (`judge batch --ray auto|ADDRESS`, the optional `ray`
extra): one Ray task per submission, asking for one GPU (none on CPU), each
grading exactly as a lane does (judge.batch.lane.grade_request) on whichever
node Ray places it; the file travels with the task. Results come back to the
driver, the store's one writer, as they finish."""

from __future__ import annotations

import os
import tempfile
from typing import Iterator

from ..errors import UsageError
from .lanes import Event, Job


def _grade_shipped(job_key: str, name: str, source: bytes, options: dict) -> dict:
    from judge.batch.lane import grade_request
    # A private folder per task: the worker hides the file's folder, so no
    # other task's file is in reach.
    folder = tempfile.mkdtemp(prefix="judge-ray-")
    path = os.path.join(folder, name)
    with open(path, "wb") as fh:
        fh.write(source)
    try:
        reply = grade_request({"job": job_key, "path": path, "options": options})
    finally:
        try:
            os.remove(path)
            os.rmdir(folder)
        except OSError:
            pass
    import socket
    # Ray gives a task with num_gpus=1 its GPU through CUDA_VISIBLE_DEVICES.
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    reply["node"] = socket.gethostname() + (f"/gpu{gpu}" if gpu else "")
    return reply


class RayPool:
    def __init__(self, address: str, device: str):
        try:
            import ray
        except ImportError:
            raise UsageError("--ray needs Ray: pip install 'tritonjudge[ray]'") from None
        self.ray = ray
        self.started_here = False
        if not ray.is_initialized():
            path = os.pathsep.join(p for p in (_judge_root(), os.environ.get("PYTHONPATH")) if p)
            ray.init(address=None if address == "local" else address, log_to_driver=False,
                     include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
            self.started_here = True
        self.remote = ray.remote(num_gpus=1 if device == "cuda" else 0, max_retries=1)(_grade_shipped)
        self.names = ["ray"]

    def _submit(self, job: Job):
        return self.remote.remote(job.key, job.path.name, job.source or job.path.read_bytes(), job.options)

    def call(self, index: int, job: Job) -> Event:
        return self._event(job, self.ray.get(self._submit(job)))

    def _event(self, job: Job, reply: dict) -> Event:
        return Event("done", job, f"ray:{reply.get('node', '?')}", reply.get("result"), reply.get("error"),
                     reply.get("wall_s"))

    def stream(self, jobs: list[Job]) -> Iterator[Event]:
        pending = {}
        for job in jobs:
            pending[self._submit(job)] = job
            yield Event("start", job, "ray")
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    reply = self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a task that died: recorded, retried next run
                    reply = {"error": f"Ray task failed: {type(exc).__name__}: {exc}"}
                yield self._event(job, reply)

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()


def _judge_root() -> str:
    from ..isolation import JUDGE_ROOT
    return str(JUDGE_ROOT)
