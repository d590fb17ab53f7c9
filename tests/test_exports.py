"""Each export of a results store, validated: CSV columns and formula
escaping, Gradescope's schema, JUnit parsed by xml.etree, the HTML report's
sections, the similarity report."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from judge.batch.discover import Entry, Student
from judge.batch.store import Store
from judge.cli import main
from judge.export import gradescope, similarity
from judge.export.gradebook import COLUMNS, escape
from tests.batch_results import accepted, compile_error, wrong_answer

GRID = open("submissions/correct/grid_2d.py").read()


@pytest.fixture
def results(tmp_path):
    out = tmp_path / "results"
    store = Store(out)
    entries = [Entry("alice", "/s/alice.py", "1" * 64, GRID, "Alice"),
               Entry("=bob", "/s/bob.py", "2" * 64, GRID.replace("pid", "program"), "@Bob"),
               Entry("carol", "/s/carol.py", "3" * 64, "def solve(a, b, c, M, N, K)\n", "-Carol"),
               Entry("dan", "/s/dan.py", "4" * 64, GRID, "Dan")]
    store.sync(entries, [Student("erin", "+Erin", "e@x")])
    run = store.start_run(challenge="matrix_multiplication", policy="fp32", seed=7, device="cuda",
                          options={"challenge": "matrix_multiplication"})
    store.record("alice", "1" * 64, "c", run, accepted(2.5), lane="gpu0", wall_s=20.0)
    store.record("=bob", "2" * 64, "c", run, wrong_answer(), lane="gpu1", wall_s=9.0)
    store.record("carol", "3" * 64, "c", run, compile_error(), lane="gpu0", wall_s=3.0)
    store.end_run(run, {"problems": ["notes.txt: not a .py file; skipped"]},
                  {"file": "grid_2d.py", "start": {"latency_ms": 2.0}, "end": {"latency_ms": 2.02},
                   "change_percent": 1.0})
    store.close()
    return out


def export(out, fmt):
    run = CliRunner().invoke(main, ["export", str(out), "--format", fmt])
    assert run.exit_code == 0, run.output
    return open(run.output.strip(), encoding="utf-8").read()


def test_csv(results):
    rows = list(csv.DictReader(io.StringIO(export(results, "csv"))))
    assert list(rows[0]) == COLUMNS
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == {"alice", "'=bob", "carol", "dan", "erin"}
    assert by_id["alice"]["verdict"] == "accepted" and float(by_id["alice"]["score"]) == 70.0
    assert float(by_id["alice"]["percent_of_cublas"]) == 80.0 and float(by_id["alice"]["latency_ms"]) == 2.5
    assert by_id["alice"]["cases_passed"] == "3" and by_id["alice"]["file_sha256"] == "1" * 64
    assert by_id["'=bob"]["name"] == "'@Bob" and by_id["'=bob"]["message"].startswith("'=cmd")
    assert by_id["'=bob"]["first_failing_case"] == "odd_sizes"
    assert by_id["carol"]["name"] == "'-Carol" and by_id["carol"]["verdict"] == "compile_error"
    assert by_id["dan"]["status"] == "pending" and by_id["dan"]["verdict"] == ""
    assert by_id["erin"]["verdict"] == "missing" and by_id["erin"]["name"] == "'+Erin"
    for row in rows:  # no cell a spreadsheet would run
        assert not any(str(v).startswith(("=", "+", "-", "@")) for v in row.values())


def test_escape():
    assert escape("=1+1") == "'=1+1" and escape("\tx") == "'\tx" and escape("ok") == "ok"
    assert escape(-1.5) == -1.5 and escape(None) == ""


def test_gradescope_schema(results):
    docs = json.loads(export(results, "gradescope"))
    assert set(docs) == {"alice", "=bob", "carol"}
    for doc in docs.values():
        assert gradescope.validate(doc) == []
        assert abs(sum(t["score"] for t in doc["tests"]) - doc["score"]) < 1e-9
        assert isinstance(doc["execution_time"], float)
    alice = docs["alice"]
    assert alice["score"] == 70.0 and sum(t["max_score"] for t in alice["tests"]) == 100.0
    assert alice["leaderboard"] == [{"name": "latency (ms)", "value": 2.5, "order": "asc"},
                                    {"name": "TFLOPS", "value": pytest.approx(412.3 / 2.5), "order": "desc"}]
    assert [t["status"] for t in docs["=bob"]["tests"][:2]] == ["passed", "failed"]
    assert docs["=bob"]["score"] == 0 and "leaderboard" not in docs["=bob"]


def test_gradescope_validate_catches_bad_documents():
    assert gradescope.validate({"score": "x", "tests": [{"status": "ok"}]})
    assert gradescope.validate({"score": 1, "leaderboard": [{"name": "t", "value": 1, "order": "up"}]})


def test_junit_parses(results):
    root = ET.fromstring(export(results, "junit").encode())
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"alice", "=bob", "carol", "dan", "erin"}
    assert suites["alice"].get("failures") == "0" and len(suites["alice"].findall("testcase")) == 3
    bob = suites["=bob"]
    assert bob.get("failures") == "1" and bob.get("skipped") == "1"
    assert bob.find("testcase/failure").get("message") == "3 elements out of tolerance"
    assert suites["carol"].get("errors") == "1"
    assert suites["erin"].find("testcase/skipped").get("message") == "missing"
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites.values())


def test_html_sections(results):
    html = export(results, "html")
    for anchor in ("glance", "matrix", "drift", "similarity", "problems", "submissions"):
        assert f'id="{anchor}"' in html
    assert html.count("<svg") >= 3  # score, latency and TFLOPS plots, inline
    assert "cublas_tf32" in html and "+1.00 %" in html and "notes.txt" in html
    assert "src=\"http" not in html and "<script" not in html  # self-contained


def test_html_escapes_student_text(tmp_path):
    store = Store(tmp_path)
    store.sync([Entry("x", "/x.py", "1" * 64, "", "<script>alert(1)</script>")], [])
    result = compile_error()
    result["stdout"] = "<img src=x onerror=alert(1)>"
    store.record("x", "1" * 64, "c", None, result)
    store.close()
    html = export(tmp_path, "html")
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html


def test_similarity(results):
    text = export(results, "similarity")
    rows = list(csv.DictReader(io.StringIO(text)))
    pairs = {(r["id_a"], r["id_b"]) for r in rows}
    assert ("'=bob", "alice") in pairs and ("alice", "dan") in pairs
    assert not any("carol" in pair for pair in pairs)
    assert float(rows[0]["similarity"]) == 1.0


def test_similarity_excludes_starter():
    starter = GRID
    assert similarity.similar_pairs({"a": GRID, "b": GRID}, starter) == []
    assert similarity.similar_pairs({"a": GRID, "b": GRID}, None)[0].similarity == 1.0


def test_json_lines(results):
    lines = [json.loads(x) for x in export(results, "json").splitlines()]
    assert [x["id"] for x in lines] == ["=bob", "alice", "carol", "dan", "erin"]
    assert lines[1]["result"]["verdict"] == "accepted" and lines[3]["result"] is None


def test_export_never_writes_over_the_store(results):
    """--to the store's own file: refused (the CSV had replaced every result)."""
    before = (results / "results.sqlite").read_bytes()
    run = CliRunner().invoke(main, ["export", str(results), "--format", "csv", "--to", str(results / "results.sqlite")])
    assert run.exit_code == 2 and "results store's own file" in run.output
    assert (results / "results.sqlite").read_bytes() == before


def test_export_of_a_file_that_is_no_store(tmp_path):
    (tmp_path / "results.sqlite").write_text("not a database, a text file of the same name\n" * 50)
    run = CliRunner().invoke(main, ["export", str(tmp_path), "--format", "csv"])
    assert run.exit_code == 2 and "is not a results store" in run.output, run.output


def test_export_without_store(tmp_path):
    run = CliRunner().invoke(main, ["export", str(tmp_path), "--format", "csv"])
    assert run.exit_code == 2 and "no results store" in run.output


def test_junit_keeps_only_what_xml_can_hold():
    """A submission's text with U+FFFF or a lone surrogate (the report no
    longer parsed) is cleaned before it goes into the XML."""
    import xml.etree.ElementTree as ET
    from judge.export.junit import _clean
    text = _clean("ok \uffff \ufffe \ud800 \x1b end")
    assert text == "ok     end"
    ET.fromstring(f"<a>{text}</a>")
