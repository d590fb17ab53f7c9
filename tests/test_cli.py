"""The `judge` command (judge/cli.py): JSON and human output, exit codes,
usage errors, and the challenges/show/init subcommands.

A real grading costs seconds on the CPU (a worker process, the Triton
interpreter), so only three are done here: an accepted file through the
installed console script, a compile error and a wrong answer through click's
test runner. Everything else is checked without grading."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import triton
from click.testing import CliRunner

import judge
from judge import cases
from judge import challenge as challenges
from judge.cli import main
from judge.casework import Run as _Run
from judge.grader import GradeOptions, GradeResult
from judge.verdicts import Verdict
from tests.helpers import HAS_CUDA, ROOT, SUBMISSIONS

CORRECT = SUBMISSIONS / "correct" / "block_pointers.py"
SYNTAX_ERROR = SUBMISSIONS / "faults" / "syntax_error.py"
TF32 = SUBMISSIONS / "wrong" / "tf32_default.py"

TOP_KEYS = {"verdict", "challenge", "submission", "cases", "latency_ms", "device", "versions", "seed"}
CASE_KEYS = {"name", "shape", "status", "max_abs_err", "max_rel_err", "mismatches", "message"}


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """A secret of the test's own, and no secret file written anywhere real."""
    monkeypatch.setenv("JUDGE_SECRET", "test-cli-secret")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    # grade() sets TRITON_INTERPRET=1 for a CPU run in this process; on a
    # machine with a GPU, that must not leak into the tests that follow.
    saved = os.environ.get("TRITON_INTERPRET")
    yield tmp_path
    if saved is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = saved


def _run(*args, **kwargs):
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="judge", **kwargs)


def _judge_command() -> list[str]:
    """The installed console script: next to this interpreter, else on PATH,
    else the module."""
    here = Path(sys.executable).parent / "judge"
    if here.is_file():
        return [str(here)]
    found = shutil.which("judge")
    return [found] if found else [sys.executable, "-m", "judge.cli"]


def _check_json_shape(data: dict) -> None:
    assert TOP_KEYS <= set(data)
    assert data["challenge"] == "matrix_multiplication"
    assert set(data["versions"]) >= {"python", "torch", "triton"}
    assert data["versions"]["torch"] == torch.__version__
    assert data["versions"]["triton"] == triton.__version__
    assert data["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert data["versions"]["tritonjudge"].startswith(judge.__version__ + "+")  # and a digest of its code
    assert isinstance(data["seed"], int)
    names = [c["name"] for c in data["cases"]]
    mm = challenges.load("matrix_multiplication")
    assert names == [c.name for c in mm.all_cases()]  # every case, in order, run or not
    for case in data["cases"]:
        assert CASE_KEYS <= set(case), case
        assert case["shape"] == mm.shape_label(mm.case(case["name"]))


# --- grading ---------------------------------------------------------------------

def test_accepted_json_through_the_console_script(isolated):
    """The installed `judge` script, a correct file: one JSON object, exit 0."""
    proc = subprocess.run([*_judge_command(), "submit", str(CORRECT), "--json", "--device", "cpu",
                           "--seed", "4242"],
                          capture_output=True, text=True, cwd=isolated, timeout=300)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    data = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    _check_json_shape(data)
    assert data["verdict"] == "accepted"
    assert data["submission"] == str(CORRECT)
    assert data["seed"] == 4242
    assert data["device"] == "cpu"
    assert data["latency_ms"] is None
    statuses = {c["name"]: c["status"] for c in data["cases"]}
    assert set(statuses.values()) == {"accepted", "skipped"}
    for name in ("max_dimensions", "performance"):
        assert statuses[name] == "skipped"
        case = next(c for c in data["cases"] if c["name"] == name)
        assert "GPU" in case["message"] and case["max_abs_err"] is None
    ran = [c for c in data["cases"] if c["status"] == "accepted"]
    assert len(ran) >= 20
    for case in ran:
        assert case["mismatches"] == 0
        assert case["max_abs_err"] is not None and case["max_abs_err"] >= 0
        assert case["max_rel_err"] is not None
    # the fixed small integer cases are exact
    assert next(c for c in ran if c["name"] == "basic_2x2")["max_abs_err"] == 0.0
    # no secret file was written: the secret came from the environment
    assert not (isolated / "config").exists()


def test_compile_error_json_exits_1(isolated):
    result = _run("submit", SYNTAX_ERROR, "--json", "--device", "cpu", "--seed", "99")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    _check_json_shape(data)
    assert data["verdict"] == "compile_error"
    assert data["seed"] == 99 and data["device"] == "cpu" and data["latency_ms"] is None
    first, *rest = data["cases"]
    assert first["status"] == "compile_error" and "SyntaxError" in first["message"]
    assert all(c["status"] == "not_run" for c in rest)
    assert "SyntaxError" in data["message"]


@pytest.mark.parametrize("as_json", [True, False])
def test_text_no_utf8_writer_accepts_still_reports(isolated, monkeypatch, as_json):
    """solve raises with lone surrogates in its message: both reports print."""
    monkeypatch.setenv("COLUMNS", "100")
    fixture = Path(__file__).parent / "fixtures" / "surrogate_in_message.py"
    result = _run("submit", fixture, "--device", "cpu", "--seed", "7", *(["--json"] if as_json else []))
    assert result.exit_code == 1, result.output
    if as_json:
        data = json.loads(result.stdout)
        assert data["verdict"] == "runtime_error" and "\\ud800" in data["message"]
    else:
        assert "RUNTIME ERROR" in result.stdout.upper()


def test_wrong_answer_human_output(isolated, monkeypatch):
    """No --json: a table of cases, the first failure explained, the verdict in words."""
    monkeypatch.setenv("COLUMNS", "100")  # rich's width off a terminal; fixed, whatever CI sets
    result = _run("submit", TF32, "--device", "cpu", "--seed", "7", "--stop-on-wrong-answer")
    assert result.exit_code == 1, result.output
    out = result.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(out)
    assert "WRONG ANSWER" in out
    assert "seed 7" in out and "policy fp32" in out
    # the case table: header and one row per case
    assert "case" in out and "M×N×K" in out
    for name, shape in (("example", "2×2×2"), ("basic_2x2", "2×2×2"), ("small_square", "4×4×4"),
                        ("performance", "8192×6144×4096")):
        row = next((line for line in out.splitlines() if line.strip().startswith(name + " ")), None)
        assert row is not None and shape in row, name
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "AC" in lines["example"].split()
    assert "WA" in lines["small_square"].split()
    assert "not run" in lines["medium_rectangular"]
    assert "First failing case: small_square" in out


def test_human_output_shows_the_files_control_characters_written_out(isolated, monkeypatch):
    """The file's output and error message reach the grader's terminal as text:
    its escape sequences had cleared the table and drawn a verdict of their own."""
    monkeypatch.setenv("COLUMNS", "120")
    path = ROOT / "tests" / "fixtures" / "escape_sequences_in_output.py"
    result = _run("submit", str(path), "--challenge", "relu", "--device", "cpu", "--no-timing")
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "RUNTIME ERROR" in out
    assert "\x1b[2J" not in out and "\x1b]4;1" not in out
    assert "\\x1b[2J" in out  # written out, visible


# --- the seed ------------------------------------------------------------------------

def test_same_seed_and_secret_reproduce_the_case_data(isolated, monkeypatch):
    """What --seed promises: the grader derives the same trial seeds, hence
    bit-identical inputs (and so identical errors for a deterministic kernel),
    from the same run seed and secret; another seed or secret changes them."""
    mm = challenges.load("matrix_multiplication")
    NAMES = ("small_square", "single_element", "large_magnitudes")

    def data(seed: int) -> list[bytes]:
        run = _Run(mm, CORRECT, "cpu", GradeOptions(device="cpu", seed=seed))
        assert run.seed == seed
        out = []
        for name in NAMES:
            case = mm.case(name)
            plan = cases.input_plan(mm, case)
            for s in run.seeds(case):
                for t in cases.make_inputs(plan, s, "cpu").values():
                    out.append(t.numpy().tobytes())
        return out

    first = data(2024)
    assert len(first) == 2 * sum(mm.trials(mm.case(n)) for n in NAMES) > 2 * len(NAMES)
    assert data(2024) == first
    assert data(2025) != first
    monkeypatch.setenv("JUDGE_SECRET", "another-secret")
    assert data(2024) != first


def test_options_reach_the_grader(isolated, monkeypatch):
    """Every option of `submit` lands in GradeOptions (no grading done)."""
    import judge.grader
    from judge.scoring import ScoringPolicy, score

    seen = {}

    def fake_grade(path, options, progress=None):
        seen["path"], seen["options"] = path, options
        return GradeResult(verdict=Verdict.ACCEPTED, message="ok", challenge="matrix_multiplication",
                           submission=str(path), policy="leetgpu", seed=options.seed or 0, device="cpu",
                           device_name="cpu", versions={"python": "3", "torch": "t", "triton": "t"},
                           cases=[], latency_ms=None, timing=None, timing_note=None, performance=None,
                           score=score(ScoringPolicy(), True, None, None), sandbox="none",
                           stdout="", stderr="", started_at="now", duration_s=0.0)

    monkeypatch.setattr(judge.grader, "grade", fake_grade)
    result = _run("submit", CORRECT, "--json", "--seed", "-5", "--device", "cpu", "--policy", "leetgpu",
                  "--stop-on-wrong-answer", "--no-timing", "--case-timeout", "12.5", "--total-timeout", "100",
                  "--idle-timeout", "7", "--workers", "3")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["seed"] == -5  # echoed
    opts = seen["options"]
    assert seen["path"] == CORRECT
    assert (opts.challenge, opts.seed, opts.device, opts.policy) == ("matrix_multiplication", -5, "cpu", "leetgpu")
    assert opts.stop_on_wrong_answer and not opts.time
    assert (opts.limits.case_timeout_s, opts.limits.total_timeout_s) == (12.5, 100)
    assert opts.limits.idle_timeout_s == 7
    assert opts.workers == 3

    result = _run("submit", CORRECT, "--json")
    assert result.exit_code == 0
    opts = seen["options"]
    assert (opts.seed, opts.device, opts.policy, opts.stop_on_wrong_answer, opts.time) == (None, None, None,
                                                                                          False, True)
    assert (opts.limits.case_timeout_s, opts.limits.total_timeout_s, opts.limits.idle_timeout_s) == (60, 900, 20)
    assert opts.workers is None


def test_human_output_says_when_the_gpu_was_shared(isolated, monkeypatch):
    import judge.grader
    from judge.scoring import ScoringPolicy, score

    def fake_grade(path, options, progress=None):
        return GradeResult(verdict=Verdict.ACCEPTED, message="ok", challenge="matrix_multiplication",
                           submission=str(path), policy="fp32", seed=1, device="cuda", device_name="a GPU",
                           versions={"python": "3", "torch": "t", "triton": "t"}, cases=[], latency_ms=None,
                           timing=None, timing_note="not timed", performance=None,
                           score=score(ScoringPolicy(), True, None, None), sandbox="none", stdout="", stderr="",
                           started_at="now", duration_s=30.0,
                           phase_seconds={"cases": 3.0, "gpu_wait_timing": 0.4, "gpu_paused": 12.2})

    monkeypatch.setattr(judge.grader, "grade", fake_grade)
    result = _run("submit", CORRECT, "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "the GPU was shared: 12.6 s" in " ".join(result.stdout.split()), result.stdout


def test_gpu_lock_by_default_on_a_gpu_and_never_on_the_cpu(isolated, monkeypatch, tmp_path):
    """submit and check take the GPU's lock (judge.gpu_lock) unless told
    `--gpu-lock off`: gradings side by side on one GPU take turns to time."""
    import judge.grader
    import judge.slots
    from judge.errors import UsageError
    seen = []

    def fake_grade(path, options, progress=None):
        seen.append(options)
        raise UsageError("stop here")  # the options are what is checked

    monkeypatch.setattr(judge.grader, "grade", fake_grade)
    monkeypatch.setenv("JUDGE_GPU_LOCKS", str(tmp_path / "locks"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    monkeypatch.setattr(judge.slots, "guess_device", lambda: "cuda")
    for command in ("submit", "check"):
        for extra, wanted in (([], f"{(tmp_path / 'locks').resolve()}#2"), (["--gpu-lock", "off"], None),
                              (["--gpu-lock", str(tmp_path / "mine")], f"{(tmp_path / 'mine').resolve()}#2"),
                              (["--device", "cpu"], None)):
            _run(command, CORRECT, "--json", *extra)
            assert seen.pop().gpu_lock == wanted, (command, extra)
    (tmp_path / "file").write_text("")
    _assert_usage_error(_run("submit", CORRECT, "--gpu-lock", str(tmp_path / "file")), "--gpu-lock")


# --- usage errors ------------------------------------------------------------------------

def _assert_usage_error(result, *needles):
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)  # not an uncaught error
    assert "Traceback" not in result.output
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.lower().startswith("error")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]


USAGE_ERRORS = {
    "missing_file": (["submit", "no/such/file.py", "--device", "cpu"], ["no such file", "file.py"]),
    "missing_file_json": (["submit", "no/such/file.py", "--json"], ["no such file"]),
    "unknown_challenge": (["submit", str(SYNTAX_ERROR), "--challenge", "nope", "--device", "cpu"],
                          ["unknown challenge", "nope"]),
    "bad_device": (["submit", str(SYNTAX_ERROR), "--device", "gpu"], ["--device", "gpu"]),
    "bad_policy": (["submit", str(SYNTAX_ERROR), "--policy", "bf16"], ["--policy", "bf16"]),
    "bad_seed": (["submit", str(SYNTAX_ERROR), "--seed", "abc"], ["--seed"]),
    "negative_case_timeout": (["submit", str(SYNTAX_ERROR), "--case-timeout", "-1"], ["--case-timeout"]),
    "zero_total_timeout": (["submit", str(SYNTAX_ERROR), "--total-timeout", "0"], ["--total-timeout"]),
    "zero_idle_timeout": (["submit", str(SYNTAX_ERROR), "--idle-timeout", "0"], ["--idle-timeout"]),
    "no_path": (["submit"], ["PATH"]),
    "show_unknown": (["show", "nope"], ["unknown challenge", "nope"]),
    "init_unknown": (["init", "nope", "x.py"], ["unknown challenge", "nope"]),
    "init_no_folder": (["init", "relu", "no/such/folder/x.py"], ["cannot write", "x.py"]),
    "submit_a_folder": (["submit", "tests", "--device", "cpu"], ["is a folder", "judge batch"]),
    "check_a_folder": (["check", "tests"], ["is a folder"]),
    "unknown_command": (["frobnicate"], ["frobnicate"]),
}


@pytest.mark.parametrize("args, needles", list(USAGE_ERRORS.values()), ids=list(USAGE_ERRORS))
def test_usage_errors_exit_2_with_one_line(isolated, args, needles):
    _assert_usage_error(_run(*args), *needles)


def test_judge_usage_errors_are_exactly_one_line(isolated):
    for args in (["submit", "missing.py"], ["submit", str(SYNTAX_ERROR), "--challenge", "nope"], ["show", "nope"]):
        result = _run(*args)
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr


@pytest.mark.skipif(HAS_CUDA, reason="needs a machine without CUDA")
def test_cuda_without_a_gpu_is_a_usage_error(isolated):
    _assert_usage_error(_run("submit", SYNTAX_ERROR, "--device", "cuda", "--json"), "CUDA")


def test_usage_error_through_the_console_script(isolated):
    proc = subprocess.run([*_judge_command(), "show", "nope"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown challenge 'nope' (available: ")
    assert "matrix_multiplication" in lines[0] and "vector_addition" in lines[0]


# --- challenges, show, init ---------------------------------------------------------------

def test_challenges_lists_matrix_multiplication():
    result = _run("challenges")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if line.startswith("matrix_multiplication"))
    assert "Matrix Multiplication" in line and "8192×6144×4096" in line


def test_challenges_with_no_challenges_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGE_CHALLENGES_DIR", str(tmp_path))
    _assert_usage_error(_run("challenges"), "no challenges found")


def test_show_prints_the_statement():
    result = _run("show", "matrix_multiplication")
    assert result.exit_code == 0, result.output
    assert "solve(a, b, c, M" in result.stdout
    statement = challenges.load("matrix_multiplication").statement().strip()
    assert result.stdout.startswith(statement)
    # then the signature and the policies, from challenge.toml
    assert "fp32 (default)" in result.stdout and "leetgpu" in result.stdout and "tf32" in result.stdout


def _solve_params(source: str) -> list[str]:
    tree = ast.parse(source)
    solve = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solve")
    return [a.arg for a in solve.args.args]


def test_init_writes_the_starter_and_refuses_to_overwrite(tmp_path):
    target = tmp_path / "mine.py"
    result = _run("init", "matrix_multiplication", target)
    assert result.exit_code == 0, result.output
    assert str(target) in result.stdout and "judge submit" in result.stdout
    text = target.read_text()
    assert text == "# challenge: matrix_multiplication\n" + challenges.load("matrix_multiplication").starter()
    assert _solve_params(text) == ["a", "b", "c", "M", "N", "K"]
    compile(text, str(target), "exec")

    target.write_text("# my work\n")
    before = target.stat()
    result = _run("init", "matrix_multiplication", target)
    _assert_usage_error(result, "already exists")
    assert target.read_text() == "# my work\n"
    assert target.stat().st_mtime_ns == before.st_mtime_ns


def test_a_starter_names_its_challenge(tmp_path):
    """`judge init relu x.py` then `judge submit x.py` graded it as matrix
    multiplication (invalid_submission) and `judge check` offered the
    product's signature as the fix: the starter's first line names it."""
    target = tmp_path / "mine.py"
    assert _run("init", "relu", target).exit_code == 0
    assert challenges.for_file(target) == "relu"
    other = tmp_path / "other.py"
    other.write_text("'''doc'''\n# challenge: vector_addition\n")
    assert challenges.for_file(other) == "vector_addition"
    other.write_text("\n" * 6 + "# challenge: vector_addition\n")  # only among the first lines
    assert challenges.for_file(other) is None


def test_a_file_graded_as_the_default_challenge_is_told_how_to_name_its_own(isolated, monkeypatch):
    import judge.grader
    from judge.scoring import ScoringPolicy, score

    def fake_grade(path, options, progress=None):
        return GradeResult(verdict=Verdict.INVALID_SUBMISSION, message="solve(x, y, n) cannot be called",
                           challenge=options.challenge, submission=str(path), policy="fp32", seed=1, device="cpu",
                           device_name="CPU", versions={"python": "3", "torch": "t", "triton": "t"}, cases=[],
                           latency_ms=None, timing=None, timing_note=None, performance=None,
                           score=score(ScoringPolicy(), False, None, None), sandbox="none", stdout="", stderr="",
                           started_at="now", duration_s=1.0, phase_seconds={})

    monkeypatch.setattr(judge.grader, "grade", fake_grade)
    mine = isolated / "mine.py"
    mine.write_text("def solve(x, y, n):\n    pass\n")
    result = _run("submit", mine, "--device", "cpu")
    assert result.exit_code == 1 and "--challenge NAME" in result.stderr
    result = _run("submit", mine, "--device", "cpu", "--challenge", "matrix_multiplication")
    assert "--challenge NAME" not in result.stderr


def test_init_defaults_to_solution_py(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _run("init", "matrix_multiplication")
    assert result.exit_code == 0, result.output
    assert _solve_params((tmp_path / "solution.py").read_text()) == ["a", "b", "c", "M", "N", "K"]


def test_the_starter_file_itself_is_valid_python():
    starter = ROOT / "challenges" / "matrix_multiplication" / "starter.py"
    assert _solve_params(starter.read_text()) == ["a", "b", "c", "M", "N", "K"]


# --- help ------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--help"], ["-h"], ["submit", "--help"]])
def test_help_mentions_the_main_options(args):
    result = _run(*args)
    assert result.exit_code == 0, result.output
    for option in ("--json", "--seed", "--device", "--policy"):
        assert option in result.stdout, (args, option)


def test_group_help_lists_the_commands():
    out = _run("--help").stdout
    for command in ("challenges", "show", "init", "submit"):
        assert command in out


def test_help_and_version_through_the_module(isolated):
    env = {**os.environ}
    proc = subprocess.run([sys.executable, "-m", "judge.cli", "submit", "--help"], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0 and "--stop-on-wrong-answer" in proc.stdout
    proc = subprocess.run([*_judge_command(), "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "judge" in proc.stdout


def test_ctrl_c_exits_130_not_as_a_verdict(isolated, monkeypatch):
    """Ctrl-C during `judge submit --json` printed "Aborted!" and exited 1,
    the code of a verdict other than accepted."""
    import judge.grader

    def interrupted(path, options, progress=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(judge.grader, "grade", interrupted)
    result = _run("submit", CORRECT, "--device", "cpu", "--json")
    assert result.exit_code == 130 and result.stdout == "" and "interrupted" in result.stderr
