"""What a grading produces: the result models, as `judge submit --json`
prints them and the batch store keeps them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .compare import Mismatch
from .scoring import Score
from .verdicts import Verdict

CaseStatus = Literal["accepted", "wrong_answer", "runtime_error", "time_limit_exceeded",
                     "memory_limit_exceeded", "compile_error", "invalid_submission", "rejected",
                     "internal_error", "skipped", "not_run"]
# Statuses after which no later case runs.
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
    # Under GradeOptions.also_policies: policy -> (status, message) of the same outputs.
    also: dict[str, tuple[str, str]] = {}


class Timing(BaseModel):
    median_ms: float
    mean_ms: float
    min_ms: float
    sem_ms: float
    median_ci_ms: float | None = None  # half-width of a ~95% confidence interval of the median
    reps: int
    sets: int
    l2_flush_bytes: int
    head_start_s: float = 0.0  # GPU busy-wait before each timed call, covering the host's launch path
    warmup_calls: int = 0  # untimed calls, back to back, before the timed ones
    # As the worker reports them (diagnostics, not checked): the median host
    # time to issue one timed call (a call whose host path outlasts the head
    # start is timed with the excess), and a warm-up call's GPU time.
    host_call_ms: float | None = None
    warmup_gpu_ms: float | None = None
    tflops: float | None  # when the challenge counts flops
    gbps: float | None = None  # when it counts bytes moved
    percent_of_bandwidth: float | None = None  # of the GPU's peak memory bandwidth (NVML)
    gpu_before: dict
    gpu_after: dict
    throttle_warning: str | None


class Performance(BaseModel):
    """The submission against the baselines measured on the same GPU and shape."""

    baselines_ms: dict[str, float]
    baselines_source: str
    percent_of: dict[str, float]  # 100 × baseline latency / submission latency
    speedup_over: dict[str, float]  # baseline latency / submission latency


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
