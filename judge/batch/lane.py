"""A grading lane: a child of the batch process that grades one submission
at a time through the public API, exactly as `judge submit` does, and
streams each result back as one JSON line. It runs only the judge's own code
(grade() isolates each submission in its own worker); a GPU lane is pinned to
its GPU by CUDA_VISIBLE_DEVICES, so grade() uses that GPU alone.

    python -m judge.batch.lane      (requests on stdin, replies on stdout)

Request: {"job": KEY, "path": FILE, "options": GradeOptions as JSON,
          "next": the lane's next request, if known (its workers start meanwhile)}
Reply:   {"job": KEY, "result": GradeResult as JSON, "wall_s": s}
         or {"job": KEY, "error": "..."}; first of all {"ready": true, ...}.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time
import traceback

from judge import scratch


def _die_with_parent() -> None:
    """A lane must not outlive the batch (a kill -9 of the batch included)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:  # not Linux: the closed stdin ends the lane instead
        pass
    if os.getppid() == 1:
        os._exit(1)


# Workers started ahead for the next file: (path, options JSON) -> workers.
_ahead: dict = {}


def options_for(request: dict):
    """The request's GradeOptions, with this lane's share of its GPU (set by
    the batch in the lane's environment: judge.batch.lanes.lane_specs)."""
    from judge.grader import GradeOptions
    options = GradeOptions.model_validate(request.get("options") or {})
    if os.environ.get("JUDGE_GPU_LOCK"):
        options.gpu_lock = os.environ["JUDGE_GPU_LOCK"]
        share = float(os.environ.get("JUDGE_GPU_MEMORY_FRACTION") or 0)
        if 0 < share < options.limits.gpu_memory_fraction:
            options.limits.gpu_memory_fraction = share
    return options


def _prestart(request: dict | None) -> None:
    """Start the next file's workers now (grader.prestart), so that their
    start overlaps this file's grading; a fresh process each, that has run
    nothing of any submission yet."""
    if not request:
        return
    try:
        from judge.grader import prestart
        key = (request["path"], json.dumps(request.get("options"), sort_keys=True))
        _ahead[key] = prestart(request["path"], options_for(request))
    except Exception:  # noqa: BLE001 - no head start: the grading starts its own workers
        pass


def _drop_ahead() -> None:
    import shutil
    for workers in _ahead.values():
        for worker in workers:
            try:
                worker.close()
            except Exception:  # noqa: BLE001
                pass
            if worker.triton_cache:  # the grading that would have removed it never ran
                shutil.rmtree(worker.triton_cache, ignore_errors=True)
    _ahead.clear()


def grade_request(request: dict) -> dict:
    from judge.grader import grade
    started = time.monotonic()
    key = (request.get("path"), json.dumps(request.get("options"), sort_keys=True))
    ready = _ahead.pop(key, None)
    _drop_ahead()  # workers started for any other file are not used
    if ready:
        # Kept in _ahead until grade() has them: a SIGTERM before it took
        # charge of them (it left their folders in /tmp) closes them on the way out.
        _ahead[key] = ready
    try:
        _prestart(request.get("next"))
        options = options_for(request)
        result = grade(request["path"], options, prestarted=ready) if ready else grade(request["path"], options)
        reply = {"job": request.get("job"), "result": result.model_dump(mode="json"),
                 "wall_s": round(time.monotonic() - started, 3)}
    except Exception as exc:  # noqa: BLE001 - reported to the batch, which records it
        reply = {"job": request.get("job"), "error": f"{type(exc).__name__}: {exc}",
                 "traceback": traceback.format_exc()[-4000:], "wall_s": round(time.monotonic() - started, 3)}
    _ahead.pop(key, None)  # grade() used and closed them (on SIGTERM, main() closes them)
    return reply


def main() -> None:
    _die_with_parent()
    # Replies go to the original stdout; anything printed by a library goes to stderr.
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    reply.write(json.dumps({"ready": True, "pid": os.getpid(),
                            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}) + "\n")
    # Stopped by the batch (SIGTERM): the grading in hand cleans up as it
    # unwinds, and the next file's workers started ahead go too (their
    # scratch folders held that student's file).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # A terminal's Ctrl-C reaches the lanes too: the batch alone decides, and
    # stops them with SIGTERM (a lane that ended on its own was started again
    # by the batch meanwhile, and its new workers' folders were left behind).
    signal.signal(signal.SIGINT, lambda *_: None)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            reply.write(json.dumps(grade_request(json.loads(line))) + "\n")
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleaning is not cut short
        _drop_ahead()
        scratch.remove_left()  # a worker's folder, if it was stopped in its start


if __name__ == "__main__":
    main()
