"""Grading one submission: the public entry point `grade`.

For each case the judge sends a worker a plan and seeds; the worker builds
the inputs, runs solve and returns the raw output buffers. The judge builds
the same inputs itself, computes the truth with the challenge's reference,
checks the guard bands and inputs, and hands both to the comparison policy
(judge.casework); the performance case is then timed (judge.timed). Where
the cases run: judge.slots.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import hashlib
import os
import platform
import shutil
import time
import traceback
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from . import cuda_early, cuda_ipc, gpu_lock, gpu_pause, isolation, scratch, timed, warm_cache
from .casework import Run
from .errors import UsageError
from .isolation import Limits, sandbox_for
from .sandbox import give_to, new_user
from .results import CaseResult, GradeResult, Performance, Timing
from .scoring import ScoringPolicy
from .scoring import score as compute_score
from .slots import (Slot, Stopping, guess_device, load_request, run_cases, slot_count, spawn, stop_all, unrun,
                    worker_hidden)
from .verdicts import Verdict, submission_verdict, summary
from .worker_output import join_capped

__all__ = ["GradeOptions", "GradeResult", "CaseResult", "Timing", "Performance", "grade", "prestart",
           "choose_device", "versions"]


class GradeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    challenge: str = "matrix_multiplication"
    device: Literal["cpu", "cuda"] | None = None  # None: cuda if available
    policy: str | None = None  # None: the challenge's default
    seed: int | None = None
    stop_on_wrong_answer: bool = False
    time: bool = True
    refresh_baselines: bool = False
    workers: int | None = Field(None, ge=1, le=16)  # None: judge.slots.default_workers
    scoring: ScoringPolicy | None = None  # None: the challenge's own scale
    limits: Limits = Field(default_factory=Limits)
    # Other policies each case's outputs are also compared under (the
    # verdict stays the policy's): CaseResult.also says how each judged it.
    also_policies: list[str] = []
    # CPU mode: round float32 tl.dot inputs to TF32 as an Ampere-or-newer GPU
    # does (False: as a T4 computes them, in float32).
    emulate_tf32: bool = True
    # Folders a sandboxed worker must not see, beyond the secret's and the
    # submission's own (a batch adds its results folder and the class folder).
    hidden_paths: list[str] = []
    # On a GPU, large buffers cross from the worker by CUDA IPC (judge.cuda_ipc),
    # with the socket as the fallback; False: always the socket.
    share_gpu_buffers: bool = True
    # A GPU shared with other gradings (judge.gpu_lock, "FOLDER#GPU"): the
    # cases run beside theirs, the timing alone, in a worker of its own.
    gpu_lock: str | None = None


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
    out = {"python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__,
           "tritonjudge": judge_version()}
    if torch.cuda.is_available():
        out["cuda"] = str(torch.version.cuda)
    return out


@functools.lru_cache(maxsize=1)
def judge_version() -> str:
    """The judge's version and a digest of its code and challenges: results
    made by two different judges are told apart (a batch kept a judge bug's
    verdicts across an upgrade with nothing to show which judge made them)."""
    from . import __version__
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted([*root.rglob("*.py"), *(root.parent / "challenges").rglob("*.toml")]):
        if "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(root.parent)).encode() + b"\0" + path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"


def prestart(path: str | os.PathLike, options: GradeOptions) -> list:
    """Workers for `path`, started now (each imports torch and Triton, a few
    seconds) for a later grade(path, options, prestarted=...): a batch
    starts the next file's workers while it grades this one. Each is a
    fresh process that has run nothing of any submission yet."""
    from . import challenge as challenges
    challenge = challenges.load(options.challenge)
    device = options.device or guess_device()
    cache = shared_cache(device)
    hidden = worker_hidden(options)
    return [spawn(Path(path), device, options.limits, hidden, cache)
            for _ in range(_worker_count(options, challenge, device))]


def _case_slots(options: GradeOptions, challenge, device: str) -> int:
    """The workers running cases (the example, the functional cases, the performance case)."""
    return slot_count(options, len(challenge.functional) + 2, device)


def _worker_count(options: GradeOptions, challenge, device: str) -> int:
    """The case slots, plus, on a shared GPU where a worker cannot be held
    paused (no checkpoint lock in the driver), the worker that times alone."""
    fresh_timer = options.gpu_lock and device == "cuda" and gpu_pause.driver() is None
    return _case_slots(options, challenge, device) + (1 if fresh_timer else 0)


def shared_cache(device: str) -> Path:
    """A Triton cache folder for the workers of one grading: fresh, with the
    judge's own seed in it on a GPU (judge.warm_cache)."""
    cache = Path(scratch.folder("judge-triton-"))
    if device == "cuda":
        warm_cache.fill(cache)
    if sandbox_for(device).own_user:
        # The grading's own user (judge.worker.privileges): its workers all
        # write here, and no other grading's can (judge.isolation.WorkerProcess).
        give_to(cache, new_user())
    return cache


def grade(path: str | os.PathLike, options: GradeOptions | None = None,
          prestarted: list | None = None, progress=None) -> GradeResult:
    """Grade one submission file. Raises UsageError for bad requests; every
    fault of the submission, and of the judge itself, ends in a result.
    `prestarted`: workers from prestart() for this same path and options.
    `progress(text)`: told what the grading does now (a status line)."""
    options = options or GradeOptions()
    from . import challenge as challenges
    challenge = challenges.load(options.challenge)
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    policy_name = options.policy or challenge.tolerance.default_policy
    if policy_name not in challenge.tolerance.allowed_policies:
        raise UsageError(f"policy {policy_name!r} is not defined for {challenge.name} "
                         f"(defined: {', '.join(challenge.tolerance.allowed_policies)})")
    scoring = options.scoring or scoring_for(challenge, policy_name)
    for name in options.also_policies:
        if name not in challenge.tolerance.allowed_policies:
            raise UsageError(f"policy {name!r} is not defined for {challenge.name}")
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    # Start the workers before importing torch here: both take seconds.
    guess = options.device or guess_device()
    if guess == "cuda":
        cuda_early.start()  # this process's GPU context, made while it imports torch
    early = list(prestarted) if prestarted else prestart(path, options)
    cache = early[0].triton_cache or shared_cache(guess)
    # Where a GPU is shared, a worker runs the file's code only while its
    # grading holds the GPU lock: held now, it is kept for the cases.
    lock = gpu_lock.from_spec(options.gpu_lock) if guess == "cuda" else None
    held_early = lock.try_shared() if lock is not None and not prestarted else None
    if not prestarted and (lock is None or held_early is not None):
        # Each loads the file as soon as it is ready, while this process
        # imports torch.
        for worker in early[:_case_slots(options, challenge, guess)]:
            worker.send_ahead(load_request(challenge, guess, options))
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
        run = Run(challenge, path, device, options)
        run.triton_cache, run.on_progress = cache, progress
        if device == "cuda" and options.time:
            # The judge's stand-in for measuring its timer's cost starts now,
            # beside the grading, unless this process measured it lately.
            run.harness = timed.harness_worker(run)
    except BaseException:
        for worker in early:
            worker.close()
        shutil.rmtree(cache, ignore_errors=True)
        if held_early is not None:
            gpu_lock.GpuLock.free(held_early)
        raise

    timing: Timing | None = None
    timing_note: str | None = None
    performance: Performance | None = None
    ordered = [(challenge.example, "example")] + [(c, "functional") for c in challenge.functional] \
        + [(challenge.performance, "performance")]
    results: list[CaseResult] = []
    load_message = ""
    slots = [Slot(run) for _ in range(_case_slots(options, challenge, device))]
    for slot, worker in zip(slots, early):
        slot.worker, slot.loaded = worker, False
    if device != "cuda":
        lock = None
        if held_early is not None:
            gpu_lock.GpuLock.free(held_early)
            held_early = None
    elif lock is None:  # the guess was the CPU
        lock = gpu_lock.from_spec(options.gpu_lock)
    # On a shared GPU: the worker that times. The first case worker, held
    # paused from the end of the cases until the GPU is this grading's alone
    # (_hold); else a fresh one, loaded under the lock.
    alone = Slot(run)
    if lock is not None and len(early) > len(slots):
        alone.worker, alone.loaded = early[len(slots)], False
    else:
        for worker in early[len(slots):]:
            worker.close()
    run.phases["setup"] = round(time.monotonic() - started, 3)
    stopping: Stopping | None = None
    try:
        # Stepping aside for another grading's timing (judge.gpu_lock) waits
        # for the judge's own GPU work (the checks, the copies by CUDA IPC,
        # killing a worker) and holds it back until the timing is over.
        step_aside = dict(pauser=gpu_pause.pauser(spare=lambda: _held_pids(alone)), still=gpu_pause.still,
                          quiet=(run.checking, cuda_ipc.FETCH_LOCK, isolation.KILLS)) if lock else {}
        handed, held_early = held_early, None
        if lock is not None and handed is None:
            handed = lock.try_shared()
            if handed is None:
                run.progress("waiting for the GPU: another grading is timing on it")
        aside = (lambda now: run.progress("stepped aside: another grading is timing on this GPU" if now
                                          else "running the cases"))
        run.progress("loading the file and running the cases")
        with lock.shared(run.phases, held=handed, notify=aside, **step_aside) if lock else contextlib.nullcontext():
            results, load_message = run_cases(run, ordered, slots)
            if lock:
                # None of its workers may run outside the lock: killed, or
                # the one kept to time held paused (judge.gpu_pause.hold).
                if options.time and submission_verdict(results) is Verdict.ACCEPTED and _hold(run, slots[0], alone):
                    slots[0].worker, slots[0].loaded = None, False
                stop_all(slots)
            else:
                # The timing runs alone, in the first slot: the others are
                # killed now, and gone before its timed calls start.
                stopping = Stopping(run, slots[1:])
        verdict = submission_verdict(results)
        if verdict is Verdict.ACCEPTED:
            if device != "cuda":
                timing_note = "not timed: latency is measured on a GPU only (this run used the Triton interpreter)"
            elif not options.time:
                timing_note = "not timed: timing was turned off"
            elif lock is None:
                run.progress("timing")
                timing, performance = _time(run, slots[0], results, before_go=stopping.wait)
            else:
                # Alone: this lane's other processes (the next file's workers)
                # stopped too, all but the worker timed and the timer's stand-in.
                run.progress("waiting to have the GPU alone for the timing")
                with lock.exclusive(run.phases, still=gpu_pause.still, spare=lambda: _timing_pids(alone, run)):
                    run.progress("timing")
                    try:
                        if alone.held is not None:
                            alone.held.resume()
                            alone.held = None
                        timing, performance = _time(run, alone, results)
                    finally:
                        alone.stop()  # before the lock is released
            verdict = submission_verdict(results)
    except Exception:  # noqa: BLE001 - a judge fault must still yield a result
        verdict = Verdict.INTERNAL_ERROR
        load_message = "the judge failed: " + traceback.format_exc(limit=6)[-3000:]
        timing = None
    finally:
        clock = time.monotonic()
        if stopping is not None:
            stopping.wait()
        stop_all(slots + [alone], also=[run.harness.close] if run.harness is not None else [])
        shutil.rmtree(cache, ignore_errors=True)
        run.phases["teardown"] = round(time.monotonic() - clock, 3)

    message = summary(verdict, results, load_message)
    return GradeResult(
        verdict=verdict, message=message, challenge=challenge.name, submission=str(path),
        policy=run.policy.name, seed=run.seed, device=device, device_name=_device_name(device),
        versions=versions(), cases=results,
        latency_ms=timing.median_ms if timing else None, timing=timing, timing_note=timing_note,
        performance=performance,
        score=compute_score(scoring, verdict is Verdict.ACCEPTED, timing.median_ms if timing else None,
                            performance.baselines_ms if performance else None),
        sandbox=sandbox_for(device).describe(),
        stdout=join_capped(run.stdout, options.limits.output_cap_bytes),
        stderr=join_capped(run.stderr, options.limits.output_cap_bytes),
        started_at=started_at, duration_s=round(time.monotonic() - started, 3), phase_seconds=run.phases,
    )


def _time(run: Run, slot: Slot, results: list[CaseResult],
          before_go=None) -> tuple[Timing | None, Performance | None]:
    """Time the performance case in `slot` (loading its worker first when
    it is fresh) and compare with the baselines; a failure is appended to
    `results`. `before_go`: judge.timed.time_performance's."""
    challenge = run.challenge
    clock = time.monotonic()
    restart = slot.ensure()
    if restart:
        results.append(unrun(challenge, challenge.performance, "performance", *restart))
        return None, None
    run.phases["timing_load"] = round(time.monotonic() - clock, 3)
    clock = time.monotonic()
    timing, failure = timed.time_performance(run, challenge.performance, slot, before_go=before_go)
    if timed.clock_refused(failure):  # confirmed on fresh data before it stands (timed.clock_refused)
        run.phases["timing_first_attempt"] = run.phases.get("timing_worker", 0.0)
        clock = time.monotonic()
        timing, failure = timed.time_performance(run, challenge.performance, slot, attempt=1, before_go=before_go)
    # The judge's share: unpacking and checking the timed outputs.
    run.phases["timing_checks"] = round(time.monotonic() - clock - run.phases.get("timing_worker", 0.0), 3)
    if failure:
        results.append(failure)
        return None, None
    if timing is None:
        return None, None
    clock = time.monotonic()
    performance = timed.performance(run, challenge.performance, timing)
    run.phases["baselines"] = round(time.monotonic() - clock, 3)
    return timing, performance


def _hold(run: Run, slot: Slot, alone: Slot) -> bool:
    """Keep `slot`'s worker (loaded, its kernels compiled) for the timing:
    paused (queued GPU work drained, CUDA calls blocked, stopped) until the
    grading holds the GPU alone, and moved into `alone` in place of the
    fresh worker it would otherwise start (one less process per grading).
    The judge's own GPU work is let finish first, and a step aside for
    another timing cannot run meanwhile (the same locks). False where it
    cannot be paused: it is killed with the others."""
    if slot.worker is None or not slot.loaded or slot.worker.proc is None or slot.worker.proc.poll() is not None:
        return False
    clock = time.monotonic()
    fresh = alone.worker  # a fresh timer started early (no checkpoint lock was found then): not needed now
    with run.checking, cuda_ipc.FETCH_LOCK:
        held = gpu_pause.hold(slot.worker.proc.pid)
        if held is None:
            return False
        # Marked held before a step aside can look (it takes the same locks).
        alone.worker, alone.loaded, alone.held = slot.worker, True, held
    run.phases["timing_hold"] = round(time.monotonic() - clock, 3)  # seconds to pause it: it was kept
    if fresh is not None:
        fresh.close()
    return True


def _held_pids(alone: Slot) -> tuple[int, ...]:
    """The worker held paused for the timing (already as stepped aside as
    it can be): a step aside leaves it alone."""
    if alone.held is None or alone.worker is None or alone.worker.proc is None:
        return ()
    return (alone.worker.proc.pid,)


def _timing_pids(alone: Slot, run) -> list[int]:
    """The processes a timing uses: its worker, and the judge's stand-in
    that measures the timer's own cost (judge.timecheck.HarnessWorker)."""
    workers = [alone.worker, getattr(run.harness, "worker", None)]
    return [w.proc.pid for w in workers if w is not None and w.proc is not None]


def scoring_for(challenge, policy: str | None = None) -> ScoringPolicy:
    """The challenge's performance scale as a policy: the tolerance policy's
    own scale where it names one, else the challenge's [scoring] table."""
    spec = challenge.tolerance.policies.get(policy or challenge.tolerance.default_policy)
    scale = spec.scoring if spec is not None and spec.scoring is not None else challenge.scoring
    if scale is None:
        return ScoringPolicy()
    return ScoringPolicy(**scale.model_dump())


def _device_name(device: str) -> str:
    if device == "cuda":
        import torch
        return torch.cuda.get_device_name()
    return f"CPU ({platform.processor() or platform.machine()}), Triton interpreter"
