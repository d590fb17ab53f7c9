"""Lanes: one per GPU pinned by CUDA_VISIBLE_DEVICES, N on CPU; a lane
reports a request it cannot grade as an error, and a lane that died is
started again."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.batch.lanes import Job, LanePool, lane_specs, visible_gpus
from judge.batch.run import failure_result
from judge.errors import UsageError


def test_lane_specs(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # every GPU of the host visible
    gpu = lane_specs("cuda", [0, 2], 5)
    assert [(s.name, s.env) for s in gpu] == [("gpu0", {"CUDA_VISIBLE_DEVICES": "0"}),
                                             ("gpu2", {"CUDA_VISIBLE_DEVICES": "2"})]
    assert [s.name for s in lane_specs("cpu", [], 2)] == ["cpu0", "cpu1"]
    assert lane_specs("cpu", [], 0)[0].env == {"CUDA_VISIBLE_DEVICES": ""}
    assert visible_gpus("0, 2") == [0, 2]


@pytest.mark.slow
def test_lane_errors_and_restart(tmp_path):
    pool = LanePool(lane_specs("cpu", [], 1), log=tmp_path / "lanes.log")
    job = Job("x", tmp_path / "missing.py", {"challenge": "matrix_multiplication", "device": "cpu"})
    try:
        first = pool.call(0, job)
        assert first.result is None and "no such file" in first.error
        pool.lanes[0].proc.kill()  # a lane that died between two files
        pool.lanes[0].proc.wait()
        second = pool.call(0, job)
        assert "no such file" in second.error and pool.lanes[0].proc.poll() is None
    finally:
        pool.close()
    recorded = failure_result(job, second.error, job.options)
    assert recorded["verdict"] == "internal_error" and recorded["submission"] == str(Path(job.path))


def test_every_lane_gets_a_file_before_any_lane_takes_its_next(tmp_path):
    """A lane takes its next file while it grades one (its workers start
    early): the first lane's thread had taken the second file of a class of
    two that way, and the second lane idled."""
    import threading
    import time

    from judge.batch.lanes import Event

    pool = LanePool.__new__(LanePool)
    pool.lanes = [type("Lane", (), {"spec": type("Spec", (), {"name": f"cpu{i}"})()})() for i in range(2)]
    both_started = threading.Barrier(2, timeout=10)

    def call(index, job, following=None):
        both_started.wait()  # each lane must hold a file at once
        time.sleep(0.01)
        return Event("done", job, pool.lanes[index].spec.name, {"verdict": "accepted"}, None, 0.0)

    pool.call = call
    jobs = [Job(name, tmp_path / f"{name}.py", {}) for name in ("a", "b")]
    done = [event for event in pool.stream(jobs) if event.kind == "done"]
    assert sorted((e.job.key, e.lane) for e in done) == [("a", "cpu0"), ("b", "cpu1")]


def test_lanes_keep_to_the_gpus_this_process_may_use(monkeypatch):
    """--gpus counts as torch does: under CUDA_VISIBLE_DEVICES=2,3 (a
    scheduler's grant), GPU 0 is the host's 2, and a lane pinned to it says 2."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 3")
    specs = lane_specs("cuda", [0, 1], 1, per_gpu=2, lock_folder=Path("/locks"))
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["2", "2", "3", "3"]
    assert [s.env["JUDGE_GPU_LOCK"] for s in specs] == ["/locks#2", "/locks#2", "/locks#3", "/locks#3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5d2c")
    assert lane_specs("cuda", [0], 1)[0].env == {"CUDA_VISIBLE_DEVICES": "GPU-5d2c"}
    with pytest.raises(UsageError, match="no GPU 1"):
        lane_specs("cuda", [1], 1)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert lane_specs("cuda", [3], 1)[0].env == {"CUDA_VISIBLE_DEVICES": "3"}


def test_cuda_visible_devices_is_read_in_one_place(monkeypatch):
    """judge.cuda_visible: the lock's GPU name, NVML's handle and the
    lanes' pinning all read the variable through it."""
    from judge import cuda_visible
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert cuda_visible.entries() is None and cuda_visible.entry(2) == "2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", " 5, ,GPU-5d2c ")
    assert cuda_visible.entries() == ["5", "GPU-5d2c"]
    assert [cuda_visible.entry(g) for g in (0, 1, 2, -1)] == ["5", "GPU-5d2c", None, None]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # every GPU hidden
    assert cuda_visible.entries() == [] and cuda_visible.entry(0) is None
