"""`judge export`: one file per format from a results folder's store."""

from __future__ import annotations

import json
from pathlib import Path

from ..batch.store import clean
from ..errors import UsageError

FORMATS = {"csv": "gradebook.csv", "gradescope": "gradescope.json", "junit": "junit.xml",
           "html": "report.html", "json": "results.jsonl", "similarity": "similarity.csv"}


def _scoring_points(runs: list[dict]) -> tuple[float, float]:
    """Correctness and performance points of the batch's scale."""
    options = (runs[-1].get("options") or {}) if runs else {}
    scoring = options.get("scoring")
    if not scoring:
        try:
            from .. import challenge as challenges
            from ..grader import scoring_for
            policy = scoring_for(challenges.load(options.get("challenge") or "matrix_multiplication"))
            scoring = policy.model_dump()
        except Exception:  # noqa: BLE001 - a challenge gone since: the default scale
            scoring = {}
    return float(scoring.get("correctness_points", 40.0)), float(scoring.get("performance_points", 60.0))


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
        from .gradebook import to_csv
        return to_csv(rows)
    if fmt == "gradescope":
        from .gradescope import results_json
        correctness, performance = _scoring_points(runs)
        return json.dumps(clean({r["id"]: results_json(r["result"], correctness, performance, r.get("wall_s"))
                                 for r in rows if r.get("result")}), indent=1, allow_nan=False)
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


def export(folder: Path, fmt: str, to: Path | None = None, threshold: float | None = None) -> Path:
    from ..batch.store import DB_NAME, Store
    from ..errors import UsageError
    target = Path(to) if to else Path(folder) / FORMATS[fmt]
    own = {(Path(folder) / name).resolve() for name in (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", "batch.lock")}
    if target.resolve() in own:
        raise UsageError(f"--to {target} is the results store's own file: choose another name")
    store = Store.open_existing(folder, read_only=True)
    try:
        rows, runs = store.rows(), store.runs()
    finally:
        store.close()
    text = render(fmt, rows, runs, threshold)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)  # never half a file where a spreadsheet may be reading
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target
