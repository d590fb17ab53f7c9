"""JUnit XML in pytest's xunit2 shape: one <testsuite> per submission, one
<testcase> per case; a wrong answer or broken rule is a <failure>, a crash,
time-out or load failure an <error>, a case not run <skipped>, each with the
judge's message; the submission's capped stdout/stderr in <system-out>/<system-err>."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..batch.store import NOT_GRADED
from .text import visible

FAILURES = {"wrong_answer", "rejected"}
SKIPS = {"skipped", "not_run"}


def _clean(text) -> str:
    """Student text as XML 1.0 can hold it: control characters made visible
    (judge.export.text), then lone surrogates, U+FFFE and U+FFFF dropped (a
    submission printed one, and the file no longer parsed)."""
    return "".join(ch for ch in visible(str(text or "")) if ch in "\t\n" or 0x20 <= ord(ch) <= 0xD7FF
                   or 0xE000 <= ord(ch) <= 0xFFFD or ord(ch) >= 0x10000)


def _properties(suite, row: dict) -> None:
    """The row's status (graded, pending, missing, stale) as a property; a
    stale row (its file changed since, the regrading interrupted) also says
    which file was graded: its cases are an earlier file's, not current."""
    items = [("status", row.get("status") or "")]
    if row.get("status") == "stale":
        from .gradescope import stale_note
        items += [("graded_sha256", row.get("sha256")), ("file_sha256", row.get("file_sha256")),
                  ("note", stale_note(row))]
    props = ET.SubElement(suite, "properties")
    for name, value in items:
        ET.SubElement(props, "property", name=name, value=_clean(value))


def to_junit(rows: list[dict]) -> str:
    root = ET.Element("testsuites", name="tritonjudge")
    totals = dict(tests=0, failures=0, errors=0, skipped=0)
    for row in rows:
        result = row.get("result")
        suite = ET.SubElement(root, "testsuite", name=_clean(row["id"]))
        _properties(suite, row)
        counts = dict(tests=0, failures=0, errors=0, skipped=0)
        cases = [c for c in (result or {}).get("cases") or [] if isinstance(c, dict)]
        if result is None or not cases:
            case = ET.SubElement(suite, "testcase", classname=_clean(row["id"]), name="submission", time="0")
            counts["tests"] += 1
            if result is None and (row.get("status") or "").startswith(NOT_GRADED):
                # Something was handed in that could not be graded (two files, no .py file): an
                # error a CI view must show, not a skip.
                node = ET.SubElement(case, "error", message=_clean(row.get("status")), type="not_graded")
                node.text = _clean(row.get("status"))
                counts["errors"] += 1
            elif result is None:
                ET.SubElement(case, "skipped", message=_clean(row.get("status") or "not graded"))
                counts["skipped"] += 1
            elif result.get("verdict") != "accepted":
                tag = "failure" if result.get("verdict") in FAILURES else "error"
                node = ET.SubElement(case, tag, message=_clean(result.get("message")),
                                     type=_clean(result.get("verdict")))
                node.text = _clean(result.get("message"))
                counts["failures" if tag == "failure" else "errors"] += 1
        for item in cases:
            status = item.get("status")
            case = ET.SubElement(suite, "testcase", classname=_clean(row["id"]),
                                 name=_clean(f"{item.get('name')} [{item.get('shape', '')}]"),
                                 time=f"{float(item.get('seconds') or 0):.3f}")
            counts["tests"] += 1
            message = _clean(item.get("message") or status)
            if status in SKIPS:
                ET.SubElement(case, "skipped", message=message)
                counts["skipped"] += 1
            elif status in FAILURES:
                node = ET.SubElement(case, "failure", message=message, type=_clean(status))
                node.text = _clean(item.get("diagnosis") or item.get("message"))
                counts["failures"] += 1
            elif status != "accepted":
                node = ET.SubElement(case, "error", message=message, type=_clean(status))
                node.text = message
                counts["errors"] += 1
        if result:
            ET.SubElement(suite, "system-out").text = _clean(result.get("stdout"))
            ET.SubElement(suite, "system-err").text = _clean(result.get("stderr"))
        suite.set("time", f"{float((result or {}).get('duration_s') or 0):.3f}")
        if row.get("graded_at"):
            suite.set("timestamp", row["graded_at"])
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
