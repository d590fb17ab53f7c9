"""Several gradings on one GPU (judge batch --lanes-per-gpu): the lock that
lets their cases run together and each timing alone, the lanes that share a
GPU, and each worker's share of its memory."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest

from judge.batch import lane as lane_mod
from judge.batch.lanes import auto_lanes_per_gpu, lane_specs, workers_per_grading
from judge.slots import default_workers
from judge.batch.run import gpu_share
from judge.gpu_lock import GpuLock, from_spec


def test_cases_share_the_gpu_and_a_timing_is_alone(tmp_path):
    lock = GpuLock(tmp_path, "0")
    events: list[tuple[float, str]] = []
    first_in = threading.Event()
    timing_waits = threading.Event()

    def cases(name: str, hold: float, after=None):
        if after is not None:
            after.wait()
            time.sleep(0.1)  # the timing has closed the gate by now
        with lock.shared():
            events.append((time.monotonic(), f"{name} in"))
            first_in.set()
            time.sleep(hold)
            events.append((time.monotonic(), f"{name} out"))

    def timing():
        first_in.wait()
        time.sleep(0.05)
        timing_waits.set()
        with lock.exclusive(waited := {}):
            events.append((time.monotonic(), "timing in"))
            time.sleep(0.2)
            events.append((time.monotonic(), "timing out"))
        assert waited["gpu_wait_timing"] > 0.1

    threads = [threading.Thread(target=cases, args=("a", 0.5)), threading.Thread(target=timing),
               threading.Thread(target=cases, args=("late", 0.1, timing_waits))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    order = [what for _, what in sorted(events)]
    # The timing waited for the cases under way, and a grading that came
    # while it waited did not start its cases before it.
    assert order.index("timing in") > order.index("a out")
    assert order.index("late in") > order.index("timing out")


def test_cases_overlap_each_other(tmp_path):
    lock = GpuLock(tmp_path, "1")
    inside = []
    peak = [0]
    guard = threading.Lock()

    def cases():
        with lock.shared():
            with guard:
                inside.append(1)
                peak[0] = max(peak[0], len(inside))
            time.sleep(0.3)
            with guard:
                inside.pop()

    threads = [threading.Thread(target=cases) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert peak[0] == 3


def test_lock_spec():
    assert from_spec(None) is None
    lock = from_spec("/tmp/x#3")
    assert lock.lock.name == "gpu3.lock" and str(lock.folder) == "/tmp/x"


def test_lanes_that_share_a_gpu(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    specs = lane_specs("cuda", [0, 1], 1, per_gpu=2, lock_folder=tmp_path, gpu_memory_fraction=0.1)
    assert [s.name for s in specs] == ["gpu0.0", "gpu0.1", "gpu1.0", "gpu1.1"]
    assert specs[1].env == {"CUDA_VISIBLE_DEVICES": "0", "JUDGE_GPU_LOCK": f"{tmp_path}#0",
                            "JUDGE_GPU_MEMORY_FRACTION": "0.1"}
    assert lane_specs("cuda", [0], 1, per_gpu=1)[0].env == {"CUDA_VISIBLE_DEVICES": "0"}
    # A lane alone on its GPU holds the lock too (other batches, `judge submit`), with the whole GPU.
    assert lane_specs("cuda", [0], 1, per_gpu=1, lock_folder=tmp_path, gpu_memory_fraction=0.1)[0].env == \
        {"CUDA_VISIBLE_DEVICES": "0", "JUDGE_GPU_LOCK": f"{tmp_path}#0"}


def test_workers_of_lanes_sharing_a_gpu_fit_in_it():
    assert gpu_share({"workers": 4}, 1) is None
    share = gpu_share({"workers": 4}, 2)
    assert 0 < share * 2 * 4 <= 0.9


def test_automatic_lanes_per_gpu(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert auto_lanes_per_gpu(1) == 4 and auto_lanes_per_gpu(2) == 2
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert auto_lanes_per_gpu(1) == 2
    monkeypatch.setattr("os.cpu_count", lambda: 128)
    assert auto_lanes_per_gpu(1) == 4
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert auto_lanes_per_gpu(1) == 1


def test_automatic_lanes_leave_each_worker_enough_gpu_memory(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    gib = 1 << 30
    assert auto_lanes_per_gpu(1, 80 * gib) == 4  # the H100: 4 lanes of 3 workers, 6 GB each
    assert auto_lanes_per_gpu(1, 24 * gib) == 1  # 2 lanes of 4 would leave 2.7 GB each
    assert auto_lanes_per_gpu(1, 40 * gib) == 2  # 4.5 GB each
    for lanes, gpu in ((auto_lanes_per_gpu(1, g * gib), g) for g in (16, 24, 40, 48, 80, 141)):
        if lanes > 1:
            assert 0.9 * gpu * gib / (lanes * workers_per_grading(lanes)) >= 4 * gib


def test_workers_of_a_grading_by_device_and_lanes(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert default_workers("cuda") == 8 and default_workers("cpu") == 4
    assert workers_per_grading(1) is None and workers_per_grading(4) == 3 and workers_per_grading(3) == 4
    assert workers_per_grading(8) == 1
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert default_workers("cuda") == 2 and default_workers("cpu") == 2 and workers_per_grading(4) == 1
    assert default_workers("cuda", cores=6) == 4


def test_a_lane_applies_its_share_of_the_gpu(monkeypatch):
    request = {"path": "x.py", "options": {"challenge": "relu", "device": "cuda"}}
    monkeypatch.delenv("JUDGE_GPU_LOCK", raising=False)
    alone = lane_mod.options_for(request)
    assert alone.gpu_lock is None and alone.limits.gpu_memory_fraction == 0.5
    monkeypatch.setenv("JUDGE_GPU_LOCK", "/tmp/locks#0")
    monkeypatch.setenv("JUDGE_GPU_MEMORY_FRACTION", "0.11")
    shared = lane_mod.options_for(request)
    assert shared.gpu_lock == "/tmp/locks#0" and shared.limits.gpu_memory_fraction == 0.11


@pytest.mark.gpu
def test_two_lanes_share_one_gpu(tmp_path):
    """Four matrix multiplication files in two lanes on one GPU: each gets
    its expected verdict, the accepted ones a latency near their
    one-lane grading's."""
    import shutil

    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from judge.batch.progress import Display
    from judge.batch.run import BatchOptions, run_batch
    from judge.batch.store import Store
    from tests.helpers import ROOT
    folder = tmp_path / "class"
    folder.mkdir()
    files = {"grid_2d.py": "accepted", "grouped_1d.py": "accepted"}
    for name in files:
        shutil.copy(ROOT / "submissions" / "correct" / name, folder / name)
    shutil.copy(ROOT / "submissions" / "wrong" / "missing_mask.py", folder / "missing_mask.py")
    files["missing_mask.py"] = "wrong_answer"

    run_batch(BatchOptions(folder=folder, out=tmp_path / "out", device="cuda", lanes_per_gpu=2, drift="none"),
              Display)
    store = Store.open_existing(tmp_path / "out")
    try:
        rows = {r["id"]: r for r in store.rows()}
    finally:
        store.close()
    for name, verdict in files.items():
        assert rows[name.removesuffix(".py")]["verdict"] == verdict, rows[name.removesuffix(".py")]
    latencies = [rows[n.removesuffix(".py")]["latency_ms"] for n, v in files.items() if v == "accepted"]
    assert all(lat and 5 < lat < 20 for lat in latencies), latencies


@pytest.mark.gpu
def test_a_timing_does_not_wait_for_a_looping_grading(tmp_path):
    """A grading whose solve loops forever holds the GPU's lock for its
    cases (60 s limit); a timing that comes meanwhile gets the GPU within
    seconds: the grading's worker is drained by the driver's checkpoint
    lock and stopped while the timing holds the GPU, then goes on, and its
    time limit does not count the pause (still time_limit_exceeded)."""
    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from judge import cpu_share, gpu_pause
    from judge.grader import GradeOptions, grade
    from tests.helpers import ROOT
    if gpu_pause.driver() is None:
        pytest.skip("the driver has no checkpoint lock (CUDA 12.8+ drivers)")
    spec = f"{tmp_path / 'locks'}#0"
    lock = GpuLock(tmp_path / "locks", "0")
    found: dict = {}

    def looping():
        found["result"] = grade(ROOT / "submissions" / "faults" / "infinite_loop.py",
                                GradeOptions(device="cuda", gpu_lock=spec, workers=2))

    thread = threading.Thread(target=looping)
    thread.start()
    time.sleep(20)  # past its start and load: its first case is looping
    asked = time.monotonic()
    with lock.exclusive():
        waited = time.monotonic() - asked
        mine = gpu_pause.descendants(os.getpid())
        # Stopped, or (on a host with CPUs to spare: judge.cpu_share) locked
        # off the GPU and held off the CPUs a timing keeps.
        kept = cpu_share.reserved()
        stopped = [pid for pid in mine if _state(pid) == "T" or (kept and kept.isdisjoint(_cpus(pid)))]
        time.sleep(3)
    time.sleep(0.5)
    still = [pid for pid in gpu_pause.descendants(os.getpid()) if _state(pid) == "T"]
    thread.join(180)
    result = found["result"]
    assert waited < 10, waited
    assert stopped and not still, (mine, stopped, still)
    assert result.verdict == "time_limit_exceeded", result.message
    assert result.phase_seconds.get("gpu_paused", 0.0) >= 3, result.phase_seconds


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return "gone"
    return stat[stat.rfind(")") + 2]


def _cpus(pid: int) -> set[int]:
    try:
        return set(os.sched_getaffinity(pid))
    except OSError:
        return set()


def test_held_early_only_while_no_timing_waits(tmp_path):
    """try_shared: the lock held at once (a grading's workers may then load
    the file while it sets up), or None while a timing holds the GPU or
    waits for it; shared(held=...) keeps that hold and frees it at the end."""
    lock = GpuLock(tmp_path, "0")
    fd = lock.try_shared()
    assert fd is not None
    other = GpuLock(tmp_path, "0").try_shared()  # cases beside cases
    assert other is not None
    GpuLock.free(other)
    timing_in = threading.Event()

    def timing():
        with lock.exclusive():
            timing_in.set()
            time.sleep(0.3)

    thread = threading.Thread(target=timing)
    thread.start()
    time.sleep(0.2)
    assert not timing_in.is_set()  # it waits for the hold...
    assert lock.try_shared() is None  # ...with the gate closed to newcomers
    with lock.shared(waited := {}, held=fd):
        assert waited["gpu_wait_cases"] < 0.05
        assert not timing_in.is_set()
    assert timing_in.wait(5)
    assert lock.try_shared() is None  # the timing holds it
    thread.join(5)
    fd = lock.try_shared()
    assert fd is not None
    GpuLock.free(fd)


def test_default_lock_names_the_gpu_in_a_folder_of_the_users(tmp_path, monkeypatch):
    from judge.gpu_lock import default_spec, gpu_name
    monkeypatch.setenv("JUDGE_GPU_LOCKS", str(tmp_path / "locks"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert default_spec() == f"{(tmp_path / 'locks').resolve()}#0"
    assert (tmp_path / "locks").is_dir()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert default_spec().endswith("#3")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8a1f/../x")
    assert default_spec().endswith("#GPU-8a1f_.._x")  # a file name, never a path
    assert from_spec(default_spec()).lock.parent == (tmp_path / "locks").resolve()
    monkeypatch.delenv("JUDGE_GPU_LOCKS")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    import socket
    assert default_spec().startswith(str((tmp_path / "cache" / "tritonjudge" / "gpu-locks").resolve()))
    assert Path(default_spec().rpartition("#")[0]).name == gpu_name(socket.gethostname())  # a folder per machine
    # A folder that cannot be made (a file is in the way): the next place, or none.
    (tmp_path / "file").write_text("")
    assert default_spec(tmp_path / "file" / "locks") is None


@pytest.mark.gpu
def test_two_submits_at_once_take_turns_to_time(tmp_path):
    """`judge submit` takes the GPU's lock by default: two started together
    on one GPU are both accepted, timed, and one of them waited for the other
    (for its cases to end, or its timing) or stepped aside for it."""
    import json
    import subprocess
    import sys

    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from tests.helpers import ROOT
    env = dict(os.environ, JUDGE_GPU_LOCKS=str(tmp_path / "locks"))
    procs = [subprocess.Popen([sys.executable, "-m", "judge.cli", "submit", str(ROOT / "submissions" / "correct" / name),
                               "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
             for name in ("grid_2d.py", "grouped_1d.py")]
    results = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert [r["verdict"] for r in results] == ["accepted", "accepted"], [r["message"] for r in results]
    assert all(r["latency_ms"] for r in results)
    waits = [max(r["phase_seconds"].get(k, 0.0) for k in ("gpu_wait_timing", "gpu_wait_cases", "gpu_paused"))
             for r in results]
    assert max(waits) > 0, [r["phase_seconds"] for r in results]


def test_the_gpu_state_is_read_from_the_gpu_graded_on(monkeypatch):
    """NVML numbers every GPU of the host; a grading pinned by
    CUDA_VISIBLE_DEVICES (a batch lane on GPU 3) reads GPU 3's clocks."""
    from judge import gpuinfo

    class FakeNvml:
        def nvmlDeviceGetHandleByIndex(self, index):
            return ("index", index)

        def nvmlDeviceGetHandleByUUID(self, uuid):
            return ("uuid", uuid)

    nv = FakeNvml()
    monkeypatch.setattr("torch.cuda.is_initialized", lambda: False)  # no CUDA context: the environment says
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpuinfo._handle(nv, None) == ("index", 0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert gpuinfo._handle(nv, None) == ("index", 3)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5d2c")
    assert gpuinfo._handle(nv, None) == ("uuid", "GPU-5d2c")
    assert gpuinfo._handle(nv, 2) == ("index", 2)


def test_the_folders_of_gpu_locks_are_hidden_from_workers(tmp_path, monkeypatch):
    """The grading's own folder of locks and this user's (a grading with
    the lock off must not reach the others' locks either)."""
    from judge.gpu_lock import folders
    monkeypatch.setenv("JUDGE_GPU_LOCKS", str(tmp_path / "mine"))
    assert folders(f"{tmp_path / 'batch'}#1") == sorted([str(tmp_path / "batch"), str((tmp_path / "mine").resolve())])
    assert folders(None) == [str((tmp_path / "mine").resolve())]


@pytest.mark.gpu
def test_a_submission_cannot_hold_the_gpu_locks(tmp_path, monkeypatch):
    """tests/fixtures/gpu/gpu_lock_files_held.py holds every lock file it
    finds; the lock files exist, and it finds none."""
    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from judge.gpu_lock import default_spec
    from judge.grader import GradeOptions, grade
    from tests.helpers import FIXTURES
    import shutil
    import uuid
    # Outside /tmp (a worker has a /tmp of its own), where the file looks.
    folder = Path.home() / ".cache" / "tritonjudge" / f"gpu-locks-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("JUDGE_GPU_LOCKS", str(folder))
    try:
        spec = default_spec()
        GpuLock.free(from_spec(spec).try_shared())  # the gate's and the lock's files made
        assert len(list(folder.iterdir())) == 2
        fixture = FIXTURES / "gpu" / "gpu_lock_files_held.py"
        result = grade(fixture, GradeOptions(challenge="vector_addition", device="cuda", gpu_lock=spec, time=False))
        assert result.verdict == "accepted", result.message
        assert "GPU LOCK FILES HELD: 0" in result.stdout and not re.search(r"HELD: [1-9]", result.stdout), \
            result.stdout
        # (Where the workers run as a user of their own, a judge run as root, the
        # folder is out of their reach anyway; elsewhere hiding it is what keeps it.)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
