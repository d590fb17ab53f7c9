"""Orchestration: a submission's cases through the worker, compared here.

For each case the judge sends the worker a plan and seeds; the worker builds
the inputs, runs solve and returns the raw output buffer. The judge builds
the same inputs itself, computes the truth with the reference kernel, checks
the guard bands around the output, and hands both to the comparison policy.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import importlib
import math
import os
import platform
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from . import baselines as baselines_mod
from . import cases as case_data
from . import gpuinfo
from .challenge import Challenge, Case
from .compare import Comparison, Mismatch, Trial, get_policy
from .errors import ProtocolError, UsageError, WorkerDied, WorkerTimeout
from .isolation import Limits, WorkerProcess, detect_sandbox
from .protocol import GUARD_BITS, INPUT_GUARD, OUTPUT_GUARD, POISON_BITS
from .scoring import Score, ScoringPolicy
from .scoring import score as compute_score
from .verdicts import Verdict, overall

CaseStatus = Literal["accepted", "wrong_answer", "runtime_error", "time_limit_exceeded",
                     "memory_limit_exceeded", "compile_error", "invalid_submission", "rejected",
                     "internal_error", "skipped", "not_run"]
STOPPING = {"runtime_error", "time_limit_exceeded", "memory_limit_exceeded", "rejected", "internal_error"}


class CaseResult(BaseModel):
    name: str
    kind: Literal["example", "functional", "performance"]
    shape: str
    dims: dict[str, int]
    status: CaseStatus
    trials: int = 0
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    mismatches: int | None = None
    bound_ratio: float | None = None
    norm_ratio: float | None = None
    first_mismatches: list[Mismatch] = []
    diagnosis: str | None = None
    message: str = ""
    seconds: float = 0.0


TIMED_SETS = 3  # buffer sets rotated while timing (refilled with fresh data every call)
CHECKSUM_TOLERANCE = 1e-7  # of Σ(|A|·|B|): see _Run.stale_calls
LARGE_CASE_BYTES = 256 << 20  # a case moving more than this runs alone, after the others


class Timing(BaseModel):
    median_ms: float
    mean_ms: float
    min_ms: float
    sem_ms: float
    reps: int
    sets: int
    l2_flush_bytes: int
    warmup_calls: int = 0  # untimed calls, back to back, before the timed ones
    tflops: float
    gpu_before: dict
    gpu_after: dict
    throttle_warning: str | None


class Performance(BaseModel):
    """The submission against the baselines measured on the same GPU and shape."""

    baselines_ms: dict[str, float]
    baselines_source: str
    percent_of: dict[str, float]  # 100 × baseline latency / submission latency
    speedup_over: dict[str, float]  # baseline latency / submission latency


class GradeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    challenge: str = "matrix_multiplication"
    device: Literal["cpu", "cuda"] | None = None  # None: cuda if available
    policy: str | None = None  # None: the challenge's default
    seed: int | None = None
    stop_on_wrong_answer: bool = False
    time: bool = True
    refresh_baselines: bool = False
    workers: int | None = Field(None, ge=1, le=16)  # None: min(4, CPU count)
    scoring: ScoringPolicy = Field(default_factory=ScoringPolicy)
    limits: Limits = Field(default_factory=Limits)


class GradeResult(BaseModel):
    verdict: Verdict
    message: str
    challenge: str
    submission: str
    policy: str
    seed: int
    device: str
    device_name: str
    versions: dict[str, str]
    cases: list[CaseResult]
    latency_ms: float | None
    timing: Timing | None
    timing_note: str | None
    performance: Performance | None
    score: Score
    sandbox: str
    stdout: str
    stderr: str
    started_at: str
    duration_s: float
    # Where the grading's wall time went: starting and loading the workers,
    # the cases, timing, baselines (measured or read from the cache).
    phase_seconds: dict[str, float] = {}


def choose_device(requested: str | None) -> str:
    import torch
    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda was asked for, but torch sees no CUDA device")
    if requested:
        return requested
    return "cuda" if torch.cuda.is_available() else "cpu"


def versions() -> dict[str, str]:
    import torch
    import triton
    out = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__}
    if torch.cuda.is_available():
        out["cuda"] = str(torch.version.cuda)
    return out


class _Run:
    """State of one grading shared by its workers: the case data, the
    checks, the clock, the output collected."""

    def __init__(self, challenge: Challenge, path: Path, device: str, options: GradeOptions):
        self.challenge = challenge
        self.path = path
        self.device = device
        self.options = options
        self.limits = options.limits
        self.policy = get_policy(options.policy or challenge.tolerance.default_policy)
        self.seed = options.seed if options.seed is not None else case_data.new_run_seed()
        self.secret = case_data.load_secret()
        self.deadline = time.monotonic() + self.limits.total_timeout_s
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.reference = challenge.reference_fn()
        # The judge's own tensor work (building inputs, the truth, comparing)
        # is done one case at a time even while several workers run cases.
        self.checking = threading.Lock()
        self.phases: dict[str, float] = {}  # seconds by phase, for GradeResult.phase_seconds

    # --- workers -------------------------------------------------------------

    def time_left(self, per_request: float) -> float:
        return max(0.1, min(per_request, self.deadline - time.monotonic()))

    def collect_output(self, out: str, err: str) -> None:
        if out:
            self.stdout.append(out)
        if err:
            self.stderr.append(err)

    # --- cases ---------------------------------------------------------------

    def seeds(self, case: Case) -> list[int]:
        return [case_data.case_seed(self.secret, self.challenge.name, self.seed, case.name, t)
                for t in range(self.challenge.trials(case))]

    @staticmethod
    def layout(plan: dict) -> list[tuple[str, str, list[int], int, int]]:
        """(kind, name, shape, guard, guard bits) of each buffer of one trial,
        in the order the worker sends them: outputs, then inputs, by name."""
        outs = [("out", n, plan["outputs"][n]["shape"], OUTPUT_GUARD, GUARD_BITS) for n in sorted(plan["outputs"])]
        ins = [("in", n, plan["inputs"][n]["shape"], INPUT_GUARD, POISON_BITS) for n in sorted(plan["inputs"])]
        return outs + ins

    def reply_bytes(self, plan: dict, trials: int) -> int:
        return trials * sum((math.prod(shape) + 2 * guard) * 4 for _, _, shape, guard, _ in self.layout(plan))

    def unpack(self, plan: dict, blobs: list[bytearray], seeds: list[int]):
        """Check the worker's buffers against the trusted side's knowledge:
        sizes, guard bands untouched, inputs unchanged. Returns the outputs of
        each trial and the inputs the judge built, or the rule broken."""
        import numpy as np
        import torch
        layout = self.layout(plan)
        sizes = [(math.prod(shape) + 2 * guard) * 4 for _, _, shape, guard, _ in layout] * len(seeds)
        if [len(b) for b in blobs] != sizes:
            raise ProtocolError(f"expected buffers of {sizes} bytes, got {[len(b) for b in blobs]}")
        outputs, inputs = [], []
        for t, seed in enumerate(seeds):
            made = case_data.make_inputs(plan, seed, self.device)
            got = {}
            for i, (kind, name, shape, guard, bits) in enumerate(layout):
                raw = np.frombuffer(blobs[t * len(layout) + i], dtype=np.int32)
                if not (np.all(raw[:guard] == bits) and np.all(raw[len(raw) - guard:] == bits)):
                    where = "output" if kind == "out" else "input"
                    return None, None, f"rule: solve wrote outside the {where} tensor {name!r} (its guard band changed)"
                body = torch.from_numpy(raw[guard:len(raw) - guard].copy()).reshape(shape)
                if kind == "in":
                    if not torch.equal(body, made[name].cpu().view(torch.int32)):
                        return None, None, f"rule: inputs must be unchanged, and solve modified {name!r}"
                else:
                    got[name] = body.view(torch.float32).to(self.device)
            outputs.append(got)
            inputs.append(made)
        return outputs, inputs, None

    def compare(self, outputs: list[dict], inputs: list[dict]) -> Comparison:
        trials = []
        for got, made in zip(outputs, inputs):
            expected = self.reference(made, need_fp32=self.policy.name == "leetgpu")
            for name in sorted(got):
                trials.append(Trial(got=got[name], expected=expected[name]))
        return self.policy.compare(trials)

    def run_case(self, case: Case, kind: str, slot: "_Slot") -> CaseResult:
        result = CaseResult(name=case.name, kind=kind, shape=self.challenge.shape_label(case),
                            dims=dict(case.dims), status="not_run")
        if self.device == "cpu":
            reason = self.challenge.fits_cpu(case)
            if reason:
                result.status, result.message = "skipped", reason
                return result
        if time.monotonic() >= self.deadline:
            result.message = f"not run: the submission's {self.limits.total_timeout_s:.0f} s limit is spent"
            return result
        started = time.monotonic()
        plan = case_data.input_plan(self.challenge, case)
        seeds = self.seeds(case)
        result.trials = len(seeds)
        assert slot.worker is not None
        try:
            reply, blobs = slot.worker.request(
                {"op": "run", "plan": plan, "seeds": seeds, "return_inputs": True},
                self.time_left(self.limits.case_timeout_s), max_blob_bytes=self.reply_bytes(plan, len(seeds)))
        except WorkerDied as exc:
            result.status, result.message = "runtime_error", str(exc)
            slot.stop()
        except WorkerTimeout as exc:
            result.status, result.message = "time_limit_exceeded", str(exc)
            slot.stop()
        except ProtocolError as exc:
            result.status, result.message = "runtime_error", f"the worker sent garbage: {exc}"
            slot.stop()
        else:
            if reply.get("status") != "ok":
                result.status, result.message = _status(reply), str(reply.get("message", ""))[:4000]
            else:
                with self.checking:
                    outputs, inputs, rule = self.unpack(plan, blobs, seeds)
                    if rule:
                        result.status, result.message = "rejected", rule
                    else:
                        self.fill(result, self.compare(outputs, inputs))
        result.seconds = round(time.monotonic() - started, 3)
        return result

    def fill(self, result: CaseResult, cmp: Comparison) -> None:
        result.status = "accepted" if cmp.passed else "wrong_answer"
        result.max_abs_err = cmp.stats.max_abs_err
        result.max_rel_err = cmp.stats.max_rel_err
        result.mismatches = cmp.mismatches
        result.bound_ratio = cmp.bound_ratio
        result.norm_ratio = cmp.norm_ratio
        result.first_mismatches = cmp.first_mismatches
        result.diagnosis = cmp.diagnosis
        result.message = cmp.message

    def is_large(self, case: Case) -> bool:
        """Cases whose buffers are too big to run beside others: run alone."""
        plan = case_data.input_plan(self.challenge, case)
        return self.device == "cuda" and self.reply_bytes(plan, self.challenge.trials(case)) > LARGE_CASE_BYTES

    # --- timing --------------------------------------------------------------

    def time_performance(self, case: Case, slot: "_Slot") -> tuple[Timing | None, CaseResult | None]:
        """Latency of the performance case over TIMED_SETS input sets. Every
        set's final output is checked in full, and every timed call's output
        summary against it: a call that skipped or changed its work is caught."""
        plan = case_data.input_plan(self.challenge, case)
        seeds = [case_data.case_seed(self.secret, self.challenge.name, self.seed, case.name, 1000 + i)
                 for i in range(TIMED_SETS)]
        base = case_data.case_seed(self.secret, self.challenge.name, self.seed, case.name, 999)
        assert slot.worker is not None
        failure = CaseResult(name=f"{case.name} (timed)", kind="performance",
                             shape=self.challenge.shape_label(case), dims=dict(case.dims), status="not_run")
        before = gpuinfo.snapshot()
        asked = time.monotonic()
        try:
            reply, blobs = slot.worker.request(
                {"op": "time", "plan": plan, "seeds": seeds, "call_seed": base},
                self.time_left(self.limits.case_timeout_s * 2),
                max_blob_bytes=self.reply_bytes(plan, len(seeds)))
        except (WorkerDied, ProtocolError) as exc:
            failure.status, failure.message = "runtime_error", f"while timing: {exc}"
            slot.stop()
            return None, failure
        except WorkerTimeout as exc:
            failure.status, failure.message = "time_limit_exceeded", f"while timing: {exc}"
            slot.stop()
            return None, failure
        wall_s = time.monotonic() - asked
        self.phases["timing_worker"] = round(wall_s, 3)
        after = gpuinfo.snapshot()
        if reply.get("status") != "ok":
            failure.status, failure.message = _status(reply), str(reply.get("message", ""))[:4000]
            return None, failure
        raw = reply.get("timing", {})
        try:
            # Each set's buffers hold the data of the last timed call made on it.
            last = [int(r) if r is not None else None for r in raw["last_call"]]
            final_seeds = [seeds[i] if r is None else case_data.call_seed(base, r) for i, r in enumerate(last)]
        except (KeyError, TypeError, ValueError) as exc:
            failure.status, failure.message = "runtime_error", f"malformed timing from the worker: {exc}"
            return None, failure
        outputs, inputs, rule = self.unpack(plan, blobs, final_seeds)
        if rule:
            failure.status, failure.message = "rejected", rule
            return None, failure
        for i, (got, made) in enumerate(zip(outputs, inputs)):
            cmp = self.compare([got], [made])
            if not cmp.passed:
                self.fill(failure, cmp)
                failure.message = f"the output of the timed calls on input set {i} is wrong: {cmp.message}"
                return None, failure
        try:
            stale = self.stale_calls(plan, base, raw["checks"])
            median = float(raw["median_ms"])
            timing = Timing(**{k: raw[k] for k in ("median_ms", "mean_ms", "min_ms", "sem_ms", "reps",
                                                    "l2_flush_bytes", "sets", "warmup_calls")},
                            tflops=self.challenge.flop_count(case) / (median * 1e-3) / 1e12,
                            gpu_before=before, gpu_after=after,
                            throttle_warning=gpuinfo.throttle_warning(before, after))
        except (KeyError, TypeError, ValueError) as exc:
            failure.status, failure.message = "runtime_error", f"malformed timing from the worker: {exc}"
            return None, failure
        if stale:
            failure.status = "wrong_answer"
            failure.message = (f"{len(stale)} of {timing.reps} timed calls left an output whose sum is not "
                               f"that of their fresh inputs (first: call {stale[0]}): work skipped, cached "
                               "or changed")
            return None, failure
        # The timed calls happened inside this request: their total cannot
        # exceed its wall time. (A worker that under-reports is beyond this
        # check; the timing runs in the untrusted process.)
        if median <= 0 or timing.mean_ms * timing.reps / 1000 > wall_s * 1.05 + 0.05:
            failure.status = "rejected"
            failure.message = (f"rule: the reported timing ({timing.reps} calls of {timing.mean_ms:.3f} ms on "
                               f"average) does not fit in the {wall_s:.2f} s the request took")
            return None, failure
        return timing, None

    def stale_calls(self, plan: dict, base: int, checks: list) -> list[int]:
        """Timed calls whose output sum is not the one their fresh inputs imply
        (computed here from the inputs alone): skipped, cached or changed work.
        Two different data sets of the performance case differ by ~3e-6 of
        the scale, float32 or TF32 rounding by ~1e-9; the bound sits between."""
        if not self.challenge.checksum:
            return []
        module, _, attr = self.challenge.checksum.partition(":")
        checksum = getattr(importlib.import_module(module), attr)
        stale = []
        for r, _, total in checks:
            expected, scale = checksum(case_data.make_inputs(plan, case_data.call_seed(base, int(r)), self.device))
            if not math.isfinite(total) or abs(total - expected) > CHECKSUM_TOLERANCE * scale + 1e-30:
                stale.append(int(r))
        return stale

    def baselines(self, case: Case) -> tuple[dict[str, dict] | None, str | None]:
        """Library and reference latencies on the timed shape (set 0's data)."""
        if not self.challenge.baselines:
            return None, None
        gpu = gpuinfo.snapshot()
        if not gpu.get("available"):
            import torch
            gpu = {"name": torch.cuda.get_device_name(), "driver": "unknown"}
        key = baselines_mod.cache_key(self.challenge.name, self.challenge.shape_label(case), gpu, versions())
        plan = case_data.input_plan(self.challenge, case)
        seed = case_data.case_seed(self.secret, self.challenge.name, self.seed, case.name, 1000)
        module, _, attr = self.challenge.baselines.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        measured, cached = baselines_mod.get(
            key, lambda: factory(case_data.make_inputs(plan, seed, self.device)),
            refresh=self.options.refresh_baselines)
        return measured, ("cached" if cached else "measured now")


def _status(reply: dict) -> str:
    status = reply.get("status")
    valid = {v.value for v in Verdict} - {"accepted"}
    return status if status in valid else "runtime_error"


def grade(path: str | os.PathLike, options: GradeOptions | None = None) -> GradeResult:
    """Grade one submission file. Raises UsageError for bad requests; every
    fault of the submission, and of the judge itself, ends in a result."""
    options = options or GradeOptions()
    from . import challenge as challenges
    challenge = challenges.load(options.challenge)
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    policy_name = options.policy or challenge.tolerance.default_policy
    if policy_name not in challenge.tolerance.allowed_policies:
        raise UsageError(f"policy {policy_name!r} is not allowed for {challenge.name} "
                         f"(allowed: {', '.join(challenge.tolerance.allowed_policies)})")
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    # Start the workers before importing torch here: both take seconds.
    guess = options.device or _guess_device()
    early = [_spawn(path, guess, options.limits)
             for _ in range(_slot_count(options, len(challenge.functional) + 2))]
    try:
        device = choose_device(options.device)
        if device != guess:  # torch disagrees with the guess (say, a CPU build of torch on a GPU host)
            for worker in early:
                worker.close()
            early = []
        import torch
        if device == "cpu" and not torch.cuda.is_available():
            # No GPU: the reference kernels run under the interpreter. Triton
            # decides when a kernel is defined, so this precedes their import.
            # (With a GPU they stay compiled, and CPU-mode truth borrows it.)
            os.environ["TRITON_INTERPRET"] = "1"
        run = _Run(challenge, path, device, options)
    except BaseException:
        for worker in early:
            worker.close()
        raise

    timing: Timing | None = None
    timing_note: str | None = None
    performance: Performance | None = None
    ordered = [(challenge.example, "example")] + [(c, "functional") for c in challenge.functional] \
        + [(challenge.performance, "performance")]
    results: list[CaseResult] = []
    load_message = ""
    slots = [_Slot(run) for _ in range(_slot_count(options, len(ordered)))]
    for slot, worker in zip(slots, early):
        slot.worker, slot.loaded = worker, False
    try:
        results, load_message = _run_cases(run, ordered, slots)
        verdict = _verdict(results)
        if verdict is Verdict.ACCEPTED:
            if device != "cuda":
                timing_note = "not timed: latency is measured on a GPU only (this run used the Triton interpreter)"
            elif not options.time:
                timing_note = "not timed: timing was turned off"
            else:
                slot = slots[0]
                restart = slot.ensure()
                if restart:
                    results.append(_unrun(challenge, challenge.performance, "performance", *restart))
                else:
                    clock = time.monotonic()
                    timing, failure = run.time_performance(challenge.performance, slot)
                    # The judge's share: unpacking and checking the timed outputs.
                    run.phases["timing_checks"] = round(time.monotonic() - clock
                                                        - run.phases.get("timing_worker", 0.0), 3)
                    if failure:
                        results.append(failure)
                    elif timing is not None:
                        clock = time.monotonic()
                        performance = _performance(run, challenge.performance, timing)
                        run.phases["baselines"] = round(time.monotonic() - clock, 3)
                verdict = _verdict(results)
    except Exception:  # noqa: BLE001 - a judge fault must still yield a result
        verdict = Verdict.INTERNAL_ERROR
        load_message = "the judge failed: " + traceback.format_exc(limit=6)[-3000:]
        timing = None
    finally:
        for slot in slots:
            slot.stop()

    message = _summary(verdict, results, load_message)
    return GradeResult(
        verdict=verdict, message=message, challenge=challenge.name, submission=str(path),
        policy=run.policy.name, seed=run.seed, device=device, device_name=_device_name(device),
        versions=versions(), cases=results,
        latency_ms=timing.median_ms if timing else None, timing=timing, timing_note=timing_note,
        performance=performance,
        score=compute_score(options.scoring, verdict is Verdict.ACCEPTED, timing.median_ms if timing else None,
                            performance.baselines_ms if performance else None),
        sandbox=detect_sandbox().describe(),
        stdout=_join_capped(run.stdout, options.limits.output_cap_bytes),
        stderr=_join_capped(run.stderr, options.limits.output_cap_bytes),
        started_at=started_at, duration_s=round(time.monotonic() - started, 3), phase_seconds=run.phases,
    )


class _Slot:
    """One worker process of a grading: started on demand, restarted after
    its worker died, stopped with its output kept."""

    def __init__(self, run: _Run):
        self.run = run
        self.worker: WorkerProcess | None = None
        self.loaded = False  # False with a worker: started (maybe early), file not loaded yet

    def ensure(self) -> tuple[str, str] | None:
        """A loaded worker: None when ready, else (status, message)."""
        if self.worker is not None and self.loaded:
            return None
        run = self.run
        if self.worker is None:
            self.worker = _spawn(run.path, run.device, run.limits)
        arg_names = [a.name for a in run.challenge.signature]
        try:
            reply, _ = self.worker.request(
                {"op": "load", "path": "submission.py", "device": run.device,
                 "emulate_tf32": True, "gpu_memory_fraction": run.limits.gpu_memory_fraction,
                 "arity": len(arg_names), "arg_names": arg_names},
                run.time_left(run.limits.load_timeout_s), max_blob_bytes=0)
        except WorkerDied as exc:
            failure = "runtime_error", f"while loading the file: {exc}"
        except WorkerTimeout as exc:
            failure = "time_limit_exceeded", f"while loading the file: {exc}"
        except ProtocolError as exc:
            failure = "runtime_error", f"while loading the file: the worker sent garbage ({exc})"
        else:
            if reply.get("status") == "ok":
                self.loaded = True
                return None
            failure = _status(reply), str(reply.get("message", ""))[:4000]
        self.stop()
        return failure

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.close()  # first, so its pipes end and the output is complete
            self.run.collect_output(*self.worker.output())
            self.worker, self.loaded = None, False


def _spawn(path: Path, device: str, limits: Limits) -> WorkerProcess:
    """A started worker for the submission at `path` (not loaded yet)."""
    # Hidden from a sandboxed worker: the secret, and the folder the
    # submission came from (its neighbours may be other students' files).
    hidden = [case_data.secret_path().parent, path.resolve().parent]
    worker = WorkerProcess(path, device, limits, hidden=hidden)
    worker.start()
    return worker


def _guess_device() -> str:
    """cuda when an NVIDIA device node exists; choose_device (torch) decides."""
    return "cuda" if os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0") else "cpu"


def _slot_count(options: GradeOptions, cases: int) -> int:
    wanted = options.workers if options.workers is not None else min(4, os.cpu_count() or 1)
    return max(1, min(wanted, cases))


def _run_cases(run: _Run, ordered: list[tuple[Case, str]], slots: list[_Slot]) -> tuple[list[CaseResult], str]:
    """Run the cases: the small ones spread over the slots' workers (each
    worker compiles its own kernels, in parallel), then the large ones, one
    at a time, in the first slot. Results are reported as a one-at-a-time
    run in challenge order would give them: a case that stops the run stops
    every later case (those already run in parallel are reported not run),
    and every earlier one still runs. Returns the results and, when the file
    did not load, why."""
    challenge = run.challenge
    clock = time.monotonic()
    loads = _in_threads([slot.ensure for slot in slots])
    run.phases["load"] = round(time.monotonic() - clock, 3)
    failed = next((f for f in loads if f), None)
    if failed:
        # The file did not load: the first case carries why, the rest do not run.
        case, kind = ordered[0]
        first = _unrun(challenge, case, kind, *failed)
        return [first] + [_unrun(challenge, c, k, "not_run", _not_run_reason(failed[0], True))
                          for c, k in ordered[1:]], failed[1]

    results: list[CaseResult | None] = [None] * len(ordered)
    stop_at = [len(ordered)]  # index of the first case that stopped the run
    lock = threading.Lock()
    large = [i for i, (case, _) in enumerate(ordered) if run.is_large(case)]
    queue = deque(i for i in range(len(ordered)) if i not in large)

    def run_one(index: int, slot: _Slot) -> None:
        case, kind = ordered[index]
        restart = slot.ensure()  # after a worker died: a fresh one
        if restart:
            result, stops = _unrun(challenge, case, kind, *restart), True
        else:
            result = run.run_case(case, kind, slot)
            stops = result.status in STOPPING or (result.status == "wrong_answer"
                                                  and run.options.stop_on_wrong_answer)
        results[index] = result
        if stops:
            with lock:
                stop_at[0] = min(stop_at[0], index)

    def serve(slot: _Slot) -> None:
        while True:
            with lock:
                if not queue or queue[0] >= stop_at[0]:  # the queue is in challenge order
                    return
                index = queue.popleft()
            run_one(index, slot)

    clock = time.monotonic()
    _in_threads([lambda slot=slot: serve(slot) for slot in slots])
    for slot in slots[1:]:
        slot.stop()  # the large cases and the timing run alone
    run.phases["small_cases"] = round(time.monotonic() - clock, 3)
    clock = time.monotonic()
    for index in large:
        if index < stop_at[0]:
            run_one(index, slots[0])
    if large:
        run.phases["large_cases"] = round(time.monotonic() - clock, 3)
    stop = stop_at[0]
    out = []
    for index, (case, kind) in enumerate(ordered):
        if index > stop or results[index] is None:
            reason = _not_run_reason(results[stop].status, False) if stop < len(ordered) else "not run"
            out.append(_unrun(challenge, case, kind, "not_run", reason))
        else:
            out.append(results[index])
    return out, ""


def _in_threads(tasks: list) -> list:
    """Run the callables each in a thread of its own; their results, in order.
    An exception in one is raised here, after all have ended."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(tasks))) as pool:
        futures = [pool.submit(task) for task in tasks]
        concurrent.futures.wait(futures)
    return [f.result() for f in futures]


def _performance(run: "_Run", case: Case, timing: Timing) -> Performance | None:
    measured, source = run.baselines(case)
    if not measured:
        return None
    ms = {name: float(stats["median_ms"]) for name, stats in measured.items()}
    return Performance(baselines_ms=ms, baselines_source=source,
                       percent_of={k: 100 * v / timing.median_ms for k, v in ms.items()},
                       speedup_over={k: v / timing.median_ms for k, v in ms.items()})


def _join_capped(parts: list[str], cap: int) -> str:
    """Output of every worker the submission used (each already capped),
    kept to `cap` characters in all, an equal share each, with a note of
    what was dropped."""
    share = cap // max(1, len(parts))
    kept = []
    for part in parts:
        if len(part) > share:
            cut = max(0, share - 64)  # room for the note
            part = part[:cut] + f"\n… [{len(part) - cut:,} more characters dropped]"
        kept.append(part)
    return "\n".join(kept)


def _unrun(challenge: Challenge, case: Case, kind: str, status: str, message: str) -> CaseResult:
    return CaseResult(name=case.name, kind=kind, shape=challenge.shape_label(case), dims=dict(case.dims),
                      status=status, message=message)


def _verdict(results: list[CaseResult]) -> Verdict:
    """The first failing case decides (a file that did not load fails the first case)."""
    ran = [Verdict(r.status) for r in results if r.status not in ("skipped", "not_run")]
    return overall(ran) if ran else Verdict.INTERNAL_ERROR


def _not_run_reason(stop: str, at_load: bool) -> str:
    if at_load:
        return f"not run: the file did not load ({stop})"
    return f"not run: an earlier case ended in {stop}"


def _summary(verdict: Verdict, results: list[CaseResult], load_message: str) -> str:
    if load_message and verdict is not Verdict.ACCEPTED:
        return load_message
    if verdict is Verdict.ACCEPTED:
        ran = sum(r.status == "accepted" for r in results)
        skipped = sum(r.status == "skipped" for r in results)
        extra = f", {skipped} skipped" if skipped else ""
        return f"all {ran} cases run passed{extra}"
    first = next((r for r in results if r.status == verdict.value), None)
    if first is None:
        return verdict.describe
    return f"case {first.name} ({first.shape}): {first.message}"


def _device_name(device: str) -> str:
    if device == "cuda":
        import torch
        return torch.cuda.get_device_name()
    return f"CPU ({platform.processor() or platform.machine()}), Triton interpreter"
