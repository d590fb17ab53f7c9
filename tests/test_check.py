"""`judge check`: LeetGPU's rules read from the source, and an answer in
LeetGPU's terms that differs between a T4 and an H100 exactly where TF32
makes the difference."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from judge import precheck, source_scan
from judge.cli import main
from tests.helpers import ROOT, SUBMISSIONS

NAMES = ["a", "b", "c", "M", "N", "K"]
KERNEL = """
import triton
import triton.language as tl


@triton.jit
def k(a_ptr):
    pass

"""


def _rules(body: str) -> list[str]:
    return [f.rule for f in precheck.check(KERNEL + textwrap.dedent(body), NAMES) if f.blocking]


def test_a_clean_file_has_no_blocking_finding():
    for path in (SUBMISSIONS / "correct").glob("*.py"):
        assert [f for f in precheck.check(path.read_text(), NAMES) if f.blocking] == [], path


@pytest.mark.parametrize("body, rule", [
    ("def solve(A, B, C, M, N, K):\n    pass\n", "signature"),
    ("def solve(a, b, c, N, M, K):\n    pass\n", "signature"),
    ("def solve(a, b, c):\n    pass\n", "signature"),
    ("import numpy as np\ndef solve(a, b, c, M, N, K):\n    pass\n", "imports"),
    ("import cupy\ndef solve(a, b, c, M, N, K):\n    pass\n", "imports"),
    ("from ctypes import CDLL\ndef solve(a, b, c, M, N, K):\n    pass\n", "imports"),
    ("from .helpers import tile\ndef solve(a, b, c, M, N, K):\n    pass\n", "self_contained"),
    ("import my_kernels\ndef solve(a, b, c, M, N, K):\n    pass\n", "self_contained"),
    ("import torch\ndef solve(a, b, c, M, N, K):\n    c.copy_(torch.matmul(a, b))\n", "torch_compute"),
    ("def solve(a, b, c, M, N, K):\n    c.copy_(a @ b)\n", "torch_compute"),
    ("import torch.nn.functional as F\ndef solve(a, b, c, M, N, K):\n    c.copy_(F.linear(a, b.t()))\n",
     "torch_compute"),
    ("def solve(a, b, c, M, N, K):\n    c.copy_(a.mm(b))\n", "torch_compute"),
])
def test_each_rule_is_found_with_a_fix(body, rule):
    found = precheck.check(KERNEL + textwrap.dedent(body), NAMES)
    assert rule in [f.rule for f in found if f.blocking], found
    assert all(f.fix for f in found)


def test_allocation_and_launch_code_is_fine():
    assert _rules("import torch\nimport math\ndef solve(a, b, c, M, N, K):\n"
                  "    tmp = torch.empty_like(c)\n    c.zero_()\n    torch.cuda.synchronize()\n"
                  "    k[(math.ceil(M / 16),)](a)\n") == []
    # A constant table built from Python numbers, as torch.tensor builds one (the graded run accepts both).
    assert _rules("import torch\ndef solve(a, b, c, M, N, K):\n"
                  "    table = torch.as_tensor([1.0, 2.0], device=a.device)\n    k[(1,)](table)\n") == []


def test_honest_launch_code_raises_no_rule():
    """Contexts and questions that compute nothing, and math on a shape (an
    honest probe's files had each been told "torch may not do the job")."""
    body = """
    import math
    import torch


    @torch.inference_mode()
    def solve(a, b, c, M, N, K):
        sms = torch.cuda.get_device_properties(a.device).multi_processor_count
        stream = torch.cuda.current_stream()
        with torch.no_grad(), torch.autocast("cuda", enabled=False):
            total = math.prod(a.shape)
            k[(min(sms, total),)](a)
    """
    assert _rules(body) == []


def test_python_habits_are_no_findings():
    """A self-test under `if __name__ == "__main__":` (never run on import),
    a Python list's .sort() and a set's .add(), data moved by torch.cat,
    the allocator's and profiler's housekeeping, and a kernel made by
    calling triton.jit: each had been told it breaks a rule (the twelfth
    session's honest probe), though the graded run accepts all of them."""
    body = """
    import torch

    _seen = set()


    def _body(x_ptr):
        pass


    made = triton.jit(_body)


    def solve(a, b, c, M, N, K):
        blocks = []
        blocks.sort()
        _seen.add(N)
        both = torch.cat([a.reshape(-1), b.reshape(-1)])
        torch.cuda.empty_cache()
        torch.cuda.nvtx.range_push("solve")
        made[(1,)](both)


    if __name__ == "__main__":
        import numpy as np
        print(np.zeros(3))
    """
    assert precheck.check(textwrap.dedent(body).replace("import torch", "import torch\nimport triton", 1),
                          NAMES) == []
    # The same names are still read as tensors where the file binds them so, and numpy outside the block counts.
    assert _rules("import numpy\ndef solve(a, b, c, M, N, K):\n    blocks = a\n    blocks.sort()\n") == \
        ["imports", "torch_compute"]


@pytest.mark.parametrize("source, rule", [
    ("def solve(a, b, c, M, N, K, /):\n    k[(1,)](a)\n", "signature"),  # LeetGPU may pass them by name
    ("def solve(a, b, c, M, N, K):\n    pass\ndef solve(x, y, z, m, n, k):\n    k[(1,)](x)\n", "signature"),
    ("np = __import__('numpy')\ndef solve(a, b, c, M, N, K):\n    k[(1,)](a)\n", "imports"),
    ("__name__ = '__main__'\nif __name__ == '__main__':\n    import numpy\n"
     "def solve(a, b, c, M, N, K):\n    k[(1,)](a)\n", "imports"),
])
def test_what_the_twelfth_probe_hid_from_the_precheck_is_found(source, rule):
    """Positional-only parameters, a second def of solve (the one Python
    keeps), numpy through __import__, and a self-test block that runs at
    import because the file set __name__: each had been said Accepted."""
    assert rule in _rules(source)


def test_a_torch_library_operator_is_refused_with_what_to_do_instead():
    from judge.worker.refusals import gate_refusal
    message = gate_refusal("guard", "torch._C._dispatch_library")
    assert "torch.library" in message and "launch your Triton kernel directly from solve" in message


def test_parameters_of_the_files_own():
    """Extra parameters with defaults are fine and said so without blocking;
    a keyword-only one without a default can never be passed."""
    optional = precheck.check(KERNEL + "def solve(a, b, c, M, N, K, *, block=64):\n    k[(1,)](a)\n", NAMES)
    assert [(f.rule, f.blocking) for f in optional] == [("signature", False)]
    assert "defaults (block)" in optional[0].problem
    extra = precheck.check(KERNEL + "def solve(a, b, c, M, N, K, split=4):\n    k[(1,)](a)\n", NAMES)
    assert [(f.rule, f.blocking) for f in extra] == [("signature", False)]
    needed = precheck.check(KERNEL + "def solve(a, b, c, M, N, K, *, block):\n    k[(1,)](a)\n", NAMES)
    assert [(f.rule, f.blocking) for f in needed] == [("signature", True)]
    assert "keyword-only parameters the challenge never passes: block" in needed[0].problem


def test_no_kernel_at_all():
    found = precheck.check("def solve(a, b, c, M, N, K):\n    pass\n", NAMES)
    assert "triton" in [f.rule for f in found]


def test_source_nested_past_the_parser_is_a_finding_not_a_crash():
    # 100,000 terms: past ast's depth on any stack (a file's 2,963 passed the
    # worker's compile, then crashed the judge's own re-parse for the TF32 note).
    deep = "x = " + "+".join(["1"] * 100_000) + "\n"
    assert [f.rule for f in precheck.check(deep, NAMES)] == ["syntax"]
    assert source_scan.broadcast_sum(deep) is False


def test_the_broadcast_note_names_a_product_kept_in_a_variable():
    """The TF32 of a file with no tl.dot comes from the compiler's rewrite:
    the note said so only for the product written inline in tl.sum."""
    fixtures = ROOT / "tests" / "fixtures"
    assert source_scan.broadcast_sum((fixtures / "broadcast_product_of_expand_dims.py").read_text())
    assert source_scan.broadcast_sum((fixtures / "broadcast_sum_small_k.py").read_text())
    assert not source_scan.broadcast_sum((ROOT / "submissions" / "wrong" / "tf32_default.py").read_text())


def _check(*args) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["check", *map(str, args), "--device", "cpu", "--json", "--seed", "11"],
                                prog_name="judge")
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.slow
def test_tf32_kernel_passes_on_a_t4_and_fails_on_an_h100(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGE_SECRET", "check-tests")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    path = SUBMISSIONS / "wrong" / "tf32_default.py"
    code_t4, t4 = _check(path, "--gpu", "t4")
    assert code_t4 == 0 and t4["leetgpu"]["verdict"] == "accepted", t4["leetgpu"]
    assert "Accepted" in t4["leetgpu"]["text"] and "T4" in t4["leetgpu"]["text"]
    assert "max_dimensions" in t4["leetgpu"]["cases_not_run"]  # too big for the interpreter, and said so
    code_h100, h100 = _check(path, "--gpu", "h100")
    assert code_h100 == 1 and h100["leetgpu"]["verdict"] == "wrong_answer"
    assert "Wrong Answer" in h100["leetgpu"]["text"]
    assert h100["ours"]["verdict"] == "wrong_answer" and "TF32" in h100["ours"]["text"]
    assert h100["estimate"] and "H100" in h100["estimate"]


def test_a_rule_breaker_is_refused_before_it_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGE_SECRET", "check-tests")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    code, out = _check(SUBMISSIONS / "faults" / "wrong_signature.py")
    assert code == 1 and out["leetgpu"]["verdict"] in ("rejected", "invalid_submission")
    assert out["prechecks"] and out["prechecks"][0]["fix"]


def test_a_float32_accurate_sum_failed_by_leetgpus_tolerance_is_said_as_the_datas_chance():
    """A random case LeetGPU's tolerance fails where the fp32 error bound
    passes (cancellation on this run's draw): LeetGPU draws its own data, so
    the answer says "may", and names the policy that passes it; a TF32
    kernel that only the tf32 policy passes keeps "would most likely"."""
    from judge import challenge as challenges
    from judge.check import _leetgpu_answer
    from judge.results import CaseResult

    reduction = challenges.load("reduction")

    class Result:  # what _leetgpu_answer reads of a GradeResult
        def __init__(self, also):
            self.message = ""
            self.cases = [CaseResult(name="example", kind="example", shape="8", dims={"N": 8}, status="accepted"),
                          CaseResult(name="large_random", kind="functional", shape="10000", dims={"N": 10000},
                                     status="wrong_answer", message="1 of 1 elements differ", also=also)]

    hedged = _leetgpu_answer(reduction, Result({"fp32": ("accepted", "")}), "h100", [])
    assert hedged.verdict == "wrong_answer" and "may say" in hedged.text and "fp32" in hedged.text
    firm = _leetgpu_answer(reduction, Result({"tf32": ("accepted", "")}), "h100", [])
    assert "would most likely say: Wrong Answer on case large_random" in firm.text


def test_a_file_that_stalls_a_small_case_is_not_called_accepted(monkeypatch, tmp_path):
    """A file whose own launch the interpreter cannot finish on a small case
    is not judged on CPU by `judge submit`; `judge check` must not answer
    Accepted for it either, in LeetGPU's terms or ours (it had said
    "Accepted" on the example alone)."""
    from tests.helpers import FIXTURES
    monkeypatch.setenv("JUDGE_SECRET", "check-tests")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    code, out = _check(FIXTURES / "stalls_cases_it_cannot_do.py", "--challenge", "vector_addition")
    assert code == 1, out["leetgpu"]
    assert out["leetgpu"]["verdict"] == "unknown" and "not judged here" in out["leetgpu"]["text"]
    assert "Accepted" not in out["leetgpu"]["text"]
    assert out["ours"]["verdict"] == out["result"]["verdict"] == "internal_error"
    assert "not judged on CPU" in out["ours"]["text"]
