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
import signal
import sys
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from .. import challenge as challenges
from .. import gpu_lock
from ..errors import UsageError
from .discover import Discovery, discover, read_roster
from .drift import drift_file, drift_report
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
        scoring = load_policy(opts.scoring, scoring_for(challenge, opts.policy))
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
    # The policy resolved: --policy leetgpu, the default named, is the same
    # settings as none (it regraded the class).
    return {**options.model_dump(mode="json"), "policy": policy}


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
    """What makes two results comparable: same challenge, policy (resolved),
    seed, device, scale."""
    keep = {k: options.get(k) for k in ("challenge", "policy", "seed", "device", "scoring", "time")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def legacy_config_keys(options: dict) -> list[str]:
    """Keys of the same settings as stores made before the policy was
    resolved wrote them: the challenge's default policy was then None."""
    if options.get("policy") != challenges.load(options["challenge"]).tolerance.default_policy:
        return []
    return [config_key({**options, "policy": None})]


def failure_result(job: Job, error: str, options: dict) -> dict:
    """What is recorded when the batch itself could not grade a file (a lane
    that died twice): internal_error, graded again on the next run."""
    return {"verdict": "internal_error", "message": f"the batch could not grade this file: {error}"[:2000],
            "challenge": options.get("challenge"), "submission": str(job.path), "policy": options.get("policy"),
            "seed": options.get("seed"), "device": options.get("device"), "cases": [], "latency_ms": None,
            "score": None}


def _stage(out: Path, name: str, data: bytes) -> Path:
    """The file's bytes, as discovery read and hashed them, written in the
    results folder itself: the worker hides the folder its submission comes
    from, so the store is hidden from it too. (Copied again by path, the
    class folder could have swapped in a link to a classmate's file, or a
    pipe that hung the batch, since it was read.)"""
    staged = out / f"{STAGE_PREFIX}{name}.py"
    staged.write_bytes(data)
    return staged


class BatchInterrupted(Exception):
    """Ctrl-C or SIGTERM: what was recorded stays; the same command resumes."""

    def __init__(self, recorded: int, total: int, store: Path):
        super().__init__(f"interrupted: {recorded} of {total} result(s) of this run recorded in {store}; run the "
                         "same command again to grade the rest (what is recorded is kept)")


@dataclass
class Plan:
    """What a batch will do, checked whole before anything is written: a
    refused run changes nothing (a bad --policy overwrote the stored seed)."""
    found: Discovery
    device: str
    gpus: list[int]
    per_gpu: int
    drift_path: Path | None
    opts: BatchOptions


def run_batch(opts: BatchOptions, display_factory) -> BatchOutcome:
    opts.out = Path(opts.out)
    if opts.out.resolve() == Path(opts.folder).resolve() or Path(opts.folder).resolve() in opts.out.resolve().parents:
        raise UsageError("--out must be outside the submissions folder")
    plan = prepare(opts)
    with writer_lock(opts.out), _sigterm_as_interrupt():
        return _run_batch(plan, display_factory)


def _check_regrade(asked, ids: list[str]) -> None:
    """Every --regrade id is a submission found (a typo had graded nothing
    and exited 0)."""
    import difflib
    for sid in asked:
        if sid == "all" or unicodedata.normalize("NFC", sid) in ids:
            continue
        close = difflib.get_close_matches(sid, ids, n=3) or [i for i in ids if i.lower() == sid.lower()]
        raise UsageError(f"--regrade {sid}: no such submission"
                         + (f" (did you mean {', '.join(close)}?)" if close else f" ({len(ids)} found)"))


def prepare(opts: BatchOptions) -> Plan:
    """Every input checked (roster, folder, device, --drift, challenge,
    policy, scoring) before --out is touched."""
    challenges.load(opts.challenge)  # an unknown challenge said first, whatever the folder holds
    roster = read_roster(opts.roster) if opts.roster else None
    found = discover(opts.folder, roster)
    if not found.entries and not found.skipped:
        raise UsageError(f"no submissions in {opts.folder}: no .py file and no student folder with one"
                         + (f" ({len(found.problems)} other item(s) skipped)" if found.problems else ""))
    _check_regrade(opts.regrade, [e.id for e in found.entries])
    from ..grader import choose_device
    device = choose_device(opts.device)
    gpus = visible_gpus(opts.gpus) if device == "cuda" else []
    if device == "cuda" and not gpus:
        raise UsageError("--gpus names no GPU")
    drift_path = drift_file(opts, device)
    per_gpu = opts.lanes_per_gpu or (auto_lanes_per_gpu(len(gpus), smallest_gpu_bytes(gpus))
                                     if device == "cuda" else 1)
    if opts.workers is None and not opts.ray:  # the lanes share this host's cores
        opts = dataclasses.replace(opts, workers=workers_per_grading(len(gpus) * per_gpu if device == "cuda"
                                                                     else opts.lanes))
    grade_options(opts, device, 0)  # challenge, policy, scoring: refused here, not after the seed is stored
    return Plan(found, device, gpus, per_gpu, drift_path, opts)


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM (a scheduler, `kill`) ends the batch as Ctrl-C does: lanes
    stopped, staged copies removed, what was recorded said (it killed the
    batch silently, leaving workers' folders and staged files behind)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(*_):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


def open_store(opts: BatchOptions) -> Store:
    """The results store, refused when it holds another challenge's results
    (a second challenge merged into it, and its exports mixed the two)."""
    store = Store(opts.out)
    made_for = store.made_for()
    if made_for is not None and made_for != opts.challenge:
        store.close()
        raise UsageError(f"{store.path} holds results for the challenge {made_for}, not {opts.challenge}; "
                         f"give another --out for {opts.challenge}")
    return store


def _clear_staged(out: Path) -> None:
    for leftover in out.glob(f"{STAGE_PREFIX}*.py"):
        leftover.unlink(missing_ok=True)


def _run_batch(plan: Plan, display_factory) -> BatchOutcome:
    opts, found, device, gpus = plan.opts, plan.found, plan.device, plan.gpus
    from ..grader import versions
    store = open_store(opts)
    _clear_staged(opts.out)
    seed = opts.seed if opts.seed is not None else int(store.meta("seed") or random.randrange(1, 2**31))
    options = grade_options(opts, device, seed)
    with store.transaction():
        store.set_meta("seed", str(seed))
        store.set_meta("challenge", opts.challenge)
    config = config_key(options)
    with store.transaction():  # the settings results must have to be current (Store.rows)
        store.set_meta("config", json.dumps([config, *legacy_config_keys(options)]))
    store.sync(found.entries, found.missing, found.skipped, complete=True)
    ids = [e.id for e in found.entries]
    regrade = set(ids) if "all" in opts.regrade else {unicodedata.normalize("NFC", r) for r in opts.regrade}
    todo = store.to_grade(ids, config, regrade, legacy_config_keys(options))
    by_id = {e.id: e for e in found.entries}
    if opts.ray:
        from .ray_backend import RayPool
        pool = RayPool(opts.ray, device)
    else:
        # The lanes of a GPU hold its lock in this user's folder of locks, as
        # `judge submit` does: other batches and submits on that GPU take turns too.
        locks = ((gpu_lock.default_folder() or opts.out.resolve() / "gpu-locks") if device == "cuda" else None)
        pool = LanePool(lane_specs(device, gpus, opts.lanes, plan.per_gpu, locks,
                                   gpu_share(options, plan.per_gpu)), log=opts.out / "lanes.log")
    run_id = store.start_run(challenge=opts.challenge, policy=options.get("policy"), seed=seed, device=device,
                             backend=f"ray:{opts.ray}" if opts.ray else "lanes", options=options,
                             versions=versions(), gpus=gpus)
    notes = list(found.problems)
    try:
        jobs = [Job(sid, _stage(opts.out, f"{i:05d}", by_id[sid].data), options, by_id[sid].data)
                for i, sid in enumerate(todo)]
        drift = _grade(pool, jobs, plan.drift_path, store, by_id, config, run_id, options, notes, display_factory)
    except KeyboardInterrupt:
        done = _interrupted(pool, opts.out, store, run_id, found)
        raise BatchInterrupted(done, len(todo), store.path) from None
    summary = {"found": len(found.entries), "missing": len(found.missing), "not_graded": len(found.skipped),
               "graded": len(todo), "kept": len(ids) - len(todo), "problems": found.problems}
    store.end_run(run_id, summary, drift)
    store.close()
    return BatchOutcome(run_id, found, len(todo), len(ids) - len(todo), drift, notes)


def _interrupted(pool, out: Path, store: Store, run_id: int, found: Discovery) -> int:
    """Ctrl-C or SIGTERM: lanes stopped now (their gradings unwind and
    remove their workers' folders), staged copies removed, the run closed;
    how many results it recorded. A second signal meanwhile is ignored, so
    the cleaning is not cut short."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        pool.close(now=True) if isinstance(pool, LanePool) else pool.close()
        _clear_staged(out)
        done = store.recorded_in(run_id)
        store.end_run(run_id, {"interrupted": True, "graded": done, "problems": found.problems}, None)
        store.close()
        return done
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _grade(pool, jobs: list[Job], drift_path: Path | None, store: Store, by_id: dict, config: str, run_id: int,
           options: dict, notes: list[str], display_factory) -> dict | None:
    """Every job through the pool, each result recorded as it comes; the
    drift check's report (None without one)."""
    drift_start = drift_end = None
    with display_factory(len(jobs), pool.names) as display:
        for line in notes:
            display.note(line)
        try:
            drift_data = drift_path.read_bytes() if drift_path and jobs else b""
            checks = [Job(DRIFT_START, _stage(store.folder, "drift_start", drift_data), options, drift_data),
                      Job(DRIFT_END, _stage(store.folder, "drift_end", drift_data), options, drift_data)
                      ] if drift_path and jobs else []
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
        except KeyboardInterrupt:
            raise  # _interrupted stops the lanes at once (closing waits for their gradings)
        finally:
            if not isinstance(sys.exc_info()[1], KeyboardInterrupt):
                pool.close()
                _clear_staged(store.folder)
    return drift_report(drift_start, drift_end, drift_path) if drift_path and jobs else None


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
    except UsageError:  # a damaged store: stop, saying so
        raise
    except Exception as exc:  # noqa: BLE001 - one result the store refused must not stop the class
        result = failure_result(event.job, f"the judge could not store this result: {type(exc).__name__}: {exc}",
                                options)
        store.record(entry.id, entry.sha256, config, run_id, {**result, "submission": str(entry.path)},
                     lane=event.lane, wall_s=event.wall_s, flags=flags)
    event.job.path.unlink(missing_ok=True)
    line = {"id": entry.id, "file": str(entry.path), "sha256": entry.sha256, "lane": event.lane,
            "wall_s": event.wall_s, "result": result}
    display.done(event.lane, entry.id, str(result.get("verdict")), line)
