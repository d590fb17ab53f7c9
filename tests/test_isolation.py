"""The boundary between the judge and the submission: crashes, floods,
cheats that look for the answer, the secret, and the judge's own faults."""

from __future__ import annotations

import json
import os
import socket
import struct
import time
import tomllib
from pathlib import Path

import pytest

from judge import protocol
from judge.errors import ProtocolError, WorkerTimeout
from judge.grader import GradeOptions, grade
from judge.isolation import Limits, detect_sandbox
from tests.helpers import FIXTURES, HAS_CUDA, ROOT

with (FIXTURES / "expected.toml").open("rb") as fh:
    _TABLE = tomllib.load(fh)
EXPECTED = {k: v["verdict"] for k, v in _TABLE.items()}
CHALLENGE = {k: v["challenge"] for k, v in _TABLE.items() if "challenge" in v}  # else matrix multiplication

# The product's case limit (a 2-core CI machine is slow), and a third of its
# interpreter budget: a case the interpreter needs more for is reported not
# run, as a large one is, rather than run for up to 20 s (most of an honest
# fixture's grading was two or three such cases). A verdict that needs one
# to run belongs in a test of its own.
LIMITS = Limits(case_timeout_s=60, total_timeout_s=300, interpreter_budget_s=6)


SHORT = Limits(case_timeout_s=5, total_timeout_s=60)  # for the fixtures that hang on purpose
HANGS = {"kernel_hang.py"}


def _grade(name: str, **kw):
    if name in CHALLENGE:
        kw.setdefault("challenge", CHALLENGE[name])
    return grade(FIXTURES / name, GradeOptions(device="cpu", seed=7, limits=SHORT if name in HANGS else LIMITS,
                                               stop_on_wrong_answer=True, **kw))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_verdict(name, monkeypatch):
    monkeypatch.setenv("JUDGE_SECRET", "s3cr3t-value-for-tests")
    result = _grade(name)
    assert result.verdict.value == EXPECTED[name], (result.message, [(c.name, c.status) for c in result.cases])
    if name == "flood_output.py":
        # 40 MB on each stream, kept to the cap with a note of what was dropped.
        assert len(result.stdout) < 2 * LIMITS.output_cap_bytes
        assert "dropped]" in result.stdout and "dropped]" in result.stderr
    if name == "segfault.py":
        assert "SIGSEGV" in result.message
    if name == "calls_sys_exit.py":
        assert "exit" in result.message
    if name == "prints_environment.py":
        assert "ENV" in result.stdout
        assert "s3cr3t-value-for-tests" not in result.stdout
        assert "JUDGE_SECRET" not in result.stdout
        assert "submission.py" in result.stdout  # it runs on a copy, in a scratch folder
    if name == "writes_past_output.py":
        assert "outside the output" in result.message
    if name == "honest_prints_tensor.py":
        assert "a = tensor(shape=(" in result.stdout and "values not shown" in result.stdout
    if name == "modifies_input.py":
        assert "inputs must be unchanged" in result.message
    if EXPECTED[name] == "rejected":
        assert "rule:" in result.message
    if name == "escapes_through_proc.py":
        assert "ESCAPED" not in result.stderr, result.stderr


def test_sandbox_confines_the_worker(tmp_path):
    """Reads, writes and connections from the worker, against what the
    detected sandbox promises; the result says which sandbox was used."""
    canary = Path("/tmp/judge-sandbox-canary")
    escape = Path("/tmp/judge-sandbox-escape")
    canary.write_text("canary")
    escape.unlink(missing_ok=True)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 47321))
    listener.listen(4)
    try:
        result = _grade("reads_outside.py")
    finally:
        listener.close()
    sandbox = detect_sandbox()
    assert result.sandbox == sandbox.describe()
    line = next(l for l in result.stdout.splitlines() if l.startswith("SANDBOX"))
    seen = dict(item.split("=") for item in line.split()[1:])
    # Sockets are refused to the submission by the worker's audit hook,
    # whatever the sandbox (which cuts the network too where it can).
    assert result.verdict.value == "rejected" and "no network" in result.message, result.message
    if sandbox.filesystem != "shared":  # bubblewrap, or unshare with the worker's jail
        assert seen["read"] == "denied"
        assert not escape.exists()  # what it wrote stayed in its private /tmp
    else:
        assert seen["read"] == "ok"
    escape.unlink(missing_ok=True)


def test_a_temporary_folder_outside_tmp_is_hidden_but_for_the_workers_own(tmp_path, monkeypatch):
    """TMPDIR outside /tmp: every grading's scratch and Triton cache live
    there, which the private /tmp does not cover; a worker sees its own
    folders only (a neighbour's file, planted here, and its own grading's
    other workers' folders stay out of view)."""
    import shutil
    import tempfile
    if detect_sandbox().filesystem == "shared":
        pytest.skip("no sandbox with a private file system here")
    base = Path("/var/tmp")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        pytest.skip("no writable /var/tmp")
    temp = Path(tempfile.mkdtemp(prefix="judge-test-temp-", dir=base))
    try:
        (temp / "judge-worker-neighbour").mkdir()
        (temp / "judge-worker-neighbour" / "submission.py").write_text("# a classmate's file\n")
        source = (FIXTURES / "lists_the_temporary_folder.py").read_text().replace("JUDGE_TEST_TEMP", str(temp))
        (tmp_path / "lists.py").write_text(source)
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        result = grade(tmp_path / "lists.py", GradeOptions(device="cpu", seed=7, limits=LIMITS,
                                                          challenge="vector_addition", workers=2))
        assert result.verdict.value == "accepted", result.message
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def test_judge_fault_is_internal_error_not_a_crash(monkeypatch):
    from judge import checkers

    def broken(self, trials):
        raise RuntimeError("simulated bug in the judge")

    monkeypatch.setattr(checkers.Fp32Bound, "compare", broken)
    result = grade(FIXTURES.parent.parent / "submissions" / "correct" / "grid_2d.py",
                   GradeOptions(device="cpu", seed=1, limits=LIMITS))
    assert result.verdict.value == "internal_error"
    assert "simulated bug in the judge" in result.message


def test_time_limit_kills_the_worker():
    started = time.monotonic()
    result = grade(FIXTURES.parent.parent / "submissions" / "faults" / "infinite_loop.py",
                   GradeOptions(device="cpu", seed=1, limits=Limits(case_timeout_s=3, total_timeout_s=60)))
    assert result.verdict.value == "time_limit_exceeded"
    assert "killed" in result.message
    assert time.monotonic() - started < 40


def test_a_load_sent_ahead_is_answered_to_its_request_once():
    """A cold grading sends the load while the judge starts (judge.grader):
    the request for that same load then only waits for its answer, and
    no other request may be asked in its place."""
    from judge.isolation import WorkerProcess
    path = FIXTURES.parent.parent / "submissions" / "faults" / "no_solve.py"
    header = {"op": "load", "path": "submission.py", "device": "cpu", "arity": 6}
    with WorkerProcess(path, "cpu", LIMITS) as worker:
        worker.send_ahead(header)
        reply, _ = worker.request(header, 120, 0)
        assert reply["status"] == "invalid_submission", reply
        assert "no function named solve" in reply["message"]
    with WorkerProcess(path, "cpu", LIMITS) as worker:
        worker.send_ahead(header)
        with pytest.raises(AssertionError):
            worker.request(dict(header, arity=4), 120, 0)


def test_a_timing_waits_before_its_go_and_nowhere_else(monkeypatch):
    """request_timed runs `before_go` (the grader's wait for its other
    workers to be gone) after the warm-up and before the timed calls' seed
    is sent, so the judge's clock and the timed calls start after it."""
    from judge.isolation import WorkerProcess
    steps = []

    def request(self, header, timeout_s, max_blob_bytes, share=False):
        steps.append(header["op"])
        return ({"status": "warm"} if header["op"] == "time" else {"status": "ok"}), []

    monkeypatch.setattr(WorkerProcess, "request", request)
    worker = WorkerProcess(FIXTURES / "does_nothing.py", "cpu", LIMITS)
    reply, _, window = worker.request_timed({"op": "time"}, 5, 60, 0, before_go=lambda: steps.append("waited"))
    assert steps == ["time", "waited", "go", "buffers"] and reply["status"] == "ok" and window is not None


def test_workers_stopped_in_the_background_are_gone_and_heard_once_waited_for():
    """judge.slots.Stopping: the grading's other workers are killed at once
    and reaped beside the timing's warm-up; wait() returns once every one is
    dead, with what each printed collected in slot order."""
    import os
    from types import SimpleNamespace

    from judge.isolation import WorkerProcess
    from judge.slots import Slot, Stopping
    run = SimpleNamespace(phases={}, printed=[])
    run.collect_output = lambda out, err: run.printed.append(out)
    slots = []
    for _ in range(3):
        slot = Slot(run)
        slot.worker = WorkerProcess(FIXTURES.parent.parent / "submissions" / "faults" / "no_solve.py", "cpu", LIMITS)
        slot.worker.start()
        slots.append(slot)
    pids = [slot.worker.proc.pid for slot in slots]
    stopping = Stopping(run, slots + [Slot(run)])  # a slot without a worker is passed over
    stopping.wait()
    stopping.wait()  # once only
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert all(slot.worker is None for slot in slots) and len(run.printed) == 3
    assert run.phases["stop_workers"] >= 0


# --- the wire format -------------------------------------------------------------

def _pair():
    a, b = socket.socketpair()
    return a, b


def test_protocol_round_trip_with_blobs():
    a, b = _pair()
    protocol.send(a, {"op": "x", "n": 1}, [b"abc", b"", b"\x00" * 10])
    header, blobs = protocol.recv(b, deadline=time.monotonic() + 5)
    assert header["op"] == "x" and [bytes(x) for x in blobs] == [b"abc", b"", b"\x00" * 10]


def test_protocol_rejects_oversized_header():
    a, b = _pair()
    a.sendall(struct.pack(">I", protocol.MAX_HEADER + 1))
    with pytest.raises(ProtocolError):
        protocol.recv(b, deadline=time.monotonic() + 5)


def test_protocol_rejects_malformed_json_and_blob_lists():
    for raw in (b"{not json", json.dumps([1, 2]).encode(), json.dumps({"blobs": [-1]}).encode(),
                json.dumps({"blobs": "many"}).encode()):
        a, b = _pair()
        a.sendall(struct.pack(">I", len(raw)) + raw)
        with pytest.raises(ProtocolError):
            protocol.recv(b, deadline=time.monotonic() + 5)


def test_protocol_refuses_blobs_over_the_limit_before_reading_them():
    a, b = _pair()
    raw = json.dumps({"blobs": [1 << 40]}).encode()
    a.sendall(struct.pack(">I", len(raw)) + raw)
    with pytest.raises(ProtocolError):
        protocol.recv(b, deadline=time.monotonic() + 5, max_blob_bytes=1 << 20)


def test_protocol_deadline_and_eof():
    a, b = _pair()
    with pytest.raises(WorkerTimeout):
        protocol.recv(b, deadline=time.monotonic() + 0.2)
    a.close()
    with pytest.raises(EOFError):
        protocol.recv(b, deadline=time.monotonic() + 5)


# --- on the GPU ----------------------------------------------------------------

GPU_FIXTURES = FIXTURES / "gpu"
with (GPU_FIXTURES / "expected.toml").open("rb") as fh:
    GPU_ENTRIES = tomllib.load(fh)
GPU_EXPECTED = {k: v["verdict"] for k, v in GPU_ENTRIES.items()}


# GPU fixtures that hide honest work from the timer, with the honest example
# whose latency they must be timed at.
HONEST_TWIN = {"side_stream_head_start.py": "reduction/examples/correct_atomic_chunks.py",
               "compiled_kernel_on_side_stream.py": "vector_addition/examples/correct_block1024.py",
               "timer_stream_switched_off.py": "vector_addition/examples/correct_block1024.py",
               "launched_streams_forgotten.py": "vector_addition/examples/correct_block1024.py"}


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("name", sorted(GPU_EXPECTED))
def test_gpu_fixture_verdict(name):
    limits = SHORT if name in HANGS else LIMITS
    challenge = GPU_ENTRIES[name].get("challenge", "matrix_multiplication")
    options = GradeOptions(challenge=challenge, device="cuda", seed=7, limits=limits, stop_on_wrong_answer=True)
    result = grade(GPU_FIXTURES / name, options)
    assert result.verdict.value == GPU_EXPECTED[name], (result.message, [(c.name, c.status) for c in result.cases])
    if name == "side_stream.py":
        # Its kernel takes ~9 ms at 8192×6144×4096; a timer blind to the side
        # stream would see only the launch, some microseconds.
        assert result.latency_ms is not None and result.latency_ms > 2.0
    if name in HONEST_TWIN:
        # The same work as an honest example's, on a side stream. Without the
        # fence its kernels would run inside the head start and the events
        # would see a few microseconds (side_stream_head_start.py and the
        # honest example: both 0.015 ms on the H100,
        # bench/results/cost_key_sampling_h100.md). The honest kernel's
        # fastest call is the yardstick: its median can stray from one
        # grading to the next, its fastest call hardly at all.
        honest = grade(ROOT / "challenges" / HONEST_TWIN[name], options)
        assert honest.timing is not None and result.latency_ms is not None
        assert result.latency_ms > 0.6 * honest.timing.min_ms, (result.timing, honest.timing)


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_gpu_context_dies_with_the_worker():
    """An illegal address poisons a CUDA context for good; the next
    submission, in a fresh worker, runs clean."""
    bad = grade(GPU_FIXTURES / "illegal_address.py", GradeOptions(device="cuda", seed=7, limits=LIMITS))
    assert bad.verdict.value == "runtime_error"
    good = grade(FIXTURES.parent.parent / "submissions" / "correct" / "grid_2d.py",
                 GradeOptions(device="cuda", seed=7, limits=LIMITS, time=False))
    assert good.verdict.value == "accepted"


def test_a_stop_mid_run_reads_the_same_with_any_number_of_workers(monkeypatch):
    """Cases run side by side in several workers are reported as a
    one-at-a-time run would report them: the first stopping case decides,
    every earlier case ran, every later one is not run."""
    monkeypatch.setenv("JUDGE_SECRET", "s3cr3t-value-for-tests")
    runs = {n: _grade("crashes_on_inner_dim_1.py", workers=n) for n in (1, 3)}
    statuses = {n: [(c.name, c.status) for c in r.cases] for n, r in runs.items()}
    assert statuses[1] == statuses[3]
    stop = next(i for i, (_, s) in enumerate(statuses[1]) if s not in ("accepted", "skipped"))
    assert statuses[1][stop] == ("single_element", "runtime_error")  # the first case with N == 1
    assert all(s in ("accepted", "skipped") for _, s in statuses[1][:stop])
    assert all(s == "not_run" for _, s in statuses[1][stop + 1:])
    assert runs[3].verdict.value == runs[1].verdict.value == "runtime_error"
    assert "SIGKILL" in runs[3].message


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA device")
def test_gpu_buffers_cross_by_cuda_ipc():
    """On a GPU a large reply crosses by CUDA IPC: the judge gets CUDA
    tensors of its own, byte for byte what the socket would have carried."""
    import torch

    from judge import cases, challenge
    from judge.isolation import WorkerProcess
    from judge.protocol import OUTPUT_GUARD
    vec = challenge.load("vector_addition")
    case = next(c for c in vec.functional if c.dims["N"] == 999983)
    plan = cases.input_plan(vec, case)
    path = FIXTURES.parent.parent / "challenges" / "vector_addition" / "examples" / "correct_block1024.py"
    with WorkerProcess(path, "cuda", LIMITS) as worker:
        load, _ = worker.request({"op": "load", "path": "submission.py", "device": "cuda", "arity": 4}, 120, 0)
        assert load["status"] == "ok", load
        replies = []
        for share in (True, False):
            reply, blobs = worker.request({"op": "run", "plan": plan, "seeds": [5], "return_inputs": True}, 60,
                                          1 << 30, share=share)
            assert reply["status"] == "ok", reply
            replies.append([b.cpu() if isinstance(b, torch.Tensor) else torch.frombuffer(b, dtype=torch.uint8)
                            for b in blobs])
            assert all(isinstance(b, torch.Tensor) and b.is_cuda for b in blobs) == share
        assert worker.can_share
    shared, sent = replies
    assert len(shared) == len(sent) == 3  # c, then the inputs a and b
    assert all(torch.equal(x, y) for x, y in zip(shared, sent))
    made = cases.make_inputs(plan, 5, "cuda")
    c = shared[0].view(torch.float32)[OUTPUT_GUARD:-OUTPUT_GUARD].cuda()
    assert torch.equal(c, made["a"] + made["b"])


@pytest.mark.skipif(detect_sandbox().filesystem == "shared", reason="no read-only sandbox here")
def test_submission_cannot_write_the_judges_files(tmp_path, monkeypatch):
    """A read-only sandbox (bubblewrap, or unshare and the worker's jail):
    the judge's code, its caches and the submission's own folder stay as
    they were, whatever the submission opens for writing."""
    from judge.isolation import JUDGE_ROOT
    folder = tmp_path / "class"
    folder.mkdir()
    source = (FIXTURES / "writes_judge_files.py").read_text()
    (folder / "student.py").write_text(source.replace('"/nonexistent"', repr(str(folder))))
    result = grade(folder / "student.py", GradeOptions(device="cpu", seed=7, limits=LIMITS,
                                                       stop_on_wrong_answer=True))
    assert result.verdict.value == "accepted", result.message
    for place in (JUDGE_ROOT / "judge", folder, Path("/root/.cache/tritonjudge")):
        assert not (place / ".judge-tamper-probe").exists(), place


@pytest.mark.skipif(detect_sandbox().filesystem == "shared", reason="no read-only sandbox here")
def test_a_classmates_file_stays_hidden_below_a_kept_folder(tmp_path, monkeypatch):
    """A folder the worker keeps (on the import path: a batch run from the
    course folder) holding the class folder: the class stays hidden. The
    jail had covered it, then bound the kept folder back over the cover."""
    course = tmp_path / "course"
    folder = course / "class"
    folder.mkdir(parents=True)
    (folder / "alice.py").write_text("ANSWER = 1\n")
    honest = (ROOT / "challenges" / "vector_addition" / "examples" / "correct_block1024.py").read_text()
    probe = (f"try:\n    open({str(folder / 'alice.py')!r}).read()\nexcept OSError:\n    pass\n"
             "else:\n    raise RuntimeError('read a classmate file')\n")
    (folder / "mallory.py").write_text(probe + honest)
    monkeypatch.setenv("PYTHONPATH", str(course))
    result = grade(folder / "mallory.py", GradeOptions(challenge="vector_addition", device="cpu", seed=7,
                                                        limits=LIMITS, stop_on_wrong_answer=True))
    assert result.verdict.value == "accepted", result.message


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux only")
def test_a_worker_gives_up_every_capability():
    """judge.worker.privileges.drop_capabilities, in a process of its own:
    nothing effective or permitted is left, root or not."""
    import subprocess
    import sys
    code = ("from judge.worker import privileges; privileges.drop_capabilities(); "
            "print(open('/proc/self/status').read())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent).stdout
    caps = {line.split(":")[0]: int(line.split()[1], 16) for line in out.splitlines() if line.startswith("Cap")}
    assert caps["CapEff"] == 0 and caps["CapPrm"] == 0 and caps["CapInh"] == 0, caps


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux only")
def test_the_judge_is_not_dumpable_once_protected():
    """judge.hardening: /proc/<judge>/mem, root and environ need the ptrace
    capability, which no worker keeps."""
    import ctypes
    from judge.hardening import protect_judge
    protect_judge()
    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE


def test_a_user_of_its_own_only_for_a_judge_run_as_root(monkeypatch, tmp_path):
    """judge.sandbox: no user switch when the judge is not root, or is told
    to keep root; the folders a grading's user gets are its own."""
    import os
    from judge import sandbox
    box = sandbox.Sandbox(tool="unshare", network="cut", filesystem="shared")
    monkeypatch.setenv("JUDGE_KEEP_ROOT", "1")
    assert sandbox._user_holds("unshare", box) is False
    user = sandbox.new_user()
    assert (1 << 24) <= user < (1 << 30)
    if os.geteuid() == 0:
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "file").write_text("x")
        sandbox.give_to(tmp_path, user)
        assert {p.stat().st_uid for p in [tmp_path, *tmp_path.rglob("*")]} == {user}


@pytest.mark.skipif(HAS_CUDA, reason="needs a machine without CUDA (a worker asked for a GPU it lacks)")
def test_a_worker_that_dies_before_importing_the_file_is_the_judges_fault(monkeypatch):
    """A worker that fails in its own start, before it says it imports the
    file, is an internal_error (graded again by a batch), never the file's
    runtime_error: a batch had recorded a judge bug as every student's
    runtime_error, and a rerun kept it. Here the judge asks a CPU-only
    machine's worker for the GPU (torch.cuda.init fails in the worker's start)."""
    from judge import grader, slots
    made = slots.load_request

    def on_a_missing_gpu(challenge, device, options):
        return dict(made(challenge, device, options), device="cuda")

    monkeypatch.setattr(slots, "load_request", on_a_missing_gpu)
    monkeypatch.setattr(grader, "load_request", on_a_missing_gpu, raising=False)
    result = grade(ROOT / "challenges" / "vector_addition" / "examples" / "correct_block1024.py",
                   GradeOptions(challenge="vector_addition", device="cpu", seed=7, limits=LIMITS))
    assert result.verdict.value == "internal_error", result.message
    assert "before importing the file" in result.message

