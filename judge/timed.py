"""The judge's side of timing: asking a worker to time solve on the
performance case, then checking what it reports against what the judge
knows (every set's final output in full, every timed call's check sums),
and the baselines it is compared with."""

from __future__ import annotations

import math
import random
import time
from typing import TYPE_CHECKING

from . import baselines as baselines_mod
from . import cases as case_data
from . import gpuinfo, timecheck
from .casework import Run, fill, status_of
from .challenge import Case
from .errors import ProtocolError, WorkerDied, WorkerTimeout
from .results import CaseResult, Performance, Timing

if TYPE_CHECKING:
    from .slots import Slot

TIMED_SETS = 3  # buffer sets rotated while timing (refilled with fresh data every call)
CHECKSUM_TOLERANCE = 1e-7  # of the challenge's checksum scale: see stale_calls
SAMPLED_CALLS = 16  # timed calls recomputed in full (both sums): see stale_calls
SUM_SLACK = 1e-6  # of Σ|expected|: float32 rounding of every output, many times over
WEIGHTED_SPREAD = 8.0  # a weighted sum's allowance, in spreads of its honest error: see stale_calls
ACCOUNT_RULE = "rule: the timing report must account for every timed call"


def time_performance(run: Run, case: Case, slot: "Slot", attempt: int = 0,
                     before_go=None) -> tuple[Timing | None, CaseResult | None]:
    """Latency of the performance case over TIMED_SETS input sets. Every
    set's final output is checked in full, and timed calls' check sums
    against their fresh inputs: a call that skipped or changed its work is
    caught. `attempt`: a second timing draws fresh data (see clock_refused).
    `before_go`: run once warm-up is over, before the timed calls may start
    (WorkerProcess.request_timed)."""
    challenge = run.challenge
    plan = case_data.input_plan(challenge, case)
    seeds = [case_data.case_seed(run.secret, challenge.name, run.seed, case.name, 1000 + 10 * attempt + i)
             for i in range(TIMED_SETS)]
    base = case_data.case_seed(run.secret, challenge.name, run.seed, case.name, 999 - attempt)
    assert slot.worker is not None
    failure = CaseResult(name=f"{case.name} (timed)", kind="performance",
                         shape=challenge.shape_label(case), dims=dict(case.dims), status="not_run")
    before = gpuinfo.snapshot()
    asked = time.monotonic()
    try:
        # Three steps (warm-up, go, report): the judge's own clock brackets
        # the timed calls alone (judge.timecheck).
        size = run.reply_bytes(plan, len(seeds), with_inputs=False)
        reply, blobs, window_s = slot.worker.request_timed(
            {"op": "time", "plan": plan, "seeds": seeds, "retune": run.retune}, base,
            run.time_left(run.limits.case_timeout_s * 2), max_blob_bytes=size, share=run.shares(size),
            before_go=before_go)
    except (WorkerDied, ProtocolError) as exc:
        failure.status, failure.message = "runtime_error", f"while timing: {exc}"
        slot.stop()
        return None, failure
    except WorkerTimeout as exc:
        failure.status, failure.message = "time_limit_exceeded", f"while timing: {exc}"
        slot.stop()
        return None, failure
    wall_s = time.monotonic() - asked
    run.phases["timing_worker"] = round(wall_s, 3)
    after = gpuinfo.snapshot()
    if reply.get("status") != "ok":
        failure.status, failure.message = status_of(reply), str(reply.get("message", ""))[:4000]
        return None, failure
    raw = reply.get("timing", {})
    if not isinstance(raw, dict):
        failure.status, failure.message = "runtime_error", "malformed timing from the worker: not a mapping"
        return None, failure
    summary_rule = timecheck.recount(raw)  # the judge's own median, mean and count, from the call times
    if summary_rule:
        failure.status, failure.message = "rejected", summary_rule
        return None, failure
    try:
        # Each set's buffers hold the data of the last timed call made on it.
        last = [int(r) if r is not None else None for r in raw["last_call"]]
        final_seeds = [seeds[i] if r is None else case_data.call_seed(base, r) for i, r in enumerate(last)]
        unaccounted = unaccounted_calls(raw, len(seeds))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        failure.status, failure.message = "runtime_error", f"malformed timing from the worker: {exc}"
        return None, failure
    if unaccounted:
        failure.status, failure.message = "rejected", f"{ACCOUNT_RULE}: {unaccounted}"
        return None, failure
    _record_steps(run, reply)
    clock = time.monotonic()
    # Outputs only: the timer refills every input before every call, so what
    # solve does to them reaches no other call (and the rule that solve
    # leaves its inputs alone is checked on every functional case).
    try:
        outputs, inputs, rule = run.unpack(plan, blobs, final_seeds, with_inputs=False)
    except ProtocolError as exc:  # the worker's bytes, not the judge's fault
        failure.status, failure.message = "runtime_error", f"the worker sent garbage: {exc}"
        return None, failure
    run.phases["timing_unpack"] = round(time.monotonic() - clock, 3)
    if rule:
        failure.status, failure.message = "rejected", rule
        return None, failure
    clock = time.monotonic()
    for i, (got, made) in enumerate(zip(outputs, inputs)):
        cmp = run.compare([got], [made])
        if not cmp.passed:
            fill(failure, cmp)
            failure.message = f"the output of the timed calls on input set {i} is wrong: {cmp.message}"
            return None, failure
    run.phases["timing_compare"] = round(time.monotonic() - clock, 3)
    clock = time.monotonic()
    try:
        stale = stale_calls(run, plan, base, raw["checks"])
        run.phases["timing_call_sums"] = round(time.monotonic() - clock, 3)
        median = float(raw["median_ms"])
        flops, moved = challenge.flop_count(case), challenge.byte_count(case)
        gbps = moved / (median * 1e-3) / 1e9 if moved else None
        peak = gpuinfo.peak_bandwidth_gbps()
        timing = Timing(**{k: raw[k] for k in ("median_ms", "mean_ms", "min_ms", "sem_ms", "reps",
                                                "l2_flush_bytes", "sets", "warmup_calls")},
                        median_ci_ms=raw.get("median_ci_ms"), head_start_s=float(raw.get("head_start_s") or 0.0),
                        host_call_ms=_number(raw.get("host_call_ms")), warmup_gpu_ms=_number(raw.get("warmup_gpu_ms")),
                        tflops=flops / (median * 1e-3) / 1e12 if flops else None,
                        gbps=gbps, percent_of_bandwidth=100 * gbps / peak if gbps and peak else None,
                        gpu_before=before, gpu_after=after,
                        throttle_warning=gpuinfo.throttle_warning(before, after))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        failure.status, failure.message = "runtime_error", f"malformed timing from the worker: {exc}"
        return None, failure
    if stale:
        failure.status = "wrong_answer"
        failure.message = (f"{len(stale)} of the timed calls checked left an output whose check sum is not "
                           f"that of their fresh inputs (first: call {stale[0]}): work skipped, cached "
                           "or changed")
        return None, failure
    # The reported latency against the judge's own clock, less the timer's
    # own work, measured here on the same GPU and shapes.
    clock = time.monotonic()
    head = stand_in_head_start(raw)
    if run.harness is not None:
        harness = run.harness.cost(plan, seeds, device=run.device, limits=run.limits, head_start_s=head)
    else:
        harness = timecheck.harness_cost(plan, seeds, device=run.device, limits=run.limits, head_start_s=head)
    rule = timecheck.check(raw, window_s, harness)
    if rule:
        # The stand-in's cost may have been measured minutes ago, when the
        # host was quicker: the worker's host path per call varies 2-3x from
        # one grading to the next on one machine (1.4-5.3 ms on an H200), and
        # an honest one-launch reduction was refused in 2 of 4 gradings
        # against a cost measured earlier. Measured again now, before refusing.
        harness = timecheck.harness_cost(plan, seeds, device=run.device, limits=run.limits, fresh=True,
                                         head_start_s=head)
        rule = timecheck.check(raw, window_s, harness)
    if rule:
        # A solve that synchronises puts the timer's host work in series with
        # its calls: the report is held against that stand-in too, timed
        # only now (most files never need it), before it is refused.
        synced = timecheck.harness_cost(plan, seeds, device=run.device, limits=run.limits,
                                        stand_in=timecheck.NULL_SOLVE_SYNCED, head_start_s=head)
        if timecheck.check(raw, window_s, synced) is None:
            rule = None
    run.phases["timing_clock_check"] = round(time.monotonic() - clock, 3)
    if median <= 0 or rule:
        failure.status = "rejected"
        failure.message = rule or f"{timecheck.RULE}: the worker reported a latency of {median} ms"
        return None, failure
    return timing, None


def stand_in_head_start(raw: dict) -> float:
    """The head start the judge's stand-in is timed at: the one the worker
    reports for its calls where it is one the timer gives (a longer host
    path gets a longer one: judge.timing.HEAD_STARTS_S), else the shortest.
    The check credits no more than the stand-in spent (judge.timecheck)."""
    from .timing import HEAD_START_S, HEAD_STARTS_S
    claimed = raw.get("head_start_s")
    return claimed if claimed in HEAD_STARTS_S and not isinstance(claimed, bool) else HEAD_START_S


def clock_refused(failure: CaseResult | None) -> bool:
    """Whether a timing failed only because the judge's clock contradicted
    the report (judge.timecheck). A patched timer does that every time; an
    honest one can once, when another process used the GPU during its
    window (its calls' events do not see the time between them), so the
    grader times such a file a second time, on fresh data, before the
    verdict stands."""
    return failure is not None and failure.status == "rejected" and failure.message.startswith(timecheck.RULE)


def harness_worker(run: Run):
    """A judge.timecheck.HarnessWorker for the performance case, or None
    when this process has its timer's cost on that plan measured lately."""
    plan = case_data.input_plan(run.challenge, run.challenge.performance)
    if timecheck.is_cached(plan, TIMED_SETS, run.device):
        return None
    return timecheck.HarnessWorker(run.device, run.limits)


def _record_steps(run: Run, reply: dict) -> None:
    """Where the timing request's seconds went, for phase_seconds: the
    judge's clock on each step, and the worker's own figures (diagnosis
    only: nothing is decided on them)."""
    steps = dict(reply.get("clocks") or {})
    worker = reply.get("steps") if isinstance(reply.get("steps"), dict) else {}
    raw = reply.get("timing") if isinstance(reply.get("timing"), dict) else {}
    steps.update({f"worker_{k}": v for k, v in worker.items()})
    steps.update(worker_warmup=raw.get("warmup_wall_s"), worker_timed=raw.get("timed_wall_s"))
    for name, value in steps.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            run.phases[f"timing_{name}"] = round(float(value), 3)


def unaccounted_calls(raw: dict, sets: int) -> str:
    """What the worker's timing report leaves out, or "": one check-sum
    entry per timed call, calls 0 … reps−1 in order, on the `sets` input
    sets in turn, and each set's last call where the rotation puts it. The
    worker's timer writes exactly that; a report that keeps only some calls'
    sums (a timer patched to drop the faked ones) or points the final
    output check at an earlier call does not."""
    reps = int(raw["reps"])
    if int(raw["sets"]) != sets:
        return f"timed on {raw['sets']} input sets, not the {sets} the judge asked for"
    calls = [int(check[0]) for check in raw["checks"]]
    if calls != list(range(reps)):
        return f"{reps} calls timed, check sums for {len(calls)} ({calls[:5]}…)"
    last = [int(r) if r is not None else None for r in raw["last_call"]]
    expected = [max(range(i, reps, sets), default=None) for i in range(sets)]
    if last != expected:
        return f"the last call on each input set is given as {last}, not {expected}"
    return ""


def stale_calls(run: Run, plan: dict, base: int, checks: list) -> list[int]:
    """Timed calls whose output check sums are not the ones their fresh
    inputs imply: skipped, cached or changed work.

    - Where the challenge has a cheap checksum, every call's plain sum is
      checked with it (for matmul, (1ᵀA)(B1): two data sets of the
      performance case differ by ~3e-6 of the scale, float32 or TF32
      rounding by ~1e-9; the bound sits between).
    - Always, SAMPLED_CALLS calls the worker cannot predict are recomputed
      in full and both their sums checked, the plain and the one with ±1
      weights by position. A plain sum alone can be met cheaply without the
      work (one element holding (1ᵀA)(B1), a copy for a transpose); the
      weighted one cannot, as its weights have no structure to exploit
      (judge.cases.check_weights) and its bound is its honest error's
      spread, not the worst case (WEIGHTED_SPREAD). A median moves only if over half the timed
      calls are faked, and then all the sampled calls miss them with
      probability under 2^-SAMPLED_CALLS."""
    checksum = run.challenge.checksum_fn()
    stale: set[int] = set()
    if checksum is not None:
        for r, _, total, *_ in checks:
            expected, scale = checksum(case_data.make_inputs(plan, case_data.call_seed(base, int(r)), run.device))
            if not math.isfinite(total) or abs(total - expected) > CHECKSUM_TOLERANCE * scale + 1e-30:
                stale.add(int(r))
    import torch
    # Seeded by the secret: the worker cannot know which calls are recomputed.
    pick = random.Random(case_data.case_seed(run.secret, run.challenge.name, run.seed, "sampled calls", base))
    sample = sorted(pick.sample(range(len(checks)), min(SAMPLED_CALLS, len(checks))))
    atol, rtol = run.policy.allclose or (0.0, 0.0)
    for index in sample:
        r, _, total, *rest = checks[index]
        if not rest:  # a report without the weighted sum cannot be checked
            stale.add(int(r))
            continue
        weighted = rest[0]
        expected = run.exact(case_data.make_inputs(plan, case_data.call_seed(base, int(r)), run.device))
        ref = torch.cat([expected[name].float32().reshape(-1).to(torch.float64) for name in sorted(expected)])
        weights = torch.cat([case_data.check_weights(expected[name].exact.numel(), ref.device)
                             for name in sorted(expected)])
        tolerance = atol + rtol * ref.abs()
        slack = float(SUM_SLACK * ref.abs().sum()) + 1e-30
        # The plain sum: every element's error may lean the same way. The
        # weighted one: the weights are independent of any honest error, so
        # its error is a random-sign sum, under WEIGHTED_SPREAD of its
        # spread but with probability ~exp(-WEIGHTED_SPREAD²/2) (Hoeffding).
        # The worst case summed (n·tolerance) had let a call that wrote the
        # plain sum alone pass its weighted sum ~1 time in 3 under LeetGPU's
        # 1e-4 at matmul's performance size.
        allowed = (float(tolerance.sum()) + slack, WEIGHTED_SPREAD * float(tolerance.square().sum().sqrt()) + slack)
        for got, want, bound in ((total, float(ref.sum()), allowed[0]),
                                 (weighted, float((ref * weights).sum()), allowed[1])):
            if not math.isfinite(float(got)) or abs(float(got) - want) > bound:
                stale.add(int(r))
                break
    return sorted(stale)


def baselines(run: Run, case: Case) -> tuple[dict[str, dict] | None, str | None]:
    """Library and reference latencies on the timed shape (set 0's data)."""
    factory = run.challenge.baselines_fn()
    if factory is None:
        return None, None
    from .grader import versions
    gpu = gpuinfo.snapshot()
    if not gpu.get("available"):
        import torch
        gpu = {"name": torch.cuda.get_device_name(), "driver": "unknown"}
    # The libraries' versions (not the judge's own: a change to its code leaves torch's and cuBLAS's speed as it was).
    libraries = {name: value for name, value in versions().items() if name != "tritonjudge"}
    key = baselines_mod.cache_key(run.challenge.name, run.challenge.shape_label(case), gpu, libraries)
    plan = case_data.input_plan(run.challenge, case)
    seed = case_data.case_seed(run.secret, run.challenge.name, run.seed, case.name, 1000)
    measured, cached = baselines_mod.get(
        key, lambda: factory(case_data.make_inputs(plan, seed, run.device)),
        refresh=run.options.refresh_baselines)
    return measured, ("cached" if cached else "measured now")


def performance(run: Run, case: Case, timing: Timing) -> Performance | None:
    measured, source = baselines(run, case)
    if not measured:
        return None
    ms = {name: float(stats["median_ms"]) for name, stats in measured.items()}
    return Performance(baselines_ms=ms, baselines_source=source,
                       percent_of={k: 100 * v / timing.median_ms for k, v in ms.items()},
                       speedup_over={k: v / timing.median_ms for k, v in ms.items()})


def _number(value) -> float | None:
    """A diagnostic number from the worker's report, or None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
