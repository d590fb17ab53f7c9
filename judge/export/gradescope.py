"""Gradescope's autograder format (results.json): `score`,
`execution_time`, `output`, `tests[]` (one per case, plus one for the
performance points) and a `leaderboard[]` (latency ascending, TFLOPS
descending). The tests' points add up to `score`: a case earns its share of
the correctness points only when the whole submission is accepted, as the
judge scores it."""

from __future__ import annotations

RUN = ("skipped", "not_run")


def results_json(result: dict, correctness_points: float, performance_points: float,
                 execution_time: float | None = None, visibility: str = "visible") -> dict:
    result = result or {}
    score = result.get("score") or {}
    verdict = result.get("verdict") or "internal_error"
    accepted = verdict == "accepted"
    cases = [c for c in result.get("cases") or [] if isinstance(c, dict)]
    counted = [c for c in cases if c.get("status") not in RUN]
    share = correctness_points / len(counted) if counted else 0.0
    tests = []
    for number, case in enumerate(cases, 1):
        status = case.get("status")
        test = {"name": f"{case.get('name')} ({case.get('shape', '')})".replace(" ()", ""),
                "number": str(number), "visibility": visibility,
                "output": f"{status}: {case.get('message') or ''}".strip().rstrip(":")}
        if status in RUN:
            test.update(score=0.0, max_score=0.0)
        else:
            test.update(score=share if accepted else 0.0, max_score=share,
                        status="passed" if status == "accepted" else "failed")
        tests.append(test)
    if not counted:  # nothing ran (the file did not load): one test says why
        correctness_test = {"name": "loading the submission", "number": "0", "visibility": visibility,
                            "score": 0.0, "max_score": correctness_points, "status": "failed",
                            "output": str(result.get("message") or verdict)}
        tests.insert(0, correctness_test)
    perf = score.get("performance")
    tests.append({"name": "performance", "number": str(len(cases) + 1), "visibility": visibility,
                  "score": float(perf or 0.0), "max_score": performance_points,
                  "status": "passed" if perf else "failed",
                  "output": str(score.get("note") or ("not timed" if result.get("latency_ms") is None else ""))})
    total = score.get("total")
    out = {
        "score": float(total) if isinstance(total, (int, float)) else 0.0,
        "output": f"{verdict}: {result.get('message') or ''}".strip(),
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    if execution_time is not None or result.get("duration_s") is not None:
        out["execution_time"] = float(execution_time if execution_time is not None else result["duration_s"])
    board = []
    if accepted and isinstance(result.get("latency_ms"), (int, float)):
        board.append({"name": "latency (ms)", "value": float(result["latency_ms"]), "order": "asc"})
        tflops = (result.get("timing") or {}).get("tflops")
        if isinstance(tflops, (int, float)):
            board.append({"name": "TFLOPS", "value": float(tflops), "order": "desc"})
    if board:
        out["leaderboard"] = board
    return out


def validate(doc: dict) -> list[str]:
    """Problems with a results.json against Gradescope's documented format."""
    problems = []
    if not isinstance(doc.get("score"), (int, float)) and not all("score" in t for t in doc.get("tests", [])):
        problems.append("score: a number is needed (or every test scored)")
    if "execution_time" in doc and not isinstance(doc["execution_time"], (int, float)):
        problems.append("execution_time: not a number")
    for i, test in enumerate(doc.get("tests", [])):
        for key, kind in (("score", (int, float)), ("max_score", (int, float)), ("name", str), ("output", str)):
            if key in test and not isinstance(test[key], kind):
                problems.append(f"tests[{i}].{key}: wrong type")
        if test.get("status") not in (None, "passed", "failed"):
            problems.append(f"tests[{i}].status: {test.get('status')!r}")
        if test.get("visibility") not in (None, "hidden", "after_due_date", "after_published", "visible"):
            problems.append(f"tests[{i}].visibility: {test.get('visibility')!r}")
    for i, entry in enumerate(doc.get("leaderboard", [])):
        if set(entry) - {"name", "value", "order"} or not isinstance(entry.get("name"), str) \
                or entry.get("order", "desc") not in ("asc", "desc"):
            problems.append(f"leaderboard[{i}]: malformed")
    return problems
