"""Adding a folder is all it takes: two tiny challenges written into a
temporary folder (one float32 with an out argument, one int32 updated in
place) are listed, shown and graded, with no change to the engine."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge import challenge as challenges
from judge.cli import main

SCALE_TOML = """
name = "scale_by_two"
title = "Scale by Two"
reference = "reference.py:reference"
baselines = "reference.py:baselines"
signature = [
  { name = "x", role = "in", shape = ["n"] },
  { name = "y", role = "out", shape = ["n"] },
  { name = "n", role = "dim" },
]
[constraints]
n = [1, 1000000]
[work]
bytes = "8 * n"
[tolerance]
default_policy = "leetgpu"
[tolerance.policies.leetgpu]
summary = "1e-5 elementwise"
checkers = [{ kind = "allclose", atol = 1e-5, rtol = 1e-5 }]
[tolerance.policies.exact]
checkers = [{ kind = "exact" }]
[example]
name = "example"
dims = { n = 3 }
inputs.x = { kind = "values", values = [1, -2, 3.5] }
[[functional]]
name = "one"
dims = { n = 1 }
distribution = { kind = "uniform", low = -1, high = 1 }
[[functional]]
name = "odd"
dims = { n = 1001 }
distribution = { kind = "normal" }
[performance]
name = "performance"
dims = { n = 1000000 }
distribution = { kind = "uniform", low = -1, high = 1 }
"""

SCALE_REFERENCE = """
def reference(inputs):
    return {"y": 2 * inputs["x"].double()}


def baselines(inputs):
    import torch
    x = inputs["x"]
    y = torch.empty_like(x)
    return {"torch": lambda: torch.mul(x, 2, out=y)}
"""

INCREMENT_TOML = """
name = "increment_in_place"
title = "Increment in Place"
reference = "reference.py:reference"
signature = [
  { name = "data", role = "inout", shape = ["rows", "cols + 0"], dtype = "int32" },
  { name = "rows", role = "dim" },
  { name = "cols", role = "dim" },
]
[constraints]
rows = [1, 4096]
cols = [1, 4096]
relations = ["rows * cols <= 1 << 22"]
[tolerance]
default_policy = "exact"
[tolerance.policies.exact]
checkers = [{ kind = "exact" }]
[example]
name = "example"
dims = { rows = 2, cols = 2 }
inputs.data = { kind = "values", values = [[1, 2], [3, 4]] }
[[functional]]
name = "ramp"
dims = { rows = 7, cols = 33 }
distribution = { kind = "arange", start = -100, step = 3 }
[[functional]]
name = "random"
dims = { rows = 65, cols = 17 }
distribution = { kind = "randint", low = -1000, high = 1000 }
[performance]
name = "performance"
dims = { rows = 2048, cols = 2048 }
distribution = { kind = "randint", low = -1000, high = 1000 }
"""

INCREMENT_REFERENCE = """
def reference(inputs):
    return {"data": inputs["data"] + 1}
"""

SCALE_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, y_ptr, n, FACTOR: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)


def solve(x, y, n):
    scale[(triton.cdiv(n, 256),)](x, y, n, FACTOR={factor}, BLOCK=256)
"""

INCREMENT_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def bump(p, total, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    {body}


def solve(data, rows, cols):
    bump[(triton.cdiv(rows * cols, 64),)](data, rows * cols, BLOCK=64)
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    root = tmp_path / "challenges"
    for name, toml, ref in (("scale_by_two", SCALE_TOML, SCALE_REFERENCE),
                            ("increment_in_place", INCREMENT_TOML, INCREMENT_REFERENCE)):
        (root / name).mkdir(parents=True)
        (root / name / "challenge.toml").write_text(toml)
        (root / name / "reference.py").write_text(ref)
        (root / name / "statement.md").write_text(f"# {name}\n\nA tiny challenge of the tests.\n")
        (root / name / "starter.py").write_text("def solve(*args):\n    pass\n")
    monkeypatch.setenv("JUDGE_CHALLENGES_DIR", str(root))
    monkeypatch.setenv("JUDGE_SECRET", "generic-challenge-tests")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="judge")


def _submit(path: Path, challenge: str, *extra) -> dict:
    result = _run("submit", path, "--challenge", challenge, "--device", "cpu", "--json", "--seed", 7, *extra)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_a_new_folder_is_listed_and_shown(folder):
    assert challenges.available() == ["increment_in_place", "scale_by_two"]
    listing = _run("challenges")
    assert listing.exit_code == 0
    assert "scale_by_two" in listing.output and "solve(x, y, n)" in listing.output
    assert "increment_in_place" in listing.output and "solve(data, rows, cols)" in listing.output
    shown = _run("show", "scale_by_two")
    assert shown.exit_code == 0 and "A tiny challenge" in shown.output and "leetgpu (default)" in shown.output
    assert _run("init", "scale_by_two", folder / "mine.py").exit_code == 0


def test_a_new_float_challenge_is_graded(folder):
    right = folder / "right.py"
    right.write_text(textwrap.dedent(SCALE_KERNEL.format(factor=2.0)))
    wrong = folder / "wrong.py"
    wrong.write_text(textwrap.dedent(SCALE_KERNEL.format(factor=2.001)))
    good = _submit(right, "scale_by_two")
    assert good["verdict"] == "accepted", good["message"]
    assert good["policy"] == "leetgpu"
    assert [c["name"] for c in good["cases"]] == ["example", "one", "odd", "performance"]
    assert good["cases"][-1]["status"] == "skipped"  # above the interpreter's default cap
    assert _submit(right, "scale_by_two", "--policy", "exact")["verdict"] == "accepted"
    bad = _submit(wrong, "scale_by_two")
    assert bad["verdict"] == "wrong_answer"
    assert bad["cases"][0]["first_mismatches"][0]["expected"] == 2.0
    assert _run("submit", right, "--challenge", "scale_by_two", "--policy", "fp32").exit_code == 2


def test_a_new_in_place_integer_challenge_is_graded(folder):
    right = folder / "right.py"
    right.write_text(textwrap.dedent(INCREMENT_KERNEL.format(
        body="mask = offs < total\n    tl.store(p + offs, tl.load(p + offs, mask=mask) + 1, mask=mask)")))
    unmasked = folder / "unmasked.py"
    unmasked.write_text(textwrap.dedent(INCREMENT_KERNEL.format(
        body="tl.store(p + offs, tl.load(p + offs) + 1)")))
    lazy = folder / "lazy.py"
    lazy.write_text(textwrap.dedent(INCREMENT_KERNEL.format(
        body="mask = offs < 0\n    tl.store(p + offs, tl.load(p + offs, mask=mask), mask=mask)")))
    assert _submit(right, "increment_in_place")["verdict"] == "accepted"
    # Writing past the end changes the guard band: a rule, not a wrong answer.
    out = _submit(unmasked, "increment_in_place")
    assert out["verdict"] == "rejected" and "outside" in out["message"]
    # Leaving the data as it was is wrong: the in-place argument is judged by its final value.
    assert _submit(lazy, "increment_in_place")["verdict"] == "wrong_answer"


def test_a_broken_folder_is_reported_not_fatal(folder):
    broken = Path(challenges.challenges_dir()) / "broken"
    broken.mkdir()
    (broken / "challenge.toml").write_text('name = "broken"\ntitle = "x"\n')
    listing = _run("challenges")
    assert listing.exit_code == 0 and "scale_by_two" in listing.output
    assert "broken" in listing.output and "cannot be loaded" in listing.output
    shown = _run("show", "broken")
    assert shown.exit_code == 2 and "not a valid challenge" in shown.stderr


def test_prestarted_workers_grade_the_same(folder):
    """A batch starts the next file's workers early; the result is the same."""
    from judge.grader import GradeOptions, grade, prestart
    right = folder / "right.py"
    right.write_text(textwrap.dedent(SCALE_KERNEL.format(factor=2.0)))
    options = GradeOptions(challenge="scale_by_two", device="cpu", seed=7, workers=2)
    early = prestart(right, options)
    assert len(early) == 2 and all(w.proc is not None and w.proc.poll() is None for w in early)
    result = grade(right, options, prestarted=early)
    assert result.verdict.value == "accepted", result.message
    assert all(w.proc.poll() is not None for w in early)  # used, then stopped


def test_a_grading_tells_its_progress(folder):
    """`judge submit`'s status line: what the grading does now, ending with
    every case counted."""
    from judge.grader import GradeOptions, grade
    right = folder / "right.py"
    right.write_text(textwrap.dedent(SCALE_KERNEL.format(factor=2.0)))
    said: list[str] = []
    result = grade(right, GradeOptions(challenge="scale_by_two", device="cpu", seed=7, workers=2), progress=said.append)
    assert result.verdict.value == "accepted", result.message
    total = len(result.cases)
    assert said[0] == "loading the file and running the cases"
    assert [f"{n} of {total} cases run" for n in range(1, total + 1)] == said[1:]
