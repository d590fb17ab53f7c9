"""The workers of one grading and how cases are spread over them.

Small cases run side by side, one slot (a worker process, restarted after
it dies) each; large cases and the timing run alone in the first slot.
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
from .casework import Run, status_of
from .challenge import Case, Challenge
from .errors import ProtocolError, WorkerDied, WorkerTimeout
from .isolation import Limits, WorkerProcess
from .results import STOPPING, CaseResult

if TYPE_CHECKING:
    from .grader import GradeOptions


class Slot:
    """One worker process of a grading: started on demand, restarted after
    its worker died, stopped with its output kept."""

    def __init__(self, run: Run):
        self.run = run
        self.worker: WorkerProcess | None = None
        self.loaded = False  # False with a worker: started (maybe early), file not loaded yet

    def ensure(self) -> tuple[str, str] | None:
        """A loaded worker: None when ready, else (status, message)."""
        if self.worker is not None and self.loaded:
            return None
        run = self.run
        if self.worker is None:
            self.worker = spawn(run.path, run.device, run.limits, run.options.hidden_paths)
        arg_names = [a.name for a in run.challenge.signature]
        try:
            reply, _ = self.worker.request(
                {"op": "load", "path": "submission.py", "device": run.device,
                 "emulate_tf32": run.options.emulate_tf32, "gpu_memory_fraction": run.limits.gpu_memory_fraction,
                 "arity": len(arg_names), "arg_names": arg_names,
                 "signature": run.challenge.call_signature()},
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
            failure = status_of(reply), str(reply.get("message", ""))[:4000]
        self.stop()
        return failure

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.close()  # first, so its pipes end and the output is complete
            self.run.collect_output(*self.worker.output())
            self.worker, self.loaded = None, False


def spawn(path: Path, device: str, limits: Limits, extra_hidden: list[str] = ()) -> WorkerProcess:
    """A started worker for the submission at `path` (not loaded yet)."""
    # Hidden from a sandboxed worker: the secret, the folder the submission
    # came from (its neighbours may be other students' files), and whatever
    # the caller adds (a batch: its results store and the class folder).
    hidden = [case_data.secret_path().parent, path.resolve().parent, *map(Path, extra_hidden)]
    worker = WorkerProcess(path, device, limits, hidden=hidden)
    worker.start()
    return worker


def guess_device() -> str:
    """cuda when an NVIDIA device node exists; choose_device (torch) decides."""
    return "cuda" if os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0") else "cpu"


def slot_count(options: "GradeOptions", cases: int) -> int:
    wanted = options.workers if options.workers is not None else min(4, os.cpu_count() or 1)
    return max(1, min(wanted, cases))


def run_cases(run: Run, ordered: list[tuple[Case, str]], slots: list[Slot]) -> tuple[list[CaseResult], str]:
    """Run the cases: the small ones spread over the slots' workers (each
    worker compiles its own kernels, in parallel), then the large ones, one
    at a time, in the first slot. Results are reported as a one-at-a-time
    run in challenge order would give them: a case that stops the run stops
    every later case (those already run in parallel are reported not run),
    and every earlier one still runs. Returns the results and, when the file
    did not load, why."""
    challenge = run.challenge
    clock = time.monotonic()
    loads = in_threads([slot.ensure for slot in slots])
    run.phases["load"] = round(time.monotonic() - clock, 3)
    failed = next((f for f in loads if f), None)
    if failed:
        # The file did not load: the first case carries why, the rest do not run.
        case, kind = ordered[0]
        first = unrun(challenge, case, kind, *failed)
        return [first] + [unrun(challenge, c, k, "not_run", not_run_reason(failed[0], True))
                          for c, k in ordered[1:]], failed[1]

    results: list[CaseResult | None] = [None] * len(ordered)
    stop_at = [len(ordered)]  # index of the first case that stopped the run
    lock = threading.Lock()
    large = [i for i, (case, _) in enumerate(ordered) if run.is_large(case)]
    queue = deque(i for i in range(len(ordered)) if i not in large)

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
        if stops:
            with lock:
                stop_at[0] = min(stop_at[0], index)

    def serve(slot: Slot) -> None:
        while True:
            with lock:
                if not queue or queue[0] >= stop_at[0]:  # the queue is in challenge order
                    return
                index = queue.popleft()
            run_one(index, slot)

    clock = time.monotonic()
    in_threads([lambda slot=slot: serve(slot) for slot in slots])
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
            reason = not_run_reason(results[stop].status, False) if stop < len(ordered) else "not run"
            out.append(unrun(challenge, case, kind, "not_run", reason))
        else:
            out.append(results[index])
    return out, ""


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
