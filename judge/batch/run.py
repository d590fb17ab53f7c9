"""One `judge batch`: discover -> store -> lanes -> store, in that order only.

The batch process is the store's one writer: lanes (or Ray tasks) grade and
send results back; each is recorded whole, in one transaction, as it comes.
Rerunning resumes: what is recorded for a file's current hash and the same
settings is kept, the rest is graded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import challenge as challenges
from ..errors import UsageError
from .discover import Discovery, discover, read_roster
from .lanes import (Event, Job, LanePool, auto_lanes_per_gpu, lane_specs, smallest_gpu_bytes, visible_gpus,
                    workers_per_grading)
from .store import Store

STAGE_PREFIX = "_grading_"
# The drift check's two gradings, keyed apart from the class's ids (file or
# folder names, which never hold a "/": a file named drift:start.py was
# taken for the check and never recorded).
DRIFT_START, DRIFT_END = "/drift/start", "/drift/end"


@dataclass
class BatchOptions:
    folder: Path
    out: Path
    challenge: str = "matrix_multiplication"
    device: str | None = None
    gpus: str | None = None
    lanes: int = 1  # CPU lanes
    lanes_per_gpu: int | None = None  # GPU lanes sharing each GPU (None: judge.batch.lanes.auto_lanes_per_gpu)
    workers: int | None = None
    policy: str | None = None
    seed: int | None = None
    scoring: Path | None = None
    roster: Path | None = None
    regrade: list[str] = field(default_factory=list)  # ids, or ["all"]
    ray: str | None = None
    drift: str = "auto"  # "auto", "none" or a file


@dataclass
class BatchOutcome:
    run_id: int
    discovery: Discovery
    graded: int
    kept: int
    drift: dict | None
    notes: list[str]


def grade_options(opts: BatchOptions, device: str, seed: int) -> dict:
    """GradeOptions (as JSON) for every file of the batch, checked here once."""
    from ..grader import GradeOptions
    challenge = challenges.load(opts.challenge)
    scoring = None
    if opts.scoring is not None:
        from ..grader import scoring_for
        from ..scoring import load_policy
        scoring = load_policy(opts.scoring, scoring_for(challenge))
    values = dict(challenge=opts.challenge, device=device, policy=opts.policy, seed=seed, workers=opts.workers,
                  scoring=scoring)
    fields = getattr(GradeOptions, "model_fields", {})
    if "hidden_paths" in fields:  # extra folders a sandboxed worker must not see (see docs/instructors.md)
        values["hidden_paths"] = [str(opts.out.resolve()), str(opts.folder.resolve())]
    options = GradeOptions(**values)
    policy = options.policy or challenge.tolerance.default_policy
    if policy not in challenge.tolerance.allowed_policies:
        raise UsageError(f"policy {policy!r} is not defined for {challenge.name} "
                         f"(defined: {', '.join(challenge.tolerance.allowed_policies)})")
    return options.model_dump(mode="json")


def gpu_share(options: dict, per_gpu: int) -> float | None:
    """Each worker's fraction of a GPU that `per_gpu` gradings share: their
    case workers together stay within 90% of it, so one file's allocations
    cannot starve a neighbour's (judge.isolation.Limits.gpu_memory_fraction)."""
    if per_gpu <= 1:
        return None
    from ..grader import GradeOptions
    from ..slots import slot_count
    workers = slot_count(GradeOptions.model_validate(options), 64)
    return int(900 / (per_gpu * workers)) / 1000  # rounded down


def config_key(options: dict) -> str:
    """What makes two results comparable: same challenge, policy, seed, device, scale."""
    keep = {k: options.get(k) for k in ("challenge", "policy", "seed", "device", "scoring", "time")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def failure_result(job: Job, error: str, options: dict) -> dict:
    """What is recorded when the batch itself could not grade a file (a lane
    that died twice): internal_error, graded again on the next run."""
    return {"verdict": "internal_error", "message": f"the batch could not grade this file: {error}"[:2000],
            "challenge": options.get("challenge"), "submission": str(job.path), "policy": options.get("policy"),
            "seed": options.get("seed"), "device": options.get("device"), "cases": [], "latency_ms": None,
            "score": None}


def drift_file(opts: BatchOptions, device: str) -> Path | None:
    """The honest submission graded at the start and the end: --drift FILE,
    or on a GPU the challenge's first accepted example."""
    if opts.drift == "none" or (opts.drift == "auto" and device != "cuda"):
        return None
    if opts.drift != "auto":
        path = Path(opts.drift)
        if not path.is_file():
            raise UsageError(f"--drift: no such file: {path}")
        return path
    from .. import goldens
    for golden in goldens.examples():
        if golden.challenge == opts.challenge and golden.verdict == "accepted":
            return golden.path
    return None


def drift_report(start: Event | None, end: Event | None, path: Path) -> dict:
    def side(event: Event | None) -> dict:
        result = (event.result if event else None) or {}
        return {"verdict": result.get("verdict"), "latency_ms": result.get("latency_ms"),
                "lane": event.lane if event else None, "error": event.error if event else None}
    a, b = side(start), side(end)
    change = None
    if a["latency_ms"] and b["latency_ms"]:
        change = round(100.0 * (b["latency_ms"] - a["latency_ms"]) / a["latency_ms"], 3)
    return {"file": str(path), "start": a, "end": b, "change_percent": change}


def _stage(out: Path, index: int, source: Path) -> Path:
    """A copy of the file in the results folder itself: the worker hides the
    folder its submission comes from, so the store is hidden from it too."""
    staged = out / f"{STAGE_PREFIX}{index:05d}.py"
    shutil.copyfile(source, staged)
    return staged


def run_batch(opts: BatchOptions, display_factory) -> BatchOutcome:
    opts.out = Path(opts.out)
    if opts.out.resolve() == Path(opts.folder).resolve() or Path(opts.folder).resolve() in opts.out.resolve().parents:
        raise UsageError("--out must be outside the submissions folder")
    with writer_lock(opts.out):
        return _run_batch(opts, display_factory)


@contextlib.contextmanager
def writer_lock(out: Path):
    """One batch at a time per results folder: two at once staged their files
    under the same names, and one student's result was another's code."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        handle = open(out / "batch.lock", "a+")
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UsageError(f"another judge batch is grading into {out} now; wait for it to end, "
                             "or give this one another --out") from None
        yield


def _run_batch(opts: BatchOptions, display_factory) -> BatchOutcome:
    roster = read_roster(opts.roster) if opts.roster else None
    found = discover(opts.folder, roster)
    from ..grader import choose_device, versions
    device = choose_device(opts.device)
    gpus = visible_gpus(opts.gpus) if device == "cuda" else []
    if device == "cuda" and not gpus:
        raise UsageError("--gpus names no GPU")
    drift_path = drift_file(opts, device)  # a bad --drift stops the batch before anything is staged
    store = Store(opts.out)
    for leftover in opts.out.glob(f"{STAGE_PREFIX}*.py"):
        leftover.unlink(missing_ok=True)
    seed = opts.seed
    if seed is None:
        seed = int(store.meta("seed") or random.randrange(1, 2**31))
    with store.transaction():
        store.set_meta("seed", str(seed))
    per_gpu = opts.lanes_per_gpu or (auto_lanes_per_gpu(len(gpus), smallest_gpu_bytes(gpus))
                                     if device == "cuda" else 1)
    if opts.workers is None and not opts.ray:  # the lanes share this host's cores
        opts = dataclasses.replace(opts, workers=workers_per_grading(len(gpus) * per_gpu if device == "cuda"
                                                                     else opts.lanes))
    options = grade_options(opts, device, seed)
    config = config_key(options)
    store.sync(found.entries, found.missing)
    ids = [e.id for e in found.entries]
    regrade = set(ids) if "all" in opts.regrade else set(opts.regrade)
    for sid in regrade - set(ids):
        found.problems.append(f"--regrade {sid}: no such submission")
    todo = store.to_grade(ids, config, regrade)
    by_id = {e.id: e for e in found.entries}
    jobs = [Job(sid, _stage(opts.out, i, by_id[sid].path), options, by_id[sid].source.encode())
            for i, sid in enumerate(todo)]
    if opts.ray:
        from .ray_backend import RayPool
        pool = RayPool(opts.ray, device)
    else:
        pool = LanePool(lane_specs(device, gpus, opts.lanes, per_gpu, opts.out.resolve() / "gpu-locks",
                                   gpu_share(options, per_gpu)), log=opts.out / "lanes.log")
    run_id = store.start_run(challenge=opts.challenge, policy=options.get("policy"), seed=seed, device=device,
                             backend=f"ray:{opts.ray}" if opts.ray else "lanes", options=options,
                             versions=versions(), gpus=gpus)
    notes = list(found.problems)
    drift_start = drift_end = None
    with display_factory(len(jobs), pool.names) as display:
        for line in notes:
            display.note(line)
        try:
            checks = [Job(DRIFT_START, _stage(opts.out, 99998, drift_path), options),
                      Job(DRIFT_END, _stage(opts.out, 99999, drift_path), options)] if drift_path and jobs else []
            # The lanes grade the drift check's two runs as the first and the
            # last of the queue, beside the class's files (its timings are
            # alone on the GPU all the same); run alone first and last, they
            # held every other lane idle for two gradings. Ray's tasks run at
            # once, so there it keeps to the start and the end.
            queued = jobs
            if checks and isinstance(pool, LanePool):
                queued = [checks[0]] + jobs + [checks[1]]
            elif checks:
                drift_start = pool.call(0, checks[0])
            for event in pool.stream(queued):
                if event.job.key in (DRIFT_START, DRIFT_END):
                    if event.kind == "done":
                        drift_start, drift_end = ((event, drift_end) if event.job.key == DRIFT_START
                                                  else (drift_start, event))
                    continue
                if event.kind == "start":
                    display.start(event.lane, event.job.key)
                    continue
                _record(store, event, by_id[event.job.key], config, run_id, options, display, notes)
            if checks and not isinstance(pool, LanePool):
                drift_end = pool.call(0, checks[1])
        finally:
            pool.close()
            for leftover in opts.out.glob(f"{STAGE_PREFIX}*.py"):
                leftover.unlink(missing_ok=True)
    drift = drift_report(drift_start, drift_end, drift_path) if drift_path and jobs else None
    summary = {"found": len(found.entries), "missing": len(found.missing), "graded": len(jobs),
               "kept": len(ids) - len(todo), "problems": found.problems}
    store.end_run(run_id, summary, drift)
    store.close()
    return BatchOutcome(run_id, found, len(jobs), len(ids) - len(todo), drift, notes)


def _record(store: Store, event: Event, entry, config: str, run_id: int, options: dict, display,
            notes: list[str]) -> None:
    result = event.result if event.result is not None else failure_result(event.job, event.error or "?", options)
    result = {**result, "submission": str(entry.path)}  # the student's file, not the staged copy
    flags = ""
    if store.written_by_another():
        # Workers share the file system where no bubblewrap is: a submission
        # reached the store. Its result is flagged, and any row changed behind
        # our back is dropped (graded again on the next run).
        flags = "store_written_during_grading"
        dropped = store.repair()
        notes.append(f"warning: another process wrote to the results store while {entry.id} was graded "
                     f"(install bubblewrap so that workers cannot); results dropped for regrading: "
                     f"{', '.join(dropped) or 'none'}")
        display.note(notes[-1])
    try:
        store.record(entry.id, entry.sha256, config, run_id, result, lane=event.lane, wall_s=event.wall_s,
                     flags=flags)
    except Exception as exc:  # noqa: BLE001 - one result the store refused must not stop the class
        result = failure_result(event.job, f"the judge could not store this result: {type(exc).__name__}: {exc}",
                                options)
        store.record(entry.id, entry.sha256, config, run_id, {**result, "submission": str(entry.path)},
                     lane=event.lane, wall_s=event.wall_s, flags=flags)
    event.job.path.unlink(missing_ok=True)
    line = {"id": entry.id, "file": str(entry.path), "sha256": entry.sha256, "lane": event.lane,
            "wall_s": event.wall_s, "result": result}
    display.done(event.lane, entry.id, str(result.get("verdict")), line)
