"""The gradebook CSV: one row per submission or roster entry, safe to open
in a spreadsheet (a cell of student text that starts with = + - @, a tab or
a carriage return is prefixed with a quote, so it is never a formula)."""

from __future__ import annotations

import csv
import io

COLUMNS = ["id", "name", "email", "status", "verdict", "score", "max_score", "correctness_points",
           "performance_points", "latency_ms", "tflops", "percent_of_cublas", "cases_passed", "cases_run",
           "first_failing_case", "message", "file_sha256", "graded_at", "flags"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def escape(value):
    """A cell as a spreadsheet must read it: text never starts a formula."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def percent_of_cublas(result: dict | None) -> float | None:
    """The submission's % of cuBLAS: the scoring target when it is a cuBLAS
    baseline, else the first cuBLAS baseline measured."""
    perf = (result or {}).get("performance") or {}
    percent = perf.get("percent_of") or {}
    target = ((result or {}).get("score") or {}).get("target")
    if target in percent and str(target).startswith("cublas"):
        return percent[target]
    return next((v for k, v in sorted(percent.items()) if k.startswith("cublas")), None)


def gradebook_row(row: dict) -> dict:
    status = row.get("status")
    out = {k: row.get(k) for k in COLUMNS if k in row}
    out["status"] = status
    out["percent_of_cublas"] = percent_of_cublas(row.get("result"))
    if status == "missing":
        out["verdict"] = "missing"
    if isinstance(out.get("message"), str):
        out["message"] = " ".join(out["message"].split())[:500]
    return {k: escape(out.get(k)) for k in COLUMNS}


def to_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(gradebook_row(row))
    return buffer.getvalue()
