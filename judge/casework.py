"""The judge's side of running cases: the state of one grading, what it asks
a worker for each case, and the checks of what comes back (sizes, guard
bands, inputs unchanged) before the comparison with the truth."""

from __future__ import annotations

import inspect
import math
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import cases as case_data
from . import clock, interpreter_stalls, progress, source_scan
from .challenge import Case, Challenge
from .compare import Comparison, Expected, Trial, policy_for
from .errors import ProtocolError, WorkerDied, WorkerTimeout
from .protocol import GUARD_BITS, INPUT_GUARD, NO_LAUNCH, OUTPUT_GUARD, POISON_BITS
from .results import CaseResult
from .verdicts import NOT_JUDGED_ON_CPU, TOO_SLOW_ON_CPU, Verdict

if TYPE_CHECKING:
    from .grader import GradeOptions
    from .slots import Slot

LARGE_CASE_BYTES = 256 << 20  # a case moving more than this runs alone, after the others
# A reply at least this large crosses by CUDA IPC on a GPU (mapping costs a
# fraction of a millisecond; the socket moves ~1-2 GB/s).
SHARE_MIN_BYTES = 4 << 20


class Run:
    """State of one grading shared by its workers: the case data, the
    checks, the clock, the output collected."""

    def __init__(self, challenge: Challenge, path: Path, device: str, options: "GradeOptions"):
        self.challenge = challenge
        self.path = path
        self.device = device
        self.options = options
        self.limits = options.limits
        self.policy = policy_for(challenge, options.policy)
        self.also = [policy_for(challenge, name) for name in options.also_policies]
        self.seed = options.seed if options.seed is not None else case_data.new_run_seed()
        self.secret = case_data.load_secret()
        self.deadline = clock.now() + self.limits.total_timeout_s  # judge.clock: pauses do not count
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.reference = challenge.reference_fn()
        self._reference_takes_fp32 = "need_fp32" in inspect.signature(self.reference).parameters
        self._reference_takes_scales = "need_scales" in inspect.signature(self.reference).parameters
        # The judge's own tensor work (building inputs, the truth, comparing)
        # is done one case at a time even while several workers run cases.
        self.checking = threading.Lock()
        self.phases: dict[str, float] = {}  # seconds by phase, for GradeResult.phase_seconds
        self.triton_cache: Path | None = None  # shared by this grading's workers (judge.slots.spawn)
        self.harness = None  # judge.timecheck.HarnessWorker, started early when the grading will be timed
        self.on_progress = None  # judge submit's status line: called with what the grading does now
        self._cases_done = 0
        self._counting = threading.Lock()
        # CPU mode, for judge.interpreter_stalls.recheck: the cases only not run
        # for their slowness (estimate, work), and those that ran (seconds, work).
        self.too_slow: dict[str, tuple[float, int]] = {}
        self.ran_in: dict[str, tuple[float, int]] = {}

    def progress(self, text: str) -> None:
        """Tell the person waiting what the grading does now; a failing
        display never stops a grading."""
        if self.on_progress is not None:
            try:
                self.on_progress(text)
            except Exception:  # noqa: BLE001
                pass

    def case_done(self, total: int) -> None:
        with self._counting:
            self._cases_done += 1
            done = self._cases_done
        self.progress(f"{done} of {total} cases run")

    # --- workers -------------------------------------------------------------

    def time_left(self, per_request: float) -> float:
        return max(0.1, min(per_request, self.deadline - clock.now()))

    def compile_watch(self, worker) -> "progress.CompileWatch | None":
        """On a GPU, a case is also stopped after Limits.idle_timeout_s
        without a sign of progress (judge.progress); under the interpreter
        nothing compiles, and its own budget rules."""
        if self.device != "cuda" or self.limits.idle_timeout_s >= self.limits.case_timeout_s:
            return None
        cache = worker.triton_cache or worker.scratch / "triton-cache"
        return progress.CompileWatch(cache, worker.proc.pid if worker.proc else None, self.limits.idle_timeout_s)

    def collect_output(self, out: str, err: str) -> None:
        if out:
            self.stdout.append(out)
        if err:
            self.stderr.append(err)

    # --- cases ---------------------------------------------------------------

    def seeds(self, case: Case) -> list[int]:
        return [case_data.case_seed(self.secret, self.challenge.name, self.seed, case.seed_name or case.name, t)
                for t in range(self.challenge.trials(case))]

    @staticmethod
    def layout(plan: dict, with_inputs: bool = True) -> list[tuple[str, str, list[int], str, int, int]]:
        """(kind, name, shape, dtype, guard, guard bits) of each buffer of one
        trial, in the order the worker sends them: outputs (out and inout),
        then (`with_inputs`) read-only inputs, by name."""
        outs = [("out", n, s["shape"], s.get("dtype", "float32"), OUTPUT_GUARD, GUARD_BITS)
                for n, s in sorted(plan["outputs"].items())]
        ins = [("in", n, s["shape"], s.get("dtype", "float32"), INPUT_GUARD, POISON_BITS)
               for n, s in sorted(plan["inputs"].items()) if s.get("role", "in") == "in"]
        return outs + ins if with_inputs else outs

    def reply_bytes(self, plan: dict, trials: int, with_inputs: bool = True) -> int:
        return trials * sum((math.prod(shape) + 2 * guard) * 4
                            for _, _, shape, _, guard, _ in self.layout(plan, with_inputs))

    def shares(self, reply_bytes: int) -> bool:
        """Whether a reply this large should cross by CUDA IPC (judge.cuda_ipc)."""
        return self.device == "cuda" and self.options.share_gpu_buffers and reply_bytes >= SHARE_MIN_BYTES

    def unpack(self, plan: dict, blobs: list, seeds: list[int], with_inputs: bool = True):
        """Check the worker's buffers against the trusted side's knowledge:
        sizes, guard bands untouched, inputs unchanged (when sent). Returns
        the outputs of each trial and the inputs the judge built, or the
        rule broken. A buffer is bytes from the socket or a uint8 CUDA
        tensor the judge copied by CUDA IPC; the checks are the same, on
        the host or on the GPU where the bytes are."""
        import torch
        layout = self.layout(plan, with_inputs)
        sizes = [(math.prod(shape) + 2 * guard) * 4 for _, _, shape, _, guard, _ in layout] * len(seeds)
        got_sizes = [b.numel() if isinstance(b, torch.Tensor) else len(b) for b in blobs]
        if got_sizes != sizes:
            raise ProtocolError(f"expected buffers of {sizes} bytes, got {got_sizes}")
        outputs, inputs = [], []
        for t, seed in enumerate(seeds):
            made = case_data.make_inputs(plan, seed, self.device)
            got = {}
            for i, (kind, name, shape, dtype, guard, bits) in enumerate(layout):
                blob = blobs[t * len(layout) + i]
                if isinstance(blob, torch.Tensor):
                    raw = blob.view(torch.int32)
                else:  # a bytearray the judge alone holds: viewed, not copied
                    raw = torch.frombuffer(blob, dtype=torch.int32) if len(blob) else torch.empty(0, dtype=torch.int32)
                bands = torch.cat([raw[:guard], raw[len(raw) - guard:]])
                if not bool((bands == _signed(bits)).all()):
                    where = "output" if kind == "out" else "input"
                    return None, None, f"rule: solve wrote outside the {where} tensor {name!r} (its guard band changed)"
                body = raw[guard:len(raw) - guard].reshape(shape)
                if kind == "in":
                    if not torch.equal(body, made[name].view(torch.int32).to(body.device)):
                        return None, None, f"rule: inputs must be unchanged, and solve modified {name!r}"
                else:
                    got[name] = body.view(getattr(torch, dtype)).to(self.device)
            outputs.append(got)
            inputs.append(made)
        return outputs, inputs, None

    @staticmethod
    def idle_rule(idle, outputs: list[dict], inputs: list[dict]) -> str | None:
        """The launch rule, for the trials whose solve launched no Triton
        kernel (`idle`, the worker's report): such a call is allowed only
        where the case needed no work, every output an in-place argument
        left bit for bit as the judge made it (one element reversed in
        place); a call that changed its outputs without one is rejected
        here, one that left them as they were is rejected once they are
        found wrong (run_case)."""
        import torch
        if not isinstance(idle, list) or not all(type(t) is int and 0 <= t < len(outputs) for t in idle):
            raise ProtocolError(f"expected a list of trials without a launch, got {idle!r:.200}")
        for t in idle:
            for name, got in outputs[t].items():
                bits = got.view(torch.int32)
                made = inputs[t].get(name)  # an in-place argument's input; else the poison stays
                same = (bool((bits == _signed(POISON_BITS)).all()) if made is None
                        else torch.equal(bits, made.view(torch.int32).to(bits.device)))
                if not same:
                    return f"{NO_LAUNCH}, yet {name!r} changed"
        return None

    def expected(self, made: dict) -> dict[str, Expected]:
        """The truth for one trial's inputs, from the challenge's reference."""
        if self._reference_takes_fp32:
            truth = self.reference(made, need_fp32=any(p.needs_fp32 for p in [self.policy, *self.also]))
        else:
            truth = self.reference(made)
        return {name: value if isinstance(value, Expected) else Expected(exact=value)
                for name, value in truth.items()}

    def exact(self, made: dict) -> dict[str, Expected]:
        """The truth's values alone, without the error scales a comparison
        needs (a reference that can skip them takes `need_scales`): what the
        check of a sampled timed call's sums uses (judge.timed.stale_calls)."""
        if not self._reference_takes_scales:
            return self.expected(made)
        truth = self.reference(made, need_scales=False)
        return {name: value if isinstance(value, Expected) else Expected(exact=value)
                for name, value in truth.items()}

    def compare(self, outputs: list[dict], inputs: list[dict], also: dict | None = None) -> Comparison:
        """The comparison under the grading's policy; with `also`, fills it
        with (status, message) under each of the other policies asked for."""
        trials = []
        for got, made in zip(outputs, inputs):
            expected = self.expected(made)
            for name in sorted(got):
                trials.append(Trial(got=got[name], expected=expected[name]))
        if also is not None:
            for policy in self.also:
                other = policy.compare(trials)
                why = f" ({other.diagnosis})" if other.diagnosis and not other.passed else ""
                also[policy.name] = ("accepted" if other.passed else "wrong_answer", other.message + why)
        return self.policy.compare(trials)

    def stalled(self, case: Case, reply: dict) -> str | None:
        """A case the file's own launches made too slow for the interpreter in
        a way no correct kernel does (judge.interpreter_stalls)."""
        return interpreter_stalls.stalled(reply, self.challenge.work_of(case),
                                          self.limits.interpreter_budget_s, self.challenge.large_for_cpu(case))

    def run_case(self, case: Case, kind: str, slot: "Slot") -> CaseResult:
        result = CaseResult(name=case.name, kind=kind, shape=self.challenge.shape_label(case),
                            dims=dict(case.dims), status="not_run")
        if self.device == "cpu":
            reason = self.challenge.fits_cpu(case)
            if reason:
                result.status, result.message = "skipped", reason
                return result
        if clock.now() >= self.deadline:
            result.message = f"not run: the submission's {self.limits.total_timeout_s:.0f} s limit is spent"
            return result
        started = time.monotonic()
        plan = case_data.input_plan(self.challenge, case)
        seeds = self.seeds(case)
        result.trials = len(seeds)
        assert slot.worker is not None
        # Short autotuner benchmarks (judge.worker.autotune) on every case: the
        # config a case checks need not be the best one. The config timed
        # must be the one Triton would choose, so the timing has the
        # autotuners choose again with Triton's own benchmark once the GPU is
        # its alone (Run.retune).
        request = {"op": "run", "plan": plan, "seeds": seeds, "return_inputs": True,
                   "quick_autotune": self.device == "cuda"}
        if self.device == "cpu":
            request["interpreter_budget_s"] = min(self.limits.interpreter_budget_s,
                                                  0.8 * self.time_left(self.limits.case_timeout_s))
        try:
            size = self.reply_bytes(plan, len(seeds))
            reply, blobs = slot.worker.request(request, self.time_left(self.limits.case_timeout_s),
                                               max_blob_bytes=size, share=self.shares(size),
                                               watch=self.compile_watch(slot.worker))
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
            if reply.get("status") == "interpreter_too_slow" and self.device == "cpu":
                said = str(reply.get("message", ""))
                said = said[len(TOO_SLOW_ON_CPU):].lstrip(" :") if said.startswith(TOO_SLOW_ON_CPU) else said
                stall = self.stalled(case, reply)
                label = NOT_JUDGED_ON_CPU if stall else TOO_SLOW_ON_CPU
                estimate = reply.get("estimate_s")
                if isinstance(estimate, (int, float)):
                    self.too_slow[case.name] = (float(estimate), self.challenge.work_of(case))
                said = f"{stall}: {said}" if stall else said
                result.status, result.message = "skipped", f"{label}: {said}"[:4000]
            elif reply.get("status") != "ok":
                result.status, result.message = status_of(reply), str(reply.get("message", ""))[:4000]
                if result.status == "rejected":
                    # A rule the audit hook saw ends the worker once its complaint is out
                    # (judge.worker.audit.final): an earlier case sent to it next died there
                    # (runtime_error on a GPU, where a large case broke the rule first).
                    slot.stop()
            else:
                with self.checking:
                    garbage = None
                    try:
                        outputs, inputs, rule = self.unpack(plan, blobs, seeds)
                        if not rule and "no_launch" in reply:
                            rule = self.idle_rule(reply["no_launch"], outputs, inputs)
                    except ProtocolError as exc:  # sizes that are not the plan's: the worker's fault
                        garbage = f"the worker sent garbage: {exc}"
                    if garbage:
                        result.status, result.message = "runtime_error", garbage
                    elif rule:
                        result.status, result.message = "rejected", rule
                    else:
                        fill(result, self.compare(outputs, inputs, also=result.also))
                        if reply.get("no_launch") and result.status != "accepted":
                            # It needed work after all (the truth is not its input): no kernel did it.
                            result.status, result.message = "rejected", f"{NO_LAUNCH} ({result.message})"
                        result.diagnosis = source_scan.explain(self.path, result.diagnosis)
                        note = reply.get("note")
                        if result.status != "accepted" and isinstance(note, str) and note:
                            # The CPU mode's race watch: the lanes it read as NaN (judge.worker.races).
                            result.message = f"{result.message} ({note[:1000]})"
                if garbage:
                    slot.stop()
        result.seconds = round(time.monotonic() - started, 3)
        if result.status == "accepted" and self.device == "cpu":
            self.ran_in[case.name] = (result.seconds, self.challenge.work_of(case))
        return result

    @property
    def retune(self) -> bool:
        """Whether the autotuners choose their configs again when the timing
        starts, alone on the GPU and with Triton's own benchmark: always on
        a GPU. The cases' choices were made with a short benchmark, and in a
        batch beside other lanes' work (an autotuned file read 14.5 ms in two
        of four batch gradings on the H100 when its cases chose, 9.3 ms in
        the others). Triton's benchmark then runs in the timing's first
        calls, which count toward its warm-up when an autotuner chose again
        there (judge.timing.measure's warm_since): before, a
        lone grading ran it in the case of the timed sizes instead, ~0.9 s
        of four configs there, on the grading's longest path."""
        return self.device == "cuda"

    def is_large(self, case: Case) -> bool:
        """Cases whose buffers are too big to run beside others: run alone."""
        plan = case_data.input_plan(self.challenge, case)
        return self.device == "cuda" and self.reply_bytes(plan, self.challenge.trials(case)) > LARGE_CASE_BYTES


def _signed(bits: int) -> int:
    """A 32-bit pattern as the int32 value torch compares it with."""
    return bits - (1 << 32) if bits >= 1 << 31 else bits


def fill(result: CaseResult, cmp: Comparison) -> None:
    result.status = "accepted" if cmp.passed else "wrong_answer"
    result.max_abs_err = cmp.stats.max_abs_err
    result.max_rel_err = cmp.stats.max_rel_err
    result.mismatches = cmp.mismatches
    result.bound_ratio = cmp.bound_ratio
    result.norm_ratio = cmp.norm_ratio
    result.first_mismatches = cmp.first_mismatches
    result.diagnosis = cmp.diagnosis
    result.message = cmp.message


def status_of(reply: dict) -> str:
    """The case status a worker's failure reply earns: anything unknown is a
    runtime error, and so is a claim of the judge's own failure (only the
    judge's side knows its faults; a file rewrote the worker's replies)."""
    status = reply.get("status")
    valid = {v.value for v in Verdict} - {"accepted", "internal_error"}
    return status if status in valid else "runtime_error"
