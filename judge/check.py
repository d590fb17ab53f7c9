"""Self-check before posting to LeetGPU: one grading under LeetGPU's rule on
the GPU the student chose (TF32 emulated or not, on CPU), the same outputs
also judged under our stricter policy, LeetGPU's rules read from the source
first, and an answer in LeetGPU's terms before ours."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from . import precheck
from .challenge import Challenge
from .results import CaseResult, GradeResult
from .verdicts import Verdict, stalled_on_cpu

# Published figures of the GPUs LeetGPU offers (dense, no sparsity): memory
# bandwidth GB/s, float32 FMA TFLOPS, TF32 tensor TFLOPS (None: no TF32).
GPUS = {
    "t4": ("NVIDIA T4", 320, 8.1, None),
    "a100": ("NVIDIA A100 80GB", 2039, 19.5, 156),
    "h100": ("NVIDIA H100 SXM", 3350, 67, 495),
    "h200": ("NVIDIA H200", 4800, 67, 495),
    "b200": ("NVIDIA B200", 8000, 80, 1100),
}
LEETGPU_VERDICTS = {"accepted": "Accepted", "wrong_answer": "Wrong Answer", "runtime_error": "Runtime Error",
                    "time_limit_exceeded": "Time Limit Exceeded", "memory_limit_exceeded": "Memory Limit Exceeded",
                    "compile_error": "Compilation Error", "invalid_submission": "Error",
                    "rejected": "rule violation", "internal_error": "unknown (the judge failed)"}


class LeetgpuAnswer(BaseModel):
    gpu: str
    verdict: str  # our vocabulary: accepted, wrong_answer, ...; "unknown" when no LeetGPU case could run
    text: str  # the sentence in LeetGPU's terms
    case: str | None = None
    cases_not_run: list[str] = []


class OurAnswer(BaseModel):
    policy: str
    verdict: str
    differs: bool
    text: str


class CheckResult(BaseModel):
    leetgpu: LeetgpuAnswer
    ours: OurAnswer
    prechecks: list[dict]
    estimate: str | None
    result: GradeResult


def policies(challenge: Challenge) -> tuple[str, str]:
    """(LeetGPU's policy, ours): the challenge's `leetgpu` policy if it has one."""
    ours = challenge.tolerance.default_policy
    return ("leetgpu" if "leetgpu" in challenge.tolerance.policies else ours), ours


def seen_under(result: GradeResult, policy: str) -> GradeResult:
    """The same grading as if run under `policy`, one of its also-policies:
    each case's status and message under it, its own moved to `also` (the
    verdicts of the other statuses do not depend on a policy). Lets one
    grading under our policy, with LeetGPU's alongside, answer as `check`."""
    if result.policy == policy:
        return result
    cases = []
    for case in result.cases:
        if policy in case.also:
            status, message = case.also[policy]
            also = {**{k: v for k, v in case.also.items() if k != policy}, result.policy: (case.status, case.message)}
            case = case.model_copy(update={"status": status, "message": message, "also": also})
        cases.append(case)
    return result.model_copy(update={"cases": cases, "policy": policy})


def answer(challenge: Challenge, path: Path, result: GradeResult, gpu: str) -> CheckResult:
    leet_policy, our_policy = policies(challenge)
    source = path.read_text(encoding="utf-8-sig", errors="replace")
    findings = precheck.check(source, [a.name for a in challenge.signature])
    leet = _leetgpu_answer(challenge, result, gpu, findings)
    ours = _our_answer(result, leet_policy, our_policy, leet)
    return CheckResult(leetgpu=leet, ours=ours, prechecks=[f.as_dict() for f in findings],
                       estimate=estimate(challenge, gpu, result), result=result)


def _leetgpu_answer(challenge: Challenge, result: GradeResult, gpu: str, findings) -> LeetgpuAnswer:
    name = GPUS[gpu][0]
    blocking = [f for f in findings if f.blocking and f.rule in ("signature", "imports", "self_contained", "syntax")]
    theirs = {"example", challenge.performance.name, *challenge.leetgpu_cases}
    mine = [c for c in result.cases if c.name in theirs or not challenge.leetgpu_cases]
    failed = next((c for c in mine if c.status not in ("accepted", "skipped", "not_run")), None)
    # A crash, a time-out or a rule in any case stops a run there as it would stop theirs.
    stopper = next((c for c in result.cases if c.status in ("runtime_error", "time_limit_exceeded",
                                                            "memory_limit_exceeded", "compile_error",
                                                            "invalid_submission", "rejected")), None)
    not_run = [c.name for c in mine if c.status in ("skipped", "not_run")]
    if blocking:
        f = blocking[0]
        return LeetgpuAnswer(gpu=gpu, verdict="rejected", cases_not_run=not_run,
                             text=f"LeetGPU ({name}) would most likely refuse it: {f.problem} (line {f.line}). "
                                  f"Fix: {f.fix}")
    first = failed or stopper
    if first is not None:
        label = LEETGPU_VERDICTS.get(first.status, first.status)
        if first.status == "rejected":
            text = (f"LeetGPU ({name}) forbids it: {first.message.removeprefix('rule: ')} "
                    "(LeetGPU's rule: Triton and the framework's native features only)")
        else:
            text = f"LeetGPU ({name}) would most likely say: {label} on case {first.name} ({first.shape})"
            # (fp32: the error bound of a float32 computation in any order; tf32 passing says nothing of the kind)
            passing = [policy for policy, (status, _) in first.also.items() if status == "accepted" and policy == "fp32"]
            if first.status == "wrong_answer" and passing:
                # Float32-accurate, failed by LeetGPU's tolerance on this run's data
                # (cancellation on a random draw): its own draw may pass or fail.
                text = (f"LeetGPU ({name}) may say: {label} on case {first.name} ({first.shape}), on data like "
                        f"this run's: the result is float32-accurate (our {passing[0]} policy passes it) but "
                        "LeetGPU's tolerance fails it here; LeetGPU draws its own data, which may pass. Rerun "
                        "with other --seed values to see how often")
        return LeetgpuAnswer(gpu=gpu, verdict=first.status, case=first.name, text=text, cases_not_run=not_run)
    ran = [c for c in mine if c.status == "accepted"]
    stalled = next((c for c in result.cases if stalled_on_cpu(c)), None)
    if stalled is not None:
        # The file's own launch could not finish a small case here: a GPU
        # runs it, so what the rest passed says nothing of it (never Accepted).
        why = stalled.message.split(": ", 1)[-1].rstrip(".")
        return LeetgpuAnswer(gpu=gpu, verdict="unknown", case=stalled.name, cases_not_run=not_run,
                             text=f"not judged here: case {stalled.name} ({stalled.shape}) could not finish under "
                                  f"Triton's interpreter ({why}). The {len(ran)} "
                                  "of LeetGPU's cases that ran passed, but a GPU runs that case too, so they do "
                                  "not say what LeetGPU would: check on a GPU")
    if not ran:
        return LeetgpuAnswer(gpu=gpu, verdict="unknown", cases_not_run=not_run,
                             text=f"no LeetGPU case could run here: {result.message}")
    text = f"LeetGPU ({name}) would most likely say: Accepted"
    if not_run:
        text += f" (on the {len(ran)} of its cases run here; not run on CPU: {', '.join(not_run)})"
    risky = next((c for c in result.cases if c.name not in theirs and c.status == "wrong_answer"), None)
    if risky is not None:
        text += (f"; but its rule fails our case {risky.name} ({risky.shape}): {risky.message}. Its own "
                 "larger cases may fail the same way")
    return LeetgpuAnswer(gpu=gpu, verdict="accepted", text=text, cases_not_run=not_run)


def _our_answer(result: GradeResult, leet_policy: str, our_policy: str, leet: LeetgpuAnswer) -> OurAnswer:
    """Our verdict on the same outputs (all our cases, our default policy),
    and why it differs from LeetGPU's when it does."""
    if our_policy == leet_policy:
        first = next(((c, c.status, c.message) for c in result.cases
                      if c.status not in ("accepted", "skipped", "not_run")), None)
    else:
        first = _first_failing_under(result.cases, our_policy)
    verdict = first[1] if first else "accepted"
    stalled = next((c for c in result.cases if stalled_on_cpu(c)), None) if first is None else None
    if stalled is not None:
        # The verdict `judge submit` gives the same file (judge.verdicts.submission_verdict).
        return OurAnswer(policy=our_policy, verdict=Verdict.INTERNAL_ERROR.value, differs=False,
                         text=f"our judge ({our_policy}): not judged on CPU (case {stalled.name}, {stalled.shape}, "
                              "could not finish under Triton's interpreter)")
    differs = leet.verdict != "unknown" and verdict != leet.verdict
    unrun = sum(c.status in ("skipped", "not_run") for c in result.cases)
    counted = (f"all {len(result.cases)} cases" if not unrun
               else f"{len(result.cases) - unrun} of {len(result.cases)} cases run, {unrun} not")
    text = f"our judge ({our_policy}, {counted}): {verdict}"
    if first:
        text += f" on case {first[0].name} ({first[0].shape}) — {first[2]}"
    if differs and verdict == "accepted" and leet.verdict == "wrong_answer":
        text += (". LeetGPU's rule compares each element with torch's float32 result, ours with the exact "
                 "answer: this kernel is float32-accurate, but its summation order moves outputs near zero "
                 "past LeetGPU's tolerance (another tiling, split or order of blocks); it may be rejected there "
                 "all the same")
    elif differs and verdict != "accepted" and first and first[0].name not in (leet.case, None) \
            and leet.verdict == "accepted":
        text += ". LeetGPU's published cases pass; ours are stricter (more shapes, more values)"
    return OurAnswer(policy=our_policy, verdict=verdict, differs=differs, text=text)


def _first_failing_under(cases: list[CaseResult], policy: str):
    for case in cases:
        if policy in case.also and case.also[policy][0] != "accepted":
            return case, case.also[policy][0], case.also[policy][1]
        if case.status not in ("accepted", "wrong_answer", "skipped", "not_run"):
            return case, case.status, case.message
    return None


def estimate(challenge: Challenge, gpu: str, result: GradeResult) -> str | None:
    """Where the performance case stands on the chosen GPU: measured when it
    was timed here, else the roofline's lower bound from the work measure."""
    case = challenge.performance
    dims = ", ".join(f"{d}={v:,}" for d, v in case.dims.items())
    if result.latency_ms is not None:
        return f"performance case ({dims}) measured here on {result.device_name}: {result.latency_ms:.3f} ms"
    name, bandwidth, fp32, tf32 = GPUS[gpu]
    parts = []
    moved, flops = challenge.byte_count(case), challenge.flop_count(case)
    bounds = []
    if moved:
        bounds.append(moved / (bandwidth * 1e9) * 1e3)
        parts.append(f"moving {f'{moved / 1e9:.2f} GB' if moved >= 1e8 else f'{moved / 1e6:.1f} MB'} takes ≥ {bounds[-1]:.3f} ms at {bandwidth:,} GB/s")
    compute_ms = flops / (fp32 * 1e12) * 1e3 if flops else 0.0
    if flops and compute_ms >= 0.1 * max(bounds, default=0.0):  # (a memory-bound case's arithmetic is no bound)
        bounds.append(compute_ms)
        # TF32 only where the arithmetic bounds the case (a matrix product's tensor cores)
        tf32_note = (f" ({flops / (tf32 * 1e12) * 1e3:.3f} ms at TF32's {tf32:g}, which fails the fp32 accuracy)"
                     if tf32 and compute_ms >= max(bounds) else "")
        parts.append(f"{flops / 1e9:,.{0 if flops >= 1e10 else 2}f} GFLOP take ≥ {compute_ms:.3f} ms at {fp32:g} "
                     f"TFLOPS of float32 FMA{tf32_note}")
    if not bounds:
        return None
    return (f"performance case ({dims}) not timed here; on a {name} a kernel needs at least "
            f"{max(bounds):.3f} ms ({'; '.join(parts)}). Well-tuned kernels reach 60–90% of that bound.")
