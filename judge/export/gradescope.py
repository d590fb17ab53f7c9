"""Gradescope's autograder format (results.json): `score`,
`execution_time`, `output`, `tests[]` and a `leaderboard[]` (latency
ascending, TFLOPS descending).

The points are carried by two tests, the same for every student of the
challenge: "correctness" first (max_score the correctness points, earned
whole when the submission is accepted, as the judge scores it) and
"performance" last (max_score the performance points). Between them, one
test per case of the challenge's case list, with a status (passed/failed)
and no points: a share of the correctness points per case would not add
up to the judge's score where a case was skipped on the CPU (an accepted
file earns all of them), and shares taken from what ran differed between
students. A case that did not run has no status and says "not run". A
batch that ran without timing (on the CPU, or timing turned off) has a
performance test with no points and no status that says so: no student
could pass it. The top-level score is the sum of the scored tests."""

from __future__ import annotations

from .text import visible

NOT_RUN = ("skipped", "not_run")
STATUSES = ("passed", "failed")


def _label(name, shape) -> str:
    return visible(f"{name} ({shape})" if shape else str(name))


def _case_test(name, shape, case: dict | None, visibility: str) -> dict:
    test = {"name": _label(name, shape), "visibility": visibility}
    status = (case or {}).get("status")
    message = visible(str((case or {}).get("message") or ""))
    if status is None or status in NOT_RUN:
        if not message.startswith("not run"):  # the judge's own message may say it already
            message = f"not run: {message}" if message else "not run"
        test["output"] = message
    else:
        test["status"] = "passed" if status == "accepted" else "failed"
        test["output"] = f"{status}: {message}" if message else str(status)
    return test


def case_tests(cases: list[dict], case_list: list[tuple[str, str]] | None, visibility: str) -> list[dict]:
    """One test per case of the challenge (`case_list`: (name, shape)), in
    its order, whether or not it ran; without a list, the result's cases."""
    by_name = {c.get("name"): c for c in cases}
    listed = list(case_list or [(c.get("name"), c.get("shape", "")) for c in cases])
    known = {name for name, _ in listed}
    listed += [(c.get("name"), c.get("shape", "")) for c in cases if c.get("name") not in known]
    # Named by the list's shape: the same test name for every student.
    return [_case_test(name, shape, by_name.get(name), visibility) for name, shape in listed]


def timed_result(result: dict) -> bool:
    """Whether the run that graded `result` measured latency (a GPU, timing on)."""
    note = str(result.get("timing_note") or "")
    return result.get("device") == "cuda" and "timing was turned off" not in note


def _performance_test(result: dict, points: float, timed: bool, visibility: str) -> dict:
    score = result.get("score") or {}
    if not timed:  # not a failure: nobody in this batch could earn these points
        why = result.get("timing_note") or "latency is measured on a GPU only"
        return {"name": "performance", "visibility": visibility,
                "output": f"performance was not measured: this batch ran without timing ({visible(str(why))}); "
                          "only the correctness points count"}
    perf = score.get("performance")
    note = score.get("note") if perf is not None else (result.get("timing_note") or "not timed: not accepted")
    return {"name": "performance", "visibility": visibility, "score": float(perf or 0.0), "max_score": points,
            "status": "passed" if perf else "failed", "output": visible(str(note or ""))}


def _leaderboard(result: dict) -> list[dict]:
    if result.get("verdict") != "accepted" or not isinstance(result.get("latency_ms"), (int, float)):
        return []
    board = [{"name": "latency (ms)", "value": float(result["latency_ms"]), "order": "asc"}]
    tflops = (result.get("timing") or {}).get("tflops")
    if isinstance(tflops, (int, float)):
        board.append({"name": "TFLOPS", "value": float(tflops), "order": "desc"})
    return board


def results_json(result: dict, correctness_points: float, performance_points: float,
                 execution_time: float | None = None, visibility: str = "visible",
                 case_list: list[tuple[str, str]] | None = None, timed: bool | None = None) -> dict:
    result = result or {}
    verdict = result.get("verdict") or "internal_error"
    accepted = verdict == "accepted"
    summary = visible(f"{verdict}: {result.get('message') or ''}".strip())
    earned = float((result.get("score") or {}).get("correctness") or 0.0) if accepted else 0.0
    cases = [c for c in result.get("cases") or [] if isinstance(c, dict)]
    tests = [{"name": "correctness (every case must pass)", "visibility": visibility, "score": earned,
              "max_score": correctness_points, "status": "passed" if accepted else "failed", "output": summary},
             *case_tests(cases, case_list, visibility),
             _performance_test(result, performance_points, timed_result(result) if timed is None else timed,
                               visibility)]
    for number, test in enumerate(tests, 1):
        test["number"] = str(number)
    out = {"score": sum(t.get("score", 0.0) for t in tests), "output": summary, "visibility": visibility,
           "stdout_visibility": "hidden", "tests": tests}
    if execution_time is not None or result.get("duration_s") is not None:
        out["execution_time"] = float(execution_time if execution_time is not None else result["duration_s"])
    board = _leaderboard(result)
    if board:
        out["leaderboard"] = board
    return out


def stale_note(row: dict) -> str:
    if row.get("stale_because") == "settings":
        policy = (row.get("result") or {}).get("policy")
        return (f"NOT CURRENT: this result was graded {row.get('graded_at')} under other settings (policy "
                f"{policy}, or another seed or scale) than the last batch run's, which stopped before grading it "
                "again. Run judge batch again before publishing.")
    return (f"NOT CURRENT: this result is for an earlier version of the file (sha256 {str(row.get('sha256'))[:12]}, "
            f"graded {row.get('graded_at')}); the file changed since (sha256 {str(row.get('file_sha256'))[:12]}) "
            "and has not been graded again. Run judge batch again before publishing.")


def for_row(row: dict, correctness_points: float, performance_points: float,
            case_list: list[tuple[str, str]] | None = None, timed: bool | None = None) -> dict:
    """The results.json of one store row. A stale row (its file changed
    since it was graded, the regrading interrupted) keeps its result, as
    the gradebook does, for an instructor may still want it (a change after
    the deadline), but says at the top of its output, and in extra_data,
    that it is not the current file's: presented as current, an old grade
    had gone to Gradescope unremarked."""
    doc = results_json(row["result"], correctness_points, performance_points, row.get("wall_s"),
                       case_list=case_list, timed=timed)
    if row.get("status") == "stale":
        doc["output"] = stale_note(row) + "\n" + doc["output"]
        doc["extra_data"] = {"status": "stale", "stale_because": row.get("stale_because"),
                             "graded_sha256": row.get("sha256"), "file_sha256": row.get("file_sha256")}
    return doc


def validate(doc: dict) -> list[str]:
    """Problems with a results.json against Gradescope's documented format
    (and this export's own rule: the score is the sum of the scored tests)."""
    problems = []
    tests = doc.get("tests", [])
    if not isinstance(doc.get("score"), (int, float)) and not all("score" in t for t in tests):
        problems.append("score: a number is needed (or every test scored)")
    scored = [t["score"] for t in tests if isinstance(t.get("score"), (int, float))]
    if scored and isinstance(doc.get("score"), (int, float)) and abs(sum(scored) - doc["score"]) > 1e-9:
        problems.append(f"score {doc['score']} is not the sum of the tests' scores {sum(scored)}")
    if "execution_time" in doc and not isinstance(doc["execution_time"], (int, float)):
        problems.append("execution_time: not a number")
    for i, test in enumerate(tests):
        for key, kind in (("score", (int, float)), ("max_score", (int, float)), ("name", str), ("output", str),
                          ("number", str)):
            if key in test and not isinstance(test[key], kind):
                problems.append(f"tests[{i}].{key}: wrong type")
        if "status" in test and test["status"] not in STATUSES:
            problems.append(f"tests[{i}].status: {test.get('status')!r}")
        if test.get("visibility") not in (None, "hidden", "after_due_date", "after_published", "visible"):
            problems.append(f"tests[{i}].visibility: {test.get('visibility')!r}")
    for i, entry in enumerate(doc.get("leaderboard", [])):
        if set(entry) - {"name", "value", "order"} or not isinstance(entry.get("name"), str) \
                or entry.get("order", "desc") not in ("asc", "desc"):
            problems.append(f"leaderboard[{i}]: malformed")
    return problems
