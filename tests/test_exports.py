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
        assert abs(sum(t.get("score", 0) for t in doc["tests"]) - doc["score"]) < 1e-9
        assert isinstance(doc["execution_time"], float)
    alice = docs["alice"]
    assert alice["score"] == 70.0 and sum(t.get("max_score", 0) for t in alice["tests"]) == 100.0
    assert alice["leaderboard"] == [{"name": "latency (ms)", "value": 2.5, "order": "asc"},
                                    {"name": "TFLOPS", "value": pytest.approx(412.3 / 2.5), "order": "desc"}]
    bob = {t["name"]: t for t in docs["=bob"]["tests"]}
    assert bob["example (2×2×2)"]["status"] == "passed" and bob["odd_sizes (3×5×7)"]["status"] == "failed"
    assert docs["=bob"]["score"] == 0 and "leaderboard" not in docs["=bob"]


def _maxima(doc):
    # By case name: the test data's odd_sizes, no case of the challenge, has one shape per helper.
    return [(t["name"].split(" (")[0], t.get("max_score")) for t in doc["tests"]]


def test_gradescope_maxima_are_the_same_for_every_student(results):
    """The same test had max_score 2.0 for one student and 2.105 for
    another (40 over however many cases ran): the points are now in two
    tests of fixed maxima, and every case of the challenge is listed for
    everyone, whether it ran or not."""
    docs = json.loads(export(results, "gradescope"))
    assert _maxima(docs["alice"]) == _maxima(docs["=bob"]) == _maxima(docs["carol"])
    scored = {t["name"]: t["max_score"] for t in docs["alice"]["tests"] if "max_score" in t}
    assert scored == {"correctness (every case must pass)": 40.0, "performance": 60.0}
    names = [t["name"].split(" (")[0] for t in docs["carol"]["tests"]]
    assert "basic_2x2" in names and "odd_large_gpu" in names  # the challenge's list, not what ran


def test_gradescope_not_run_cases_have_no_status(results):
    """Skipped cases were written with "status": null; Gradescope knows
    only passed and failed: the key is left out, the output says not run."""
    docs = json.loads(export(results, "gradescope"))
    for doc in docs.values():
        for test in doc["tests"]:
            assert test.get("status", "passed") in ("passed", "failed"), test
            if "status" not in test and "score" not in test and test["name"] != "performance":
                assert test["output"].startswith("not run"), test
    carol = {t["name"]: t for t in docs["carol"]["tests"]}
    assert carol["odd_sizes (2×2×2)"]["output"] == "not run" and "status" not in carol["odd_sizes (2×2×2)"]
    assert carol["example (2×2×2)"]["status"] == "failed"


def cpu_accepted(skipped=("performance",)):
    """An accepted result as a CPU batch records it: no timing, the
    correctness points only, some cases skipped on the CPU."""
    result = accepted()
    result.update(device="cpu", latency_ms=None, timing=None, performance=None,
                  timing_note="not timed: latency is measured on a GPU only (this run used the Triton interpreter)")
    result["score"].update(total=40.0, performance=None, performance_fraction=None,
                           note="correctness points only (not timed)")
    for case in result["cases"]:
        if case["name"] in skipped:
            case.update(status="skipped", message="skipped on CPU: too large for the interpreter")
    return result


def test_gradescope_cpu_batch_has_no_failing_performance_test(tmp_path):
    """An accepted CPU-graded file showed a failed performance test, 0/60,
    that no student could pass on a machine without a GPU; and a case
    skipped for one student but not another changed the maxima."""
    store = Store(tmp_path)
    store.sync([Entry("a", "/a.py", "1" * 64, GRID), Entry("b", "/b.py", "2" * 64, GRID)], [])
    run = store.start_run(challenge="matrix_multiplication", policy=None, seed=1, device="cpu",
                          options={"challenge": "matrix_multiplication", "device": "cpu", "time": True})
    store.record("a", "1" * 64, "c", run, cpu_accepted())
    store.record("b", "2" * 64, "c", run, cpu_accepted(skipped=("performance", "odd_sizes")))
    store.close()
    docs = json.loads(export(tmp_path, "gradescope"))
    assert _maxima(docs["a"]) == _maxima(docs["b"])
    for doc in docs.values():
        assert gradescope.validate(doc) == [] and doc["score"] == 40.0
        perf = next(t for t in doc["tests"] if t["name"] == "performance")
        assert "status" not in perf and "score" not in perf and "max_score" not in perf
        assert "performance was not measured" in perf["output"]
    assert not any("not run: not run" in t["output"] for doc in docs.values() for t in doc["tests"])
    odd = next(t for t in docs["b"]["tests"] if t["name"].startswith("odd_sizes"))
    assert "status" not in odd and odd["output"].startswith("not run: skipped on CPU")


def test_gradescope_validate_rejects_a_score_that_is_not_the_sum():
    doc = {"score": 10.0, "tests": [{"name": "a", "score": 4.0, "max_score": 5.0}, {"name": "b", "output": "x"}]}
    assert gradescope.validate(doc)
    assert gradescope.validate({**doc, "score": 4.0}) == []


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


@pytest.fixture
def stale(results):
    """alice's file changed after it was graded, and the regrading was interrupted."""
    store = Store(results)
    store.sync([Entry("alice", "/s/alice.py", "9" * 64, GRID + "\n# changed\n", "Alice")], [])
    store.close()
    return results


def test_gradescope_marks_a_stale_result(stale):
    """gradebook.csv said `stale`; gradescope.json gave the old result as current."""
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(export(stale, "csv")))}
    assert rows["alice"]["status"] == "stale"
    docs = json.loads(export(stale, "gradescope"))
    alice = docs["alice"]
    assert alice["output"].startswith("NOT CURRENT: this result is for an earlier version of the file")
    assert "999999999999" in alice["output"] and "111111111111" in alice["output"]
    assert alice["extra_data"] == {"status": "stale", "stale_because": "file", "graded_sha256": "1" * 64,
                                   "file_sha256": "9" * 64}
    assert alice["score"] == 70.0 and gradescope.validate(alice) == []  # kept, as in the gradebook
    assert "NOT CURRENT" not in docs["=bob"]["output"] and "extra_data" not in docs["=bob"]


def test_a_result_graded_under_other_settings_is_not_current(results):
    """A regrade under another policy, interrupted: the results it did not
    reach were exported as current, under the new run's policy."""
    store = Store(results)
    store.set_meta("config", json.dumps(["new-settings"]))
    store.record("dan", "4" * 64, "new-settings", None, accepted(2.0), lane="gpu0", wall_s=5.0)
    store.close()
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(export(results, "csv")))}
    assert rows["alice"]["status"] == "stale" and rows["dan"]["status"] == "graded"
    docs = json.loads(export(results, "gradescope"))
    assert docs["alice"]["output"].startswith("NOT CURRENT: this result was graded")
    assert docs["alice"]["extra_data"]["stale_because"] == "settings" and "extra_data" not in docs["dan"]
    assert "under other" in export(results, "html")


def test_junit_marks_a_stale_result(stale):
    root = ET.fromstring(export(stale, "junit").encode())
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    props = {p.get("name"): p.get("value") for p in suites["alice"].findall("properties/property")}
    assert props["status"] == "stale" and props["graded_sha256"] == "1" * 64 and props["file_sha256"] == "9" * 64
    assert props["note"].startswith("NOT CURRENT")
    bob = {p.get("name"): p.get("value") for p in suites["=bob"].findall("properties/property")}
    assert bob == {"status": "graded"}
    assert suites["alice"][0].tag == "properties"  # first in a testsuite, as xunit2 has it
    assert "Not current:" in export(stale, "html")


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


RAW = "\x1b[2J\x00\x07\x0c\x1b]0;title\x07\u202e"


@pytest.fixture
def noisy(tmp_path):
    """A student whose exception text and stdout hold terminal control."""
    store = Store(tmp_path)
    store.sync([Entry("x", "/x.py", "1" * 64, "", "X")], [])
    result = compile_error()
    result["message"] = f"ValueError: {RAW} boom"
    result["cases"][0]["message"] = result["message"]
    result["stdout"] = f"line one\n\tindented {RAW} end\n"
    store.record("x", "1" * 64, "c", None, result)
    store.close()
    return tmp_path


def _controls(text: str) -> set[str]:
    from judge.export.text import _hidden
    return {ch for ch in text if _hidden(ch)}


@pytest.mark.parametrize("fmt", ["csv", "gradescope", "junit", "html"])
def test_no_raw_control_characters_in_exports(noisy, fmt):
    """Raw ESC and NUL reached gradebook.csv (cat cleared the terminal) and
    NUL/ESC/BEL/form feed report.html's <pre>: each is now a visible escape."""
    text = export(noisy, fmt)
    if fmt == "gradescope":  # JSON escapes them itself: what Gradescope shows is the decoded text
        text = "\n".join(t["output"] for t in json.loads(text)["x"]["tests"]) + json.loads(text)["x"]["output"]
    assert _controls(text) == set()
    assert "\\x1b[2J\\x00\\x07" in text and "\\u202e" in text  # (the CSV's message folds whitespace: \\x0c)


def test_visible_keeps_newline_and_tab():
    from judge.export.text import visible
    assert visible("a\tb\nc\rd\x7f\x85") == "a\tb\nc\\x0dd\\x7f\\x85"
    assert visible("plain ünïcode ✓") == "plain ünïcode ✓" and visible(3.5) == 3.5
    assert visible("windows\r\nline\rprogress") == "windows\nline\\x0dprogress"


def test_html_shows_stdout_once(noisy):
    """The tester saw each student's stdout twice: the report shows the
    stored stdout once (a file that prints as it is imported prints once
    per worker that loaded it, and the stored stdout holds each)."""
    html = export(noisy, "html")
    assert html.count("indented") == 1 and html.count("line one") == 1


def torch_result():
    """An accepted result of a challenge whose baseline is torch, not cuBLAS."""
    result = accepted()
    result.update(challenge="relu", policy="leetgpu")
    result["performance"]["percent_of"] = {"torch": 50.0}
    result["score"].update(floor="torch", target="torch")
    return result


def test_baseline_column_named_after_the_challenges_baseline(tmp_path):
    """relu's CSV column was percent_of_cublas and the report said "% of cuBLAS"."""
    store = Store(tmp_path)
    store.sync([Entry("a", "/a.py", "1" * 64, GRID)], [])
    run = store.start_run(challenge="relu", policy=None, seed=1, device="cuda", options={"challenge": "relu"})
    store.record("a", "1" * 64, "c", run, torch_result())
    store.close()
    rows = list(csv.DictReader(io.StringIO(export(tmp_path, "csv"))))
    assert "percent_of_cublas" not in rows[0] and float(rows[0]["percent_of_torch"]) == 50.0
    html = export(tmp_path, "html")
    assert "% of torch" in html and "cuBLAS" not in html
    assert "policy leetgpu (the challenge" in html and "policy ?" not in html  # no --policy: the default, named


def test_matrix_multiplication_keeps_cublas(results):
    assert "% of cuBLAS" in export(results, "html") and "policy fp32 ·" in export(results, "html")
    assert export(results, "csv").splitlines()[0].split(",") == COLUMNS


def test_export_to_stdout(results, tmp_path, monkeypatch):
    """--to - wrote a file named "-"; it is stdout now (every format is one file)."""
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke(main, ["export", str(results), "--format", "csv", "--to", "-"])
    assert run.exit_code == 0, run.output
    assert run.output.splitlines()[0].split(",") == COLUMNS and "alice" in run.output
    assert not (tmp_path / "-").exists() and not (results / "gradebook.csv").exists()
    run = CliRunner().invoke(main, ["export", str(results), "--format", "gradescope", "--to", "-"])
    assert set(json.loads(run.output)) == {"alice", "=bob", "carol"}


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
    assert run.exit_code == 2 and ("is not a results store" in run.output or "is damaged" in run.output), run.output


def test_export_without_store(tmp_path):
    run = CliRunner().invoke(main, ["export", str(tmp_path), "--format", "csv"])
    assert run.exit_code == 2 and "no results store" in run.output


def test_junit_keeps_only_what_xml_can_hold():
    """A submission's text with U+FFFF or a lone surrogate (the report no
    longer parsed) is cleaned before it goes into the XML."""
    import xml.etree.ElementTree as ET
    from judge.export.junit import _clean
    text = _clean("ok \uffff \ufffe \ud800 \x1b end")
    assert text == "ok    \\x1b end"  # a control character is shown (judge.export.text), not dropped
    ET.fromstring(f"<a>{text}</a>")


def test_junit_counts_a_file_that_could_not_be_graded_as_an_error(results):
    """A student who handed in two .py files was a <skipped> test: the
    suite read errors="0" with students left ungraded."""
    from judge.batch.discover import Skipped
    store = Store(results)
    store.sync([], [], [Skipped("grace", "/s/grace", "2 .py files and none named solution.py")])
    store.close()
    root = ET.fromstring(export(results, "junit").encode())
    grace = {s.get("name"): s for s in root.findall("testsuite")}["grace"]
    assert grace.get("errors") == "1" and grace.find("testcase/error").get("type") == "not_graded"
    erin = {s.get("name"): s for s in root.findall("testsuite")}["erin"]  # on the roster, no file: a skip
    assert erin.get("skipped") == "1" and erin.get("errors") == "0"
