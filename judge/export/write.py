"""`judge export`: one file per format from a results folder's store."""

from __future__ import annotations

import json
from pathlib import Path

from ..batch.store import clean
from ..errors import UsageError

FORMATS = {"csv": "gradebook.csv", "gradescope": "gradescope.json", "junit": "junit.xml",
           "html": "report.html", "json": "results.jsonl", "similarity": "similarity.csv"}


def challenge_of(runs: list[dict], rows: list[dict] = ()):
    """The batch's challenge (its latest run's, else its results'), or None
    where it is gone since."""
    options = (runs[-1].get("options") or {}) if runs else {}
    named = [r["result"].get("challenge") for r in rows if isinstance(r.get("result"), dict)]
    name = ((runs[-1].get("challenge") if runs else None) or options.get("challenge")
            or next((n for n in named if n), None) or "matrix_multiplication")
    try:
        from .. import challenge as challenges
        return challenges.load(name)
    except Exception:  # noqa: BLE001 - a challenge gone since: what the results say
        return None


def _scoring_points(runs: list[dict]) -> tuple[float, float]:
    """Correctness and performance points of the batch's scale."""
    options = (runs[-1].get("options") or {}) if runs else {}
    scoring = options.get("scoring")
    challenge = challenge_of(runs) if not scoring else None
    if challenge is not None:
        from ..grader import scoring_for
        scoring = scoring_for(challenge).model_dump()
    scoring = scoring or {}
    return float(scoring.get("correctness_points", 40.0)), float(scoring.get("performance_points", 60.0))


def case_list(runs: list[dict], rows: list[dict] = ()) -> list[tuple[str, str]] | None:
    """(name, shape) of every case of the batch's challenge, in its order."""
    challenge = challenge_of(runs, rows)
    return [(c.name, challenge.shape_label(c)) for c in challenge.all_cases()] if challenge else None


def _timed(row: dict, runs: list[dict]) -> bool:
    """Whether the run that graded the row measured latency: a GPU batch
    with timing on (the run's options), else what the result says."""
    from .gradescope import timed_result
    run = next((r for r in runs if r.get("id") == row.get("run_id")), None)
    if run is not None and (run.get("options") or {}).get("time") is False:
        return False
    return timed_result(row["result"])


def _gradescope(rows: list[dict], runs: list[dict]) -> str:
    from .gradescope import for_row
    correctness, performance = _scoring_points(runs)
    cases = case_list(runs, rows)
    docs = {r["id"]: for_row(r, correctness, performance, cases, _timed(r, runs)) for r in rows if r.get("result")}
    return json.dumps(clean(docs), indent=1, allow_nan=False)


def pairs_for(rows: list[dict], runs: list[dict], threshold: float | None = None) -> list:
    from .similarity import THRESHOLD, similar_pairs
    starter = None
    challenge = (runs[-1].get("challenge") if runs else None)
    if challenge:
        try:
            from .. import challenge as challenges
            starter = challenges.load(challenge).starter()
        except Exception:  # noqa: BLE001 - no starter: nothing excluded
            starter = None
    sources = {r["id"]: r["source"] for r in rows if r.get("source")}
    return similar_pairs(sources, starter, THRESHOLD if threshold is None else threshold)


def render(fmt: str, rows: list[dict], runs: list[dict], threshold: float | None = None) -> str:
    if fmt == "csv":
        from .gradebook import baseline_of, to_csv
        return to_csv(rows, baseline_of(rows, challenge_of(runs, rows)))
    if fmt == "gradescope":
        return _gradescope(rows, runs)
    if fmt == "junit":
        from .junit import to_junit
        return to_junit(rows)
    if fmt == "html":
        from .html import render as render_html
        return render_html(rows, runs, pairs_for(rows, runs, threshold))
    if fmt == "json":
        keep = ("id", "name", "email", "status", "file_sha256", "graded_at", "lane", "wall_s", "flags")
        return "".join(json.dumps(clean({**{k: r.get(k) for k in keep}, "result": r.get("result")}), allow_nan=False)
                       + "\n" for r in rows)
    if fmt == "similarity":
        from .similarity import to_csv
        return to_csv(pairs_for(rows, runs, threshold))
    raise UsageError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def export_text(folder: Path, fmt: str, threshold: float | None = None) -> str:
    """One export of the store in `folder`, as text (read-only)."""
    from ..batch.store import Store
    store = Store.open_existing(folder, read_only=True)
    try:
        rows, runs = store.rows(), store.runs()
    finally:
        store.close()
    return render(fmt, rows, runs, threshold)


def export(folder: Path, fmt: str, to: Path | None = None, threshold: float | None = None) -> Path:
    from ..batch.store import DB_NAME
    target = Path(to) if to else Path(folder) / FORMATS[fmt]
    own = {(Path(folder) / name).resolve() for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", "batch.lock")}
    if target.resolve() in own:
        raise UsageError(f"--to {target} is the results store's own file: choose another name")
    text = export_text(folder, fmt, threshold)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)  # never half a file where a spreadsheet may be reading
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target
