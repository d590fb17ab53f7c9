"""The workers of one grading and how cases are spread over them.

Cases run side by side, one slot (a worker process, restarted after it
dies) each: the first slot runs the large cases (one at a time, in a worker
of their own) while the others start on the small ones, grouped so that a
kernel's specialization compiles in one worker only; the timing runs alone,
in the first slot, after every case.
Results are reported as a one-at-a-time run in challenge order would give
them, so a file's verdict does not depend on how many workers ran it.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

from . import cases as case_data
from . import interpreter_stalls
from .sandbox import JUDGE_ROOT
from .casework import Run, status_of
from .challenge import Case, Challenge
from .errors import ProtocolError, WorkerDied, WorkerTimeout
from .isolation import Limits, WorkerProcess
from .results import STOPPING, CaseResult

if TYPE_CHECKING:
    from .grader import GradeOptions


COMPILE_COST = 1.0  # relative cost of a new specialization in a worker (compiling, ~0.5-1 s on the H100)
RUN_COST = 0.1  # relative cost of running and checking one small case once compiled


class Slot:
    """One worker process of a grading: started on demand, restarted after
    its worker died, stopped with its output kept."""

    def __init__(self, run: Run):
        self.run = run
        self.worker: WorkerProcess | None = None
        self.loaded = False  # False with a worker: started (maybe early), file not loaded yet
        self.held = None  # a judge.gpu_pause.Pause keeping its worker still (judge.grader._hold)

    def ensure(self) -> tuple[str, str] | None:
        """A loaded worker: None when ready, else (status, message)."""
        if self.worker is not None and self.loaded:
            return None
        run = self.run
        if self.worker is None:
            self.worker = spawn(run.path, run.device, run.limits, worker_hidden(run.options), run.triton_cache)
        try:
            reply, _ = self.worker.request(load_request(run.challenge, run.device, run.options),
                                           run.time_left(run.limits.load_timeout_s), max_blob_bytes=0)
        except WorkerDied as exc:
            if self.worker.importing:
                failure = "runtime_error", f"while loading the file: {exc}"
            else:  # before the file was imported: the judge's own failure (a batch grades it again)
                failure = "internal_error", f"the judge's worker failed before importing the file: {exc}"
        except WorkerTimeout as exc:
            failure = "time_limit_exceeded", f"while loading the file: {exc}"
        except ProtocolError as exc:
            failure = "runtime_error", f"while loading the file: the worker sent garbage ({exc})"
        else:
            if reply.get("status") == "ok":
                self.loaded = True
                startup = reply.get("startup")
                if isinstance(startup, dict) and "worker_import" not in run.phases:
                    # The first worker's own account of its start (diagnosis only).
                    for name in ("import_s", "warmup_s", "load_prepare_s", "load_arm_s", "load_import_s"):
                        if isinstance(startup.get(name), (int, float)):
                            run.phases[f"worker_{name[:-2]}"] = round(float(startup[name]), 3)
                return None
            failure = status_of(reply), str(reply.get("message", ""))[:4000]
        self.stop()
        return failure

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.close()  # first, so its pipes end and the output is complete
            self.run.collect_output(*self.worker.output())
            self.worker, self.loaded = None, False


def load_request(challenge: Challenge, device: str, options: "GradeOptions") -> dict:
    """The request that has a worker import the file (also sent ahead, while
    the judge starts: judge.grader)."""
    arg_names = [a.name for a in challenge.signature]
    return {"op": "load", "path": "submission.py", "device": device, "emulate_tf32": options.emulate_tf32,
            "gpu_memory_fraction": options.limits.gpu_memory_fraction, "arity": len(arg_names),
            "arg_names": arg_names, "signature": challenge.call_signature(),
            "refused_ops": list(challenge.rules.refused_ops), "refused_why": challenge.rules.why,
            "whole_copies": challenge.rules.whole_copies_only}


def worker_hidden(options) -> list[str]:
    """What a grading's workers must not see beyond what spawn hides: the
    caller's paths (a batch: its store and the class folder) and the GPU
    lock folders, whatever the device (a CPU grading's file held a GPU
    batch's lock files on the same host; a replacement worker, started
    after its first died, had them in view on a GPU too)."""
    from . import gpu_lock
    return [*options.hidden_paths, *gpu_lock.folders(options.gpu_lock)]


def spawn(path: Path, device: str, limits: Limits, extra_hidden: list[str] = (),
          triton_cache: Path | None = None) -> WorkerProcess:
    """A started worker for the submission at `path` (not loaded yet).
    `triton_cache`: a Triton cache folder shared by the workers of one
    grading (one submission), so a kernel one compiled the others reuse."""
    # Hidden from a sandboxed worker: the secret, the folder the submission
    # came from (its neighbours may be other students' files), the judge's
    # reference kernels (a file loaded the matrix product from its path), and
    # whatever the caller adds (a batch: its results store and the class folder).
    hidden = [case_data.secret_path().parent, path.resolve().parent, JUDGE_ROOT / "reference",
              *map(Path, extra_hidden), *_temp_outside_tmp()]
    worker = WorkerProcess(path, device, limits, hidden=hidden, triton_cache=triton_cache)
    worker.start()
    return worker


def _temp_outside_tmp() -> list[Path]:
    """The judge's temporary folder (TMPDIR) when the sandbox's private /tmp
    does not cover it: every grading's scratch and Triton cache live there,
    the next student's file among them. The worker's own are bound back."""
    import tempfile
    temp = Path(tempfile.gettempdir()).resolve()
    covered = any(temp == root or root in temp.parents for root in (Path("/tmp"), Path("/dev/shm")))
    return [] if covered else [temp]


def guess_device() -> str:
    """cuda when an NVIDIA device node exists; choose_device (torch) decides."""
    return "cuda" if os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0") else "cpu"


def default_workers(device: str, cores: int | None = None) -> int:
    """Case workers of one grading when not asked. Under the interpreter a
    worker keeps a core busy: one each, at most four. On a GPU a small case
    is mostly compiling (CPU work, one specialization at a time per worker),
    so half the cores, at most eight: on the H100's 16 cores eight workers
    cut matrix multiplication's cases from 4.2-5.1 s to 3.0-3.6 s and an
    autotuned file's from 14.6 to 8.8 s (bench/results/cost_workers_h100.md)."""
    cores = cores or os.cpu_count() or 1
    if device == "cuda":
        return min(8, max(min(4, cores), cores // 2))
    return min(4, cores)


def slot_count(options: "GradeOptions", cases: int, device: str | None = None) -> int:
    wanted = options.workers if options.workers is not None else default_workers(device or options.device or "cpu")
    return max(1, min(wanted, cases))


def run_cases(run: Run, ordered: list[tuple[Case, str]], slots: list[Slot]) -> tuple[list[CaseResult], str]:
    """Run the cases: the large ones one at a time in the first slot, the
    small ones spread over every slot's worker (judge.slots.assign). Results are reported as a one-at-a-time
    run in challenge order would give them: a case that stops the run stops
    every later case (those already run in parallel are reported not run),
    and every earlier one still runs. Returns the results and, when the file
    did not load, why."""
    challenge = run.challenge
    results: list[CaseResult | None] = [None] * len(ordered)
    stop_at = [len(ordered)]  # index of the first case that stopped the run
    lock = threading.Lock()
    large = [i for i, (case, _) in enumerate(ordered) if run.is_large(case)]
    queues = assign([i for i in range(len(ordered)) if i not in large], ordered, run, len(slots), len(large))
    load_failures: dict[int, tuple[str, str]] = {}  # slot number -> why its worker did not load the file

    def load(number: int, slot: Slot) -> bool:
        """Load the file in this slot's worker; each slot starts on its cases
        as soon as its own worker is ready (workers started side by side
        finish their start at different times). Any worker that cannot load
        the file stops the run: the file did not load."""
        clock = time.monotonic()
        failed = slot.ensure()
        if number == 0:
            run.phases["load"] = round(time.monotonic() - clock, 3)
        if failed:
            with lock:
                load_failures[number] = failed
                stop_at[0] = 0
        return not failed

    def run_one(index: int, slot: Slot) -> None:
        case, kind = ordered[index]
        restart = slot.ensure()  # after a worker died: a fresh one
        if restart:
            result, stops = unrun(challenge, case, kind, *restart), True
        else:
            result = run.run_case(case, kind, slot)
            stops = result.status in STOPPING or (result.status == "wrong_answer"
                                                  and run.options.stop_on_wrong_answer)
        results[index] = result
        run.case_done(len(ordered))
        if stops:
            with lock:
                stop_at[0] = min(stop_at[0], index)

    def next_index(own: deque) -> int | None:
        """The slot's next case in challenge order; when its own are done,
        the last case of the longest other queue (no worker idles while
        another has a backlog)."""
        with lock:
            if own and own[0] < stop_at[0]:
                return own.popleft()
            own.clear()  # every case left in it comes after the stop
            donor = max(queues, key=len)
            if len(donor) > 1 and donor[-1] < stop_at[0]:
                return donor.pop()
            return None

    def serve(number: int, slot: Slot) -> None:
        if not load(number, slot):
            return
        if number == 0:  # the large cases, alone in their worker, beside the small ones
            own = queues[0]
            if own and own[0] == 0:  # the example first: most broken files stop there
                run_one(own.popleft(), slot)
            clock = time.monotonic()
            for index in large:
                if index < stop_at[0]:
                    run_one(index, slot)
            if large:
                run.phases["large_cases"] = round(time.monotonic() - clock, 3)
        while (index := next_index(queues[number])) is not None:
            run_one(index, slot)

    clock = time.monotonic()
    in_threads([lambda n=n, slot=slot: serve(n, slot) for n, slot in enumerate(slots)])
    run.phases["cases"] = round(time.monotonic() - clock - run.phases.get("load", 0.0), 3)
    if load_failures:
        # The file did not load: the first case carries why (the first
        # slot's reason first), the rest do not run.
        failed = load_failures[min(load_failures)]
        case, kind = ordered[0]
        first = unrun(challenge, case, kind, *failed)
        return [first] + [unrun(challenge, c, k, "not_run", not_run_reason(failed[0], True))
                          for c, k in ordered[1:]], failed[1]
    stop = stop_at[0]
    out = []
    for index, (case, kind) in enumerate(ordered):
        if index > stop or results[index] is None:
            reason = not_run_reason(results[stop].status, False) if stop < len(ordered) else "not run"
            out.append(unrun(challenge, case, kind, "not_run", reason))
        else:
            out.append(results[index])
    if run.device == "cpu":  # a case far slower than a comparable one that ran: the file's choice
        interpreter_stalls.recheck(out, run.too_slow, run.ran_in)
    return out, ""


def specialization(plan: dict) -> tuple:
    """How Triton would specialise a kernel called with this case's sizes:
    an integer argument equal to 1, or divisible by 16, compiles a kernel of
    its own. Cases of one class share their compiled kernels."""
    return tuple("1" if v == 1 else "16" if v % 16 == 0 else "n"
                 for v in (int(item["value"]) for item in plan["call"] if item["role"] == "dim"))


def assign(small: list[int], ordered: list[tuple[Case, str]], run: Run, slots: int, large: int) -> list[deque]:
    """Each slot's queue of small cases, in challenge order. On a GPU, where
    compiling dominates a small case, the cases of one specialization class
    go to one worker (compiled once, not once per worker), classes spread to
    even out the estimated load; the first slot starts behind by its large
    cases. Under the interpreter nothing compiles: the cases are dealt out
    in turn."""
    queues = [deque() for _ in range(slots)]
    if run.device != "cuda":
        for position, index in enumerate(small):
            queues[position % slots].append(index)
        return queues
    classes: dict[tuple, list[int]] = {}
    for index in small:
        plan = case_data.input_plan(run.challenge, ordered[index][0])
        classes.setdefault(specialization(plan), []).append(index)
    load = [COMPILE_COST * 2 * large] + [0.0] * (slots - 1)
    owned: list[list[int]] = [[] for _ in range(slots)]
    # The first case's class goes to the first slot, which runs it before the
    # large cases: a file that fails at once (a rule, a crash) stops there.
    first = next((members for members in classes.values() if small and small[0] in members), None)
    if first is not None:
        owned[0] += first
        load[0] += COMPILE_COST + RUN_COST * len(first)
    for members in sorted((m for m in classes.values() if m is not first), key=len, reverse=True):
        target = min(range(slots), key=lambda n: load[n])
        owned[target] += members
        load[target] += COMPILE_COST + RUN_COST * len(members)
    return [deque(sorted(mine)) for mine in owned]


def stop_all(slots: list[Slot], also: list = ()) -> None:
    """Stop the slots' workers (and run the `also` callables) side by side:
    a killed CUDA worker takes a while to release its GPU. Their output is
    collected in slot order."""
    in_threads([slot.worker.close for slot in slots if slot.worker is not None] + list(also))
    for slot in slots:
        slot.stop()


class Stopping:
    """Slots' workers killed now and reaped in the background: a killed CUDA
    worker takes ~0.5 s to release the GPU, which the grader overlaps with
    the timing's warm-up (judge.grader). `wait()` (before the timed calls
    start, and always before the grading ends) joins, collects their output
    in slot order, and records the seconds it waited as `stop_workers`."""

    def __init__(self, run: Run, slots: list[Slot]):
        self.run = run
        self.slots = [slot for slot in slots if slot.worker is not None]
        self._error: list[BaseException] = []
        self._thread = threading.Thread(target=self._close, name="stop-workers", daemon=True)
        self._thread.start()
        self._joined = False

    def _close(self) -> None:
        try:
            in_threads([slot.worker.close for slot in self.slots])
        except BaseException as exc:  # noqa: BLE001 - raised again in wait()
            self._error.append(exc)

    def wait(self) -> None:
        if self._joined:
            return
        self._joined = True
        clock = time.monotonic()
        self._thread.join()
        for slot in self.slots:
            slot.stop()
        self.run.phases["stop_workers"] = round(time.monotonic() - clock, 3)
        if self._error:
            raise self._error[0]


def in_threads(tasks: list) -> list:
    """Run the callables each in a thread of its own; their results, in order.
    An exception in one is raised here, after all have ended."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(tasks))) as pool:
        futures = [pool.submit(task) for task in tasks]
        concurrent.futures.wait(futures)
    return [f.result() for f in futures]


def unrun(challenge: Challenge, case: Case, kind: str, status: str, message: str) -> CaseResult:
    return CaseResult(name=case.name, kind=kind, shape=challenge.shape_label(case), dims=dict(case.dims),
                      status=status, message=message)


def not_run_reason(stop: str, at_load: bool) -> str:
    if at_load:
        return f"not run: the file did not load ({stop})"
    return f"not run: an earlier case ended in {stop}"
