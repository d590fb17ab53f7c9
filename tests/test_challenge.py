"""The challenge definition (judge/challenge.py and challenges/matrix_multiplication):
LeetGPU's cases in LeetGPU's order, our own edge cases, validation of the
toml, the CPU cap, trial counts, and adding a challenge as one folder."""

from __future__ import annotations

import copy
import math
import shutil
import tomllib

import pydantic
import pytest

from judge import challenge as challenges
from judge.errors import UsageError

NAME = "matrix_multiplication"
FOLDER = challenges.challenges_dir() / NAME
MM = challenges.load(NAME)
LIMIT = 8192


def _raw() -> dict:
    with (FOLDER / "challenge.toml").open("rb") as fh:
        return tomllib.load(fh)


def _dims(case) -> tuple[int, int, int]:
    return case.dims["M"], case.dims["N"], case.dims["K"]


def _dist(case, arg: str):
    return case.inputs.get(arg, case.distribution)


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % p for p in range(2, math.isqrt(n) + 1))


# --- the challenge as LeetGPU states it --------------------------------------------------

# (name, (M, N, K), inputs): inputs is ("values", a, b), ("identity",), ("zeros",) or ("uniform", low, high)
LEETGPU = [
    ("basic_2x2", (2, 2, 2), ("values", [[1, 2], [3, 4]], [[5, 6], [7, 8]])),
    ("basic_1x3_3x1", (1, 3, 1), ("values", [[1, 2, 3]], [[4], [5], [6]])),
    ("identity_matrix", (3, 3, 3), ("identity",)),
    ("zero_matrix", (2, 2, 2), ("zeros",)),
    ("rectangular_matrices", (2, 3, 1), ("values", [[1, 2, 3], [4, 5, 6]], [[1], [2], [3]])),
    ("small_square", (4, 4, 4), ("uniform", -10, 10)),
    ("medium_rectangular", (8, 6, 10), ("uniform", -10, 10)),
    ("large_rectangular", (16, 12, 20), ("uniform", -10, 10)),
    ("tall_matrix", (32, 8, 16), ("uniform", -10, 10)),
    ("wide_matrix", (8, 16, 32), ("uniform", -10, 10)),
    ("single_element", (1, 1, 1), ("uniform", -1, 1)),
    ("single_row", (1, 5, 3), ("uniform", -1, 1)),
    ("single_column", (5, 3, 1), ("uniform", -1, 1)),
    ("max_dimensions", (8192, 6144, 4096), ("uniform", -1, 1)),
]


def test_challenge_loads_with_its_signature():
    assert MM.name == NAME and MM.folder == FOLDER
    assert [(a.name, a.role, a.shape) for a in MM.signature] == [
        ("a", "in", ["M", "N"]), ("b", "in", ["N", "K"]), ("c", "out", ["M", "K"]),
        ("M", "dim", []), ("N", "dim", []), ("K", "dim", [])]
    assert all(a.dtype == "float32" for a in MM.signature if a.is_tensor)
    assert MM.flop_count(MM.performance) == 2 * 8192 * 6144 * 4096
    assert MM.shape_label(MM.performance) == "8192×6144×4096"
    assert NAME in challenges.available()


def test_constraints_are_1_to_8192():
    assert dict(MM.constraints) == {"M": (1, LIMIT), "N": (1, LIMIT), "K": (1, LIMIT)}


def test_every_case_satisfies_the_constraints():
    for case in MM.all_cases():
        assert set(case.dims) == {"M", "N", "K"}, case.name
        for dim, value in case.dims.items():
            lo, hi = MM.constraints[dim]
            assert lo <= value <= hi, (case.name, dim, value)


def test_case_names_are_unique():
    names = [c.name for c in MM.all_cases()]
    assert len(names) == len(set(names))


def test_example_is_leetgpus_2x2():
    ex = MM.example
    assert _dims(ex) == (2, 2, 2)
    assert _dist(ex, "a").values == [[1, 2], [3, 4]] and _dist(ex, "b").values == [[5, 6], [7, 8]]


def test_functional_cases_start_with_leetgpus_list_in_order():
    head = MM.functional[:len(LEETGPU)]
    assert [c.name for c in head] == [name for name, _, _ in LEETGPU]
    for case, (name, dims, spec) in zip(head, LEETGPU):
        assert _dims(case) == dims, name
        a, b = _dist(case, "a"), _dist(case, "b")
        kind = spec[0]
        assert a.kind == b.kind == kind, name
        if kind == "values":
            assert a.values == spec[1] and b.values == spec[2], name
        elif kind == "uniform":
            assert (a.low, a.high) == (b.low, b.high) == spec[1:], name


def test_performance_case_is_leetgpus():
    perf = MM.performance
    assert _dims(perf) == (8192, 6144, 4096)
    for arg in ("a", "b"):
        d = _dist(perf, arg)
        assert d.kind == "uniform" and (d.low, d.high) == (-10, 10)


# --- our own cases ---------------------------------------------------------------------

OURS = MM.functional[len(LEETGPU):]


def test_at_least_15_cases_of_our_own():
    assert len(OURS) >= 15
    assert not {c.name for c in OURS} & {name for name, _, _ in LEETGPU}


def test_our_cases_cover_the_edge_shapes():
    dims = [_dims(c) for c in OURS]
    outputs = [(m, k) for m, _, k in dims]  # C is M×K
    assert any(all(_is_prime(d) for d in ds) for ds in dims), "a prime in every dimension"
    for block in (16, 32, 64, 128):
        assert any(d > block and d % block for ds in dims for d in ds), f"a dimension past, not a multiple of, {block}"
    assert any(all(d % 16 for d in ds) for ds in dims), "no dimension a multiple of 16"
    assert (1, LIMIT) in outputs, "a 1×8192 output"
    assert (LIMIT, 1) in outputs, "an 8192×1 output"
    assert any(k == 1 for _, _, k in dims), "K = 1"
    assert any(n == 1 for _, n, _ in dims), "N = 1"
    assert any(m >= 1000 and 1 < k <= 16 for m, _, k in dims), "tall-skinny output"
    assert any(k >= 1000 and 1 < m <= 16 for m, _, k in dims), "wide-flat output"
    assert any(n >= 4096 for _, n, _ in dims), "a long accumulation"
    flat = {d for ds in dims for d in ds}
    assert {129, 257} <= flat, "sizes just above block sizes"


def test_our_cases_cover_the_value_distributions():
    dists = [_dist(c, arg) for c in OURS for arg in ("a", "b")]

    def big(d) -> bool:
        if d.kind == "uniform":
            return max(abs(d.low), abs(d.high)) >= 1e3
        if d.kind == "signed_log_uniform":
            return d.max_exp >= 3
        return False

    assert any(big(d) for d in dists), "a large-magnitude distribution"
    assert any(d.kind == "signed_log_uniform" and d.max_exp - d.min_exp >= 6 for d in dists), "many decades"
    assert any(d.kind == "normal" for d in dists)


def test_most_of_our_cases_run_on_cpu():
    ours_on_cpu = [c for c in OURS if MM.fits_cpu(c) is None]
    assert len(ours_on_cpu) >= 12
    # the edge shapes the interpreter can check are among them
    assert {"output_row_1x8192", "output_column_8192x1", "above_block_sizes", "primes_small"} <= \
        {c.name for c in ours_on_cpu}


# --- CPU cap and trials ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["example", "basic_2x2", "single_element", "small_square", "wide_matrix",
                                  "primes_small", "square_257"])
def test_small_cases_fit_on_cpu(name):
    assert MM.fits_cpu(MM.case(name)) is None


@pytest.mark.parametrize("name", ["max_dimensions", "performance", "mixed_sizes_gpu", "odd_large_gpu"])
def test_large_cases_are_skipped_on_cpu_with_a_reason(name):
    reason = MM.fits_cpu(MM.case(name))
    assert reason and "GPU" in reason and "skipped" in reason


def test_cpu_cap_checks_output_size_and_work_separately():
    limits = MM.cpu_limits
    assert MM.fits_cpu(MM.case("output_column_8192x1")) is None  # 8192 outputs, little work
    for case in MM.all_cases():
        m, n, k = _dims(case)
        fits = m * k <= limits.max_output_elements and m * n * k <= limits.max_work
        assert (MM.fits_cpu(case) is None) == fits, case.name


def test_trials():
    for name in ("example", "basic_2x2", "basic_1x3_3x1", "identity_matrix", "zero_matrix", "rectangular_matrices"):
        assert MM.trials(MM.case(name)) == 1, name
    assert MM.trials(MM.case("single_element")) >= 8
    assert MM.trials(MM.case("single_row")) > 1
    for case in MM.all_cases():
        assert 1 <= MM.trials(case) <= 32, case.name
    assert MM.trials(MM.performance) == 1
    assert MM.trials(MM.case("max_dimensions")) == 1


def test_trials_for_bounds():
    assert challenges.trials_for(1) == 32
    assert challenges.trials_for(0) == 32
    assert challenges.trials_for(256) == 1
    assert challenges.trials_for(100) == 3
    assert challenges.trials_for(1, work=1 << 20) == 1
    assert challenges.trials_for(1, work=1 << 18) == 4


def test_explicit_trials_win():
    data = _raw()
    data["functional"][0]["trials"] = 5
    ch = challenges.Challenge.model_validate(data)
    assert ch.trials(ch.functional[0]) == 5


# --- validation --------------------------------------------------------------------------

def _find(data: dict, name: str) -> dict:
    return next(c for c in data["functional"] if c["name"] == name)


def _dim_too_big(d):
    _find(d, "small_square")["dims"]["K"] = LIMIT + 1


def _dim_zero(d):
    d["performance"]["dims"]["M"] = 0


def _dim_missing(d):
    del _find(d, "small_square")["dims"]["N"]


def _duplicate_name(d):
    d["functional"][1]["name"] = d["functional"][0]["name"]


def _duplicate_with_example(d):
    d["functional"][0]["name"] = "example"


def _values_wrong_shape(d):
    _find(d, "basic_2x2")["inputs"]["a"]["values"] = [[1, 2, 3], [4, 5, 6]]


def _values_ragged(d):
    _find(d, "basic_2x2")["inputs"]["b"]["values"] = [[5, 6], [7]]


def _unknown_kind(d):
    _find(d, "small_square")["distribution"] = {"kind": "cauchy", "scale": 1}


def _uniform_equal_bounds(d):
    _find(d, "small_square")["distribution"] = {"kind": "uniform", "low": 1, "high": 1}


def _uniform_reversed(d):
    d["performance"]["distribution"] = {"kind": "uniform", "low": 10, "high": -10}


def _missing_distribution_for_an_input(d):
    case = _find(d, "small_square")
    del case["distribution"]
    case["inputs"] = {"a": {"kind": "uniform", "low": -1, "high": 1}}


def _no_distribution_at_all(d):
    del _find(d, "medium_rectangular")["distribution"]


def _distribution_for_unknown_input(d):
    _find(d, "small_square")["inputs"] = {"x": {"kind": "zeros"}}


def _identity_not_square(d):
    _find(d, "medium_rectangular")["distribution"] = {"kind": "identity"}


def _unknown_field(d):
    _find(d, "small_square")["seed"] = 3


def _constraints_missing_a_dim(d):
    del d["constraints"]["K"]


INVALID = [
    (_dim_too_big, "K=8193 is outside"),
    (_dim_zero, "M=0 is outside"),
    (_dim_missing, "dims must give exactly"),
    (_duplicate_name, "duplicate case names"),
    (_duplicate_with_example, "duplicate case names"),
    (_values_wrong_shape, "values for 'a' are not"),
    (_values_ragged, "values for 'b' are not"),
    (_unknown_kind, "cauchy"),
    (_uniform_equal_bounds, "low < high"),
    (_uniform_reversed, "low < high"),
    (_missing_distribution_for_an_input, "no distribution for input 'b'"),
    (_no_distribution_at_all, "no distribution for input"),
    (_distribution_for_unknown_input, "unknown inputs"),
    (_identity_not_square, "must be square"),
    (_unknown_field, "Extra inputs"),
    (_constraints_missing_a_dim, "constraints must cover"),
]


@pytest.mark.parametrize("tweak, match", INVALID, ids=[f.__name__.strip("_") for f, _ in INVALID])
def test_invalid_definitions_are_refused(tweak, match):
    data = _raw()
    challenges.Challenge.model_validate(copy.deepcopy(data))  # the untouched file is valid
    tweak(data)
    with pytest.raises(pydantic.ValidationError, match=match):
        challenges.Challenge.model_validate(data)


def test_unknown_challenge_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown challenge 'nope'.*matrix_multiplication"):
        challenges.load("nope")


# --- one folder per challenge ------------------------------------------------------------

def _copy_challenge(tmp_path, folder_name: str, declared_name: str):
    dest = tmp_path / folder_name
    dest.mkdir()
    for f in ("challenge.toml", "statement.md", "starter.py"):
        shutil.copy(FOLDER / f, dest / f)
    toml = (dest / "challenge.toml").read_text()
    assert f'name = "{NAME}"' in toml
    (dest / "challenge.toml").write_text(toml.replace(f'name = "{NAME}"', f'name = "{declared_name}"', 1))
    return dest


def test_a_second_challenge_is_one_folder(tmp_path, monkeypatch):
    dest = _copy_challenge(tmp_path, "mm_copy", "mm_copy")
    (tmp_path / "not_a_challenge").mkdir()  # folders without challenge.toml are ignored
    monkeypatch.setenv("JUDGE_CHALLENGES_DIR", str(tmp_path))
    assert challenges.challenges_dir() == tmp_path
    assert challenges.available() == ["mm_copy"]
    ch = challenges.load("mm_copy")
    assert ch.name == "mm_copy" and ch.folder == dest
    assert [c.name for c in ch.functional] == [c.name for c in MM.functional]
    assert "solve(a, b, c, M" in ch.statement()
    assert "def solve" in ch.starter()
    with pytest.raises(UsageError, match="mm_copy"):
        challenges.load(NAME)  # not in this folder of challenges


def test_a_folder_must_match_its_declared_name(tmp_path, monkeypatch):
    _copy_challenge(tmp_path, "folder_name", "other_name")
    monkeypatch.setenv("JUDGE_CHALLENGES_DIR", str(tmp_path))
    with pytest.raises(UsageError, match="other_name"):
        challenges.load("folder_name")


def test_missing_challenges_dir_lists_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CHALLENGES_DIR", str(tmp_path / "absent"))
    assert challenges.available() == []
    with pytest.raises(UsageError, match="none found"):
        challenges.load(NAME)


def test_a_challenge_may_refuse_torch_copies_where_moving_data_is_the_job():
    """[rules] in challenge.toml: matrix_copy and matrix_transpose refuse
    torch's copies in solve; the others keep the rules every challenge has;
    a refusal must say why (the message the student reads)."""
    from judge.challenge_spec import Rules
    for name in ("matrix_copy", "matrix_transpose"):
        rules = challenges.load(name).rules
        assert {"copy_", "clone", "_to_copy"} <= set(rules.refused_ops) and rules.why
    assert challenges.load("matrix_multiplication").rules.refused_ops == []
    with pytest.raises(pydantic.ValidationError):
        Rules(refused_ops=["copy_"], why=" ")
