"""The gradebook CSV: one row per submission or roster entry, safe to open
in a spreadsheet (a cell of student text that starts with = + - @, a tab or
a carriage return is prefixed with a quote, so it is never a formula)."""

from __future__ import annotations

import csv
import io

from .text import visible

COLUMNS = ["id", "name", "email", "status", "verdict", "score", "max_score", "correctness_points",
           "performance_points", "latency_ms", "tflops", "percent_of_cublas", "cases_passed", "cases_run",
           "first_failing_case", "message", "file_sha256", "graded_at", "flags"]
PERCENT = "percent_of_cublas"  # the column renamed after the challenge's baseline (see columns())
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape(value):
    """A cell as a spreadsheet and a terminal must read it: control
    characters made visible (raw ESC and NUL in a student's message cleared
    the terminal of whoever ran `cat gradebook.csv`), and text never starts
    a formula."""
    if value is None:
        return ""
    value = visible(value)
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def family(baseline: str) -> str:
    """A baseline's family, as a column is named: cublas_tf32 -> cublas, torch -> torch."""
    return str(baseline).split("_")[0]


def baseline_of(rows: list[dict], challenge=None) -> str:
    """The family of the baseline the class is compared with: the scoring
    target of the results (else of the challenge). Matrix multiplication's
    is cuBLAS; the other challenges' torch, which a "% of cuBLAS" column
    had named wrongly."""
    for row in rows:
        target = ((row.get("result") or {}).get("score") or {}).get("target")
        if target:
            return family(target)
    scoring = getattr(challenge, "scoring", None)
    return family(scoring.target) if scoring is not None else "cublas"


def columns(baseline: str = "cublas") -> list[str]:
    return [f"percent_of_{baseline}" if c == PERCENT else c for c in COLUMNS]


def percent_of(result: dict | None, baseline: str = "cublas") -> float | None:
    """The submission's % of the baseline family: the scoring target when
    it is one of the family, else the first of the family measured."""
    perf = (result or {}).get("performance") or {}
    percent = perf.get("percent_of") or {}
    target = ((result or {}).get("score") or {}).get("target")
    if target in percent and family(target) == baseline:
        return percent[target]
    return next((v for k, v in sorted(percent.items()) if family(k) == baseline), None)


def gradebook_row(row: dict, baseline: str = "cublas") -> dict:
    status = row.get("status")
    out = {k: row.get(k) for k in COLUMNS if k in row}
    out["status"] = status
    out[f"percent_of_{baseline}"] = percent_of(row.get("result"), baseline)
    if status == "missing":
        out["verdict"] = "missing"
    if isinstance(out.get("message"), str):
        out["message"] = " ".join(out["message"].split())[:500]
    return {k: escape(out.get(k)) for k in columns(baseline)}


def to_csv(rows: list[dict], baseline: str | None = None) -> str:
    baseline = baseline or baseline_of(rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(baseline), quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(gradebook_row(row, baseline))
    return buffer.getvalue()
