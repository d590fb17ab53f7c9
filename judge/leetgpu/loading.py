"""Loading a folder's challenge.py into a LeetGPUChallenge: signature, roles,
cases, shapes and tolerance; a folder that cannot load says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from .folder_code import bundle, instance, lock
from .discovery import ENV, folders, repo_path
from .generation import TESTS, run_generator
from .model import challenge_class
from .reference import infer_roles
from .shapes import axis_names, probe
from .signature import arg_kind

DIFFICULTIES = ("easy", "medium", "hard")


_loaded: dict[tuple, Any] = {}


def load(name: str):
    """The challenge `leetgpu/<name>`; UsageError saying why when it cannot load."""
    known = folders()
    folder = known.get(name)
    if folder is None:
        if repo_path() is None:
            raise UsageError(f"unknown challenge {name!r}: no LeetGPU repository given "
                             f"(--leetgpu-repo PATH or ${ENV})")
        raise UsageError(f"unknown challenge {name!r} (LeetGPU challenges: {', '.join(sorted(known)) or 'none'})")
    key = (name, str(folder), (folder / "challenge.py").stat().st_mtime_ns)
    with lock:
        if key not in _loaded:
            _loaded[key] = _build(name, folder)
        return _loaded[key]


def _build(name: str, folder: Path):
    import torch
    where = str(folder)
    step = "reading the folder"
    try:
        code = bundle(folder)
        step = "importing challenge.py"
        made = instance(code)
        step = "get_solve_signature()"
        signature = made.get_solve_signature()
        names, kinds, declared = [], {}, {}
        for arg, entry in dict(signature).items():
            ctype, role = (entry[0], entry[1]) if isinstance(entry, tuple) else (entry, None)
            try:
                kinds[arg] = arg_kind(ctype)
            except ValueError as exc:
                raise ValueError(f"argument {arg!r} is {exc}") from None
            if role is not None:
                if role not in ("in", "out", "inout"):
                    raise ValueError(f"argument {arg!r} has role {role!r}, not in, out or inout")
                declared[arg] = role
            names.append(arg)
        tensors = [n for n in names if kinds[n][0] == "tensor"]
        dims = [n for n in names if kinds[n][0] == "dim"]

        tests = []  # (test, index, dict of shapes and dims)
        for test in TESTS:
            step = f"{TESTS[test]}()"
            got, _ = probe(code, test)
            if test == "functional" and not got:
                raise ValueError("generate_functional_test() returned no tests")
            for index, values in enumerate(got):
                label = f"{TESTS[test]}()" + (f"[{index}]" if test == "functional" else "")
                missing = [n for n in names if n not in values]
                if missing:
                    raise ValueError(f"{label} gives no value for {missing}")
                shapes, dim_values = {}, {}
                for n in tensors:
                    t = values[n]
                    if not isinstance(t, torch.Tensor) or str(t.dtype).removeprefix("torch.") != kinds[n][1]:
                        raise ValueError(f"{label}: {n!r} should be a {kinds[n][1]} tensor, got "
                                         f"{getattr(t, 'dtype', type(t).__name__)}")
                    shapes[n] = list(t.shape)
                for n in dims:
                    v = values[n]
                    if isinstance(v, torch.Tensor) or isinstance(v, bool) or int(v) != v:
                        raise ValueError(f"{label}: {n!r} should be an integer, got {v!r}")
                    dim_values[n] = int(v)
                tests.append((test, index, {"shapes": shapes, "dims": dim_values}))

        if all(n in declared for n in tensors):
            roles = {n: declared[n] for n in tensors}
        else:
            step = "reference_impl() on the example (to tell inputs from outputs)"
            example = run_generator(code, "example", 0, "cpu")
            roles = infer_roles(made, names, tensors, example)

        step = "building the challenge"
        described = [t[2] for t in tests]
        signature_out = []
        for n in names:
            if kinds[n][0] == "dim":
                signature_out.append({"name": n, "role": "dim"})
            else:
                signature_out.append({"name": n, "role": roles[n], "dtype": kinds[n][1],
                                      "shape": axis_names(n, described, dims)})
        inputs = [n for n in tensors if roles[n] in ("in", "inout")]
        cases = []
        for test, index, info in tests:
            case_name = {"example": "example", "performance": "performance"}.get(test, f"test_{index + 1}")
            note = (f"LeetGPU's functional test {index + 1} of {sum(t[0] == 'functional' for t in tests)}"
                    if test == "functional" else f"LeetGPU's {test} test")
            dist = {"kind": "leetgpu", "test": test, "index": index}
            cases.append({"name": case_name, "dims": info["dims"], "shapes": info["shapes"],
                          "inputs": {n: dist for n in inputs}, "trials": 1, "note": note,
                          "seed_name": "functional" if test == "functional" else None})
        atol, rtol = float(getattr(made, "atol")), float(getattr(made, "rtol"))
        difficulty = folder.parent.name
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"its difficulty folder {difficulty!r} is none of {', '.join(DIFFICULTIES)}")
        data = {
            "name": name,
            "title": str(getattr(made, "name", folder.name)),
            "difficulty": difficulty,
            "statement_file": "challenge.html",
            "starter_file": "starter/starter.triton.py",
            "signature": signature_out,
            "constraints": {d: (min(t["dims"][d] for t in described), max(t["dims"][d] for t in described))
                            for d in dims},
            "reference": "challenge.py:reference_impl",
            "tolerance": {"default_policy": "leetgpu", "policies": {"leetgpu": {
                "summary": f"LeetGPU's rule for this challenge: |got − expected| ≤ {atol:g} + {rtol:g}·|expected| "
                           "against its own float32 reference_impl",
                "checkers": [{"kind": "allclose", "atol": atol, "rtol": rtol}]}}},
            "cpu_limits": {"max_output_elements": 1 << 20, "max_work": 1 << 27},
            "example": cases[0],
            "functional": cases[1:-1],
            "performance": cases[-1],
            "leetgpu_cases": [c["name"] for c in cases[1:-1]],
            "folder": folder,
            "leetgpu_folder": where,
            "leetgpu_bundle": code,
        }
        from pydantic import ValidationError
        try:
            return challenge_class().model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'challenge'}: {e['msg']}" for e in exc.errors())
            raise ValueError(problems) from None
    except UsageError:
        raise
    except SyntaxError as exc:
        raise UsageError(f"{where}: {step}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 - the folder's code may raise anything
        raise UsageError(f"{where}: {step}: {type(exc).__name__}: {exc}") from None
