"""The HTML report: one self-contained file (a jinja2 template, plots
inline as SVG, no script, nothing fetched): the class at a glance, the pass
matrix (which cases catch the most students), drift, similar pairs, then one
section per submission."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

from . import plots
from .gradebook import baseline_of, percent_of
from .text import visible

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
SHOWN = ("reference_tf32", "reference_ieee", "cublas_tf32", "cublas_fp32")
LABELS = {"cublas": "cuBLAS"}  # a baseline family as the report names it (else as it is)


def _baselines(rows: list[dict]) -> dict[str, float]:
    for row in rows:
        perf = (row.get("result") or {}).get("performance") or {}
        if perf.get("baselines_ms"):
            return {k: v for k, v in perf["baselines_ms"].items() if isinstance(v, (int, float))}
    return {}


def _pass_matrix(rows: list[dict]) -> tuple[list[str], list[dict]]:
    """Cases (those failing most students first) and, per submission, each case's status."""
    failing: Counter = Counter()
    order: list[str] = []
    table = []
    for row in rows:
        statuses = {}
        for case in (row.get("result") or {}).get("cases") or []:
            name = case.get("name")
            if name not in order:
                order.append(name)
            statuses[name] = case.get("status")
            if case.get("status") not in ("accepted", "skipped", "not_run"):
                failing[name] += 1
        if row.get("result"):
            table.append({"id": row["id"], "statuses": statuses})
    cases = sorted(order, key=lambda n: (-failing[n], order.index(n)))
    return [f"{n} ({failing[n]})" for n in cases], [
        {"id": t["id"], "cells": [t["statuses"].get(n, "") for n in cases]} for t in table]


def _policy(run: dict, rows: list[dict], challenge) -> str:
    """The run's tolerance policy; with no --policy, the challenge's
    default, named (the report said "policy ?")."""
    if run.get("policy"):
        return run["policy"]
    default = challenge.tolerance.default_policy if challenge is not None else None
    default = default or next((r["result"].get("policy") for r in rows if (r.get("result") or {}).get("policy")), None)
    return f"{default} (the challenge's default)" if default else "?"


def context(rows: list[dict], runs: list[dict], pairs: list, title: str = "") -> dict:
    graded = [r for r in rows if r.get("result")]
    verdicts = Counter(r.get("verdict") or "?" for r in graded)
    verdicts.update({"missing": sum(1 for r in rows if r.get("status") == "missing")} if any(
        r.get("status") == "missing" for r in rows) else {})
    pending = sum(1 for r in rows if r.get("status") == "pending")
    if pending:
        verdicts["not graded yet"] = pending
    scores = [r["score"] for r in graded if isinstance(r.get("score"), (int, float))]
    maximum = next((r["max_score"] for r in graded if r.get("max_score")), None)
    baselines = _baselines(rows)
    latencies = [r["latency_ms"] for r in graded if isinstance(r.get("latency_ms"), (int, float))]
    tflops = [r["tflops"] for r in graded if isinstance(r.get("tflops"), (int, float))]
    flops = None
    for r in graded:
        if r.get("tflops") and r.get("latency_ms"):
            flops = r["tflops"] * r["latency_ms"] * 1e9  # the performance case's work, from one result
            break
    tflops_lines = {k: flops / (v * 1e9) for k, v in baselines.items() if k in SHOWN} if flops else {}
    case_names, matrix = _pass_matrix(rows)
    last = runs[-1] if runs else {}
    from .write import challenge_of
    challenge = challenge_of(runs, rows)
    baseline = baseline_of(rows, challenge)
    for row in rows:
        row["percent_of_baseline"] = percent_of(row.get("result"), baseline)
    return dict(
        title=title or f"{last.get('challenge') or 'batch'}: class report",
        generated=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        run={**last, "policy": _policy(last, rows, challenge)}, runs=runs,
        baseline_label=LABELS.get(baseline, baseline), rows=rows, graded=len(graded), verdicts=sorted(verdicts.items()),
        score_plot=plots.score_histogram(scores, maximum),
        latency_plot=plots.distribution(latencies, {k: v for k, v in baselines.items() if k in SHOWN},
                                        "latency (ms), log scale", "latency of accepted submissions", log=True),
        tflops_plot=plots.distribution(tflops, tflops_lines, "TFLOPS", "throughput"),
        case_names=case_names, matrix=matrix, pairs=pairs,
        drifts=[(r["id"], r["drift"]) for r in runs if r.get("drift")],
        problems=((last.get("summary") or {}).get("problems") or []),
    )


def _shown(value):
    """Every value the template prints: student text (stdout, messages,
    names) with its control characters made visible; NUL, ESC, BEL and form
    feed had reached the report's <pre> raw. Markup (the plots) is ours."""
    import markupsafe
    return value if isinstance(value, markupsafe.Markup) else visible(value)


def render(rows: list[dict], runs: list[dict], pairs: list, title: str = "") -> str:
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.ChainableUndefined,
                             finalize=_shown)
    env.filters["num"] = lambda v, fmt="{:.3f}": "" if v is None else fmt.format(v)
    return env.get_template("report.html.j2").render(**context(rows, runs, pairs, title))
