"""LeetGPU's challenge folders loaded at run time (judge/leetgpu.py), from a
small fake repository written here in the same layout (our own code: a
minimal ChallengeBase, a vector sum whose signature gives roles, a ReLU and
an in-place int32 increment whose roles are inferred, and two folders that
cannot load). Listing, show, init and grading on CPU."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from judge import cases as case_data
from judge import challenge as challenges
from judge import leetgpu
from judge.cli import main

BASE = '''
class ChallengeBase:
    """Just enough of a base class for the tests' challenges."""

    def __init__(self, name, atol, rtol, num_gpus=1, access_tier="free"):
        self.name = name
        self.atol = atol
        self.rtol = rtol
        self.num_gpus = num_gpus
        self.access_tier = access_tier
'''

VECTOR_SUM = '''
import ctypes

import torch

from core.challenge_base import ChallengeBase


class Challenge(ChallengeBase):
    def __init__(self):
        super().__init__(name="Vector Sum", atol=1e-5, rtol=1e-5, num_gpus=1, access_tier="free")

    def reference_impl(self, a, b, c, N):
        assert a.device.type == "cuda" and c.shape == (N,)
        torch.add(a, b, out=c)

    def get_solve_signature(self):
        return {
            "a": (ctypes.POINTER(ctypes.c_float), "in"),
            "b": (ctypes.POINTER(ctypes.c_float), "in"),
            "c": (ctypes.POINTER(ctypes.c_float), "out"),
            "N": (ctypes.c_int, "in"),
        }

    def generate_example_test(self):
        return {"a": torch.tensor([1.0, 2.0, 3.0], device="cuda"),
                "b": torch.tensor([10.0, 20.0, 30.0], device="cuda"),
                "c": torch.empty(3, device="cuda"), "N": 3}

    def generate_functional_test(self):
        tests = []
        for n in (1, 100, 1023, 5000):
            tests.append({"a": torch.empty(n, device="cuda").uniform_(-5.0, 5.0),
                          "b": torch.randn(n).cuda(),
                          "c": torch.zeros(n, device="cuda"), "N": n})
        return tests

    def generate_performance_test(self):
        n = 50_000_000
        return {"a": torch.rand(n, device="cuda"), "b": torch.rand(n, device="cuda"),
                "c": torch.empty(n, device="cuda"), "N": n}
'''

RELU = '''
import ctypes

import torch

from core.challenge_base import ChallengeBase


class Challenge(ChallengeBase):
    def __init__(self):
        super().__init__(name="Rectifier", atol=1e-6, rtol=1e-6, num_gpus=1, access_tier="free")

    def reference_impl(self, input, output, rows, cols):
        output.copy_(torch.clamp(input, min=0.0))

    def get_solve_signature(self):
        return {"input": ctypes.POINTER(ctypes.c_float), "output": ctypes.POINTER(ctypes.c_float),
                "rows": ctypes.c_int, "cols": ctypes.c_int}

    def _test(self, rows, cols):
        return {"input": torch.randn(rows, cols, device=torch.device("cuda")),
                "output": torch.empty(rows, cols).to("cuda"), "rows": rows, "cols": cols}

    def generate_example_test(self):
        return {"input": torch.tensor([[-1.0, 2.0], [3.0, -4.0]], device="cuda"),
                "output": torch.empty(2, 2, device="cuda"), "rows": 2, "cols": 2}

    def generate_functional_test(self):
        return [self._test(1, 1), self._test(3, 70), self._test(64, 65)]

    def generate_performance_test(self):
        return self._test(8192, 8192)
'''

INCREMENT = '''
import ctypes

import torch

from core.challenge_base import ChallengeBase


class Challenge(ChallengeBase):
    def __init__(self):
        super().__init__(name="Bump Counters", atol=0, rtol=0)

    def reference_impl(self, counts, N):
        counts += 1

    def get_solve_signature(self):
        return {"counts": ctypes.POINTER(ctypes.c_int), "N": ctypes.c_int}

    def generate_example_test(self):
        return {"counts": torch.tensor([5, 0, -3], dtype=torch.int32, device="cuda"), "N": 3}

    def generate_functional_test(self):
        return [{"counts": torch.randint(-100, 100, (n,), dtype=torch.int32, device="cuda"), "N": n}
                for n in (4, 300)]

    def generate_performance_test(self):
        return {"counts": torch.zeros(1 << 24, dtype=torch.int32, device="cuda"), "N": 1 << 24}
'''

BROKEN_IMPORT = '''
from core.challenge_base import ChallengeBase

helper = undefined_name + 1
'''

FLOAT_SCALAR = RELU.replace('"cols": ctypes.c_int}', '"cols": ctypes.c_int, "alpha": ctypes.c_float}')

STATEMENT = "<h2>Rectifier</h2>\n<p>Write a <b>program</b> that sets each negative value to zero &amp; keeps the rest.</p>\n"

VECTOR_SUM_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(a_ptr + offs, mask=mask)
    y = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, x + y{extra}, mask=mask)


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, N: int):
    add_kernel[(triton.cdiv(N, 256),)](a, b, c, N, BLOCK=256)
'''

RELU_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def solve(input, output, rows, cols):
    relu_kernel[(triton.cdiv(rows * cols, 512),)](input, output, rows * cols, BLOCK=512)
'''


@pytest.fixture
def repo(tmp_path, monkeypatch):
    root = tmp_path / "leetgpu-challenges"
    (root / "challenges" / "core").mkdir(parents=True)
    (root / "challenges" / "core" / "__init__.py").write_text("")
    (root / "challenges" / "core" / "challenge_base.py").write_text(BASE)
    for group, folder, code in (("easy", "1_vector_sum", VECTOR_SUM), ("easy", "2_rectifier", RELU),
                                ("medium", "7_bump_counters", INCREMENT), ("easy", "9_broken", BROKEN_IMPORT),
                                ("hard", "12_leaky", FLOAT_SCALAR)):
        path = root / "challenges" / group / folder
        (path / "starter").mkdir(parents=True)
        (path / "challenge.py").write_text(code)
        (path / "challenge.html").write_text(STATEMENT)
        (path / "starter" / "starter.triton.py").write_text(f"# starter of {folder}\ndef solve():\n    pass\n")
    monkeypatch.setenv("JUDGE_SECRET", "leetgpu-repo-tests")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv(leetgpu.ENV, "")  # set below by --leetgpu-repo; restored afterwards
    return root


def _run(repo: Path, *args):
    return CliRunner().invoke(main, ["--leetgpu-repo", str(repo), *[str(a) for a in args]], prog_name="judge")


def _submit(repo: Path, path: Path, challenge: str) -> dict:
    result = _run(repo, "submit", path, "--challenge", challenge, "--device", "cpu", "--json", "--seed", 11)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_listing_names_every_folder_and_says_why_one_fails(repo):
    listing = _run(repo, "challenges")
    assert listing.exit_code == 0, listing.output
    lines = {line.split()[0]: line for line in listing.output.splitlines() if line.strip()}
    assert "matrix_multiplication" in lines  # ours are still there
    assert "solve(a, b, c, N)" in lines["leetgpu/vector_sum"] and "4 functional cases" in lines["leetgpu/vector_sum"]
    assert "Rectifier" in lines["leetgpu/rectifier"]
    assert "Bump Counters" in lines["leetgpu/bump_counters"]
    broken = lines["leetgpu/broken"]
    assert "cannot be loaded" in broken and "9_broken" in broken and "NameError" in broken \
        and "undefined_name" in broken
    leaky = lines["leetgpu/leaky"]
    assert "cannot be loaded" in leaky and "'alpha'" in leaky and "c_float" in leaky
    bad = CliRunner().invoke(main, ["--leetgpu-repo", str(repo / "nowhere"), "challenges"])
    assert bad.exit_code == 2 and "not a clone" in bad.output


def test_show_init_and_inferred_roles(repo, tmp_path):
    shown = _run(repo, "show", "leetgpu/rectifier")
    assert shown.exit_code == 0, shown.output
    assert "Write a program that sets each negative value to zero & keeps the rest." in shown.output
    assert "<p>" not in shown.output
    assert "input        in" in shown.output and "output       out" in shown.output
    assert "[rows × cols]" in shown.output
    assert "leetgpu (default)" in shown.output and "1e-06" in shown.output
    target = tmp_path / "mine.py"
    assert _run(repo, "init", "leetgpu/rectifier", target).exit_code == 0
    assert target.read_text().startswith("# challenge: leetgpu/rectifier\n# starter of 2_rectifier")
    assert challenges.for_file(repo / "challenges" / "easy" / "2_rectifier" / "mine.py") == "leetgpu/rectifier"

    bump = challenges.load("leetgpu/bump_counters")
    assert [(a.name, a.role) for a in bump.signature] == [("counts", "inout"), ("N", "dim")]
    assert bump.signature[0].dtype == "int32"
    vec = challenges.load("leetgpu/vector_sum")
    assert [(a.name, a.role) for a in vec.signature] == [("a", "in"), ("b", "in"), ("c", "out"), ("N", "dim")]
    assert [c.name for c in vec.functional] == ["test_1", "test_2", "test_3", "test_4"]
    assert vec.fits_cpu(vec.performance)  # 150M elements: skipped on CPU
    # Judge and worker rebuild the same tensors from the plan and seed; the
    # truth comes from the folder's reference_impl.
    plan = case_data.input_plan(vec, vec.functional[2])
    first, again = case_data.make_inputs(plan, 5, "cpu"), case_data.make_inputs(plan, 5, "cpu")
    assert first["a"].shape == (1023,) and torch.equal(first["a"], again["a"])
    assert not torch.equal(first["a"], case_data.make_inputs(plan, 6, "cpu")["a"])
    truth = vec.reference_fn()(first)
    assert torch.equal(truth["c"], (first["a"] + first["b"]).double())
    inc = challenges.load("leetgpu/bump_counters")
    plan = case_data.input_plan(inc, inc.example)
    made = case_data.make_inputs(plan, 1, "cpu")
    assert inc.reference_fn()(made)["counts"].tolist() == [6, 1, -2]


def test_correct_and_wrong_submissions_are_graded(repo, tmp_path):
    right = tmp_path / "right.py"
    right.write_text(textwrap.dedent(VECTOR_SUM_KERNEL.format(extra="")))
    wrong = tmp_path / "wrong.py"
    wrong.write_text(textwrap.dedent(VECTOR_SUM_KERNEL.format(extra=" + 0.001")))
    good = _submit(repo, right, "leetgpu/vector_sum")
    assert good["verdict"] == "accepted", good["message"]
    assert good["policy"] == "leetgpu" and good["challenge"] == "leetgpu/vector_sum"
    assert [c["status"] for c in good["cases"]] == ["accepted"] * 5 + ["skipped"]
    bad = _submit(repo, wrong, "leetgpu/vector_sum")
    assert bad["verdict"] == "wrong_answer"
    assert bad["cases"][0]["first_mismatches"][0]["expected"] == 11.0
    relu = tmp_path / "relu.py"
    relu.write_text(textwrap.dedent(RELU_KERNEL))
    assert _submit(repo, relu, "leetgpu/rectifier")["verdict"] == "accepted"
