"""LeetGPU's own challenge folders, loaded at run time from the user's clone.

With `--leetgpu-repo PATH` (or $JUDGE_LEETGPU_REPO) every folder
`challenges/<difficulty>/<number>_<name>/` of a clone of LeetGPU's public
challenges repository becomes a challenge named `leetgpu/<name>`. Nothing of
that repository is copied into ours (its licence forbids it): its files are
read where the user keeps them, each time.

How a folder becomes our `Challenge` (judge.challenge):

- the signature comes from `get_solve_signature()`: ctypes pointers to
  float or int are float32 / int32 tensors, ctypes ints are dimensions; the
  roles come from the `(type, "in" | "out" | "inout")` tuples when given,
  else from running `reference_impl` on the example test (a tensor it writes
  is an output; one whose initial value changes its own result is inout);
- one case per generated test (the example, each functional test, the
  performance test), whose data is drawn by the folder's own generator under
  `torch.manual_seed(seed)` with `device="cuda"` rewritten to the run's
  device. The generator's code travels in the case's plan, so the worker
  (which builds the submission's inputs, judge.cases.make_inputs) and the
  judge (which builds them again for the truth) run the same code with the
  same seed and get the same tensors; shapes and dimensions are read from a
  generator run on the `meta` device (no data), or on the CPU when it needs
  values;
- the truth is `reference_impl` on copies of the inputs, in the trusted
  judge process (asserts stripped: they insist on CUDA tensors), and the
  policy `leetgpu` is `allclose` with the challenge's own atol and rtol;
- the statement is challenge.html as text, the starter
  starter/starter.triton.py.

A folder that cannot be loaded is reported with the reason; the others
still load. docs/leetgpu.md describes the feature.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import html.parser
import importlib.abc
import importlib.util
import json
import math
import os
import random
import re
import sys
import threading
from pathlib import Path
from typing import Any

from .errors import UsageError

PREFIX = "leetgpu/"
ENV = "JUDGE_LEETGPU_REPO"
TESTS = {"example": "generate_example_test", "functional": "generate_functional_test",
         "performance": "generate_performance_test"}
DIFFICULTIES = ("easy", "medium", "hard")
# Under Triton's interpreter: cases with more tensor elements than this (all
# arguments together) are skipped, as our own challenges skip theirs.
CPU_MAX_ELEMENTS = 1 << 22

_lock = threading.RLock()


# --- finding the folders -----------------------------------------------------

def repo_path() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value).expanduser() if value else None


def challenges_root(repo: Path) -> Path:
    """The clone's `challenges/` folder (PATH may be the clone or that folder)."""
    for candidate in (repo / "challenges", repo):
        if (candidate / "core").is_dir():
            return candidate
    raise UsageError(f"--leetgpu-repo {repo}: not a clone of LeetGPU's challenges repository "
                     f"(no challenges/core/ folder there)")


def folders() -> dict[str, Path]:
    """leetgpu/<name> -> folder, for every challenge folder of the clone.
    Names drop the number; two folders of the same name keep theirs."""
    repo = repo_path()
    if repo is None:
        return {}
    root = challenges_root(repo)
    found: list[tuple[str, Path]] = []
    for group in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "core"
                        and not p.name.startswith((".", "_"))):
        for folder in sorted(p for p in group.iterdir() if (p / "challenge.py").is_file()):
            short = re.sub(r"^\d+_", "", folder.name)
            found.append((short, folder))
    shorts = [s for s, _ in found]
    return {PREFIX + (s if shorts.count(s) == 1 else f.name): f for s, f in found}


def available() -> list[str]:
    return sorted(folders())


# --- the folder's code, in whichever process needs it --------------------------

def bundle(folder: Path) -> dict:
    """The code a folder's challenge needs: its challenge.py and the clone's
    core/ package, as text (it goes to the worker inside the plan)."""
    core = folder.parent.parent / "core"
    sources = {"core": ("core/__init__.py", "")}
    for path in sorted(core.glob("*.py")):
        name = "core" if path.stem == "__init__" else f"core.{path.stem}"
        sources[name] = (str(path), path.read_text(encoding="utf-8"))
    path = folder / "challenge.py"
    data = {"challenge": (str(path), path.read_text(encoding="utf-8")), "core": sources}
    data["key"] = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    return data


class _CoreFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `core` and `core.*` from a bundle while a challenge.py loads."""

    def __init__(self, sources: dict[str, list]):
        self.sources = sources

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.sources:
            return importlib.util.spec_from_loader(fullname, self, is_package=fullname == "core")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        filename, text = self.sources[module.__name__]
        module.__file__ = filename
        exec(_compile(text, filename), module.__dict__)


def _compile(text: str, filename: str):
    # optimize=1 drops the asserts: LeetGPU's code asserts CUDA tensors.
    return compile(text, filename, "exec", optimize=1, dont_inherit=True)


_instances: dict[str, Any] = {}


def instance(code: dict):
    """An instance of the bundle's `Challenge` class (one per process and bundle)."""
    with _lock:
        if code["key"] in _instances:
            return _instances[code["key"]]
        saved = {n: m for n, m in sys.modules.items() if n == "core" or n.startswith("core.")}
        for name in saved:
            del sys.modules[name]
        finder = _CoreFinder(code["core"])
        sys.meta_path.insert(0, finder)
        try:
            filename, text = code["challenge"]
            module = type(sys)(f"_leetgpu_{code['key']}")
            module.__file__ = filename
            exec(_compile(text, filename), module.__dict__)
            cls = getattr(module, "Challenge", None)
            if cls is None:
                raise LookupError("challenge.py defines no class Challenge")
            made = cls()
        finally:
            sys.meta_path.remove(finder)
            for name in [n for n in sys.modules if n == "core" or n.startswith("core.")]:
                del sys.modules[name]
            sys.modules.update(saved)
        _instances[code["key"]] = made
        return made


def on_device(device):
    """A torch function mode that rewrites CUDA devices to `device` in every
    torch call (device=..., .to("cuda"), .cuda()): LeetGPU's code names CUDA,
    the run may be on the CPU (or on `meta`, to learn shapes without data)."""
    return _on_device_class()(device)


@functools.lru_cache(maxsize=None)
def _on_device_class():
    import torch
    from torch.overrides import TorchFunctionMode

    class OnDevice(TorchFunctionMode):
        def __init__(self, device):
            super().__init__()
            self.device = torch.device(device)

        def _map(self, value):
            if isinstance(value, torch.device) and value.type == "cuda":
                return self.device
            if isinstance(value, str) and value.split(":")[0] == "cuda":
                return self.device
            return value

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if getattr(func, "__name__", "") == "cuda" and args and isinstance(args[0], torch.Tensor):
                return args[0].to(self.device)
            args = tuple(self._map(a) for a in args)
            if "device" in kwargs:
                kwargs["device"] = self._map(kwargs["device"])
            return func(*args, **kwargs)

    return OnDevice


@contextlib.contextmanager
def seeded(seed: int, device):
    """torch's generators seeded with `seed` (the run's data), Python's and
    numpy's with 0 (so sizes drawn with them are the same in every run),
    float32 the default dtype; all restored afterwards."""
    import torch
    device = torch.device(device)
    forked = [device.index or 0] if device.type == "cuda" else []
    state = random.getstate()
    try:
        import numpy
        np_state = numpy.random.get_state()
    except ImportError:  # pragma: no cover - numpy is a dependency
        numpy = np_state = None
    dtype = torch.get_default_dtype()  # a submission may have changed it in the worker
    with torch.random.fork_rng(devices=forked):
        torch.manual_seed(seed)
        torch.set_default_dtype(torch.float32)
        random.seed(0)
        if numpy is not None:
            numpy.random.seed(0)
        try:
            yield
        finally:
            torch.set_default_dtype(dtype)
            random.setstate(state)
            if numpy is not None:
                numpy.random.set_state(np_state)


def run_generator(code: dict, test: str, seed: int, device):
    """The test dict (for "functional", the list) a generator returns. On
    `meta` (shapes only) tensors made without a device go there too."""
    import torch
    made = instance(code)
    default = torch.device("meta") if str(device) == "meta" else contextlib.nullcontext()
    with seeded(seed, device), on_device(device), default, torch.no_grad():
        return getattr(made, TESTS[test])()


_generated: dict[tuple, Any] = {}


def generate(spec: dict, seed: int, device) -> dict:
    """One test's arguments. The last list of functional tests is kept: its
    cases share their seed (Case.seed_name), so one call serves them all."""
    if spec["test"] != "functional":
        return run_generator(spec["bundle"], spec["test"], seed, device)
    key = (spec["bundle"]["key"], spec["test"], seed, str(device))
    with _lock:
        result = _generated.get(key)
        if result is None:
            result = run_generator(spec["bundle"], spec["test"], seed, device)
            _generated.clear()
            _generated[key] = result
    return result[spec["index"]]


def make_inputs(plan: dict, seed: int, device) -> dict[str, torch.Tensor]:
    """The inputs of a case from its generator, checked against the plan."""
    import torch
    test = generate(plan["generator"], seed, device)
    out = {}
    for name, spec in plan["inputs"].items():
        value = test.get(name)
        want = (list(spec["shape"]), spec.get("dtype", "float32"))
        got = (list(value.shape), str(value.dtype).removeprefix("torch.")) if isinstance(value, torch.Tensor) else None
        if got != want:
            raise ValueError(f"LeetGPU's generator gave {name!r} as {got} where the case has {want}: "
                             f"its sizes must not depend on its random draws")
        out[name] = value.detach().to(device).clone(memory_format=torch.contiguous_format)
    return out


def call_reference(made, names: list[str], values: dict, device) -> None:
    """reference_impl on `values` (changed in place), positionally."""
    import torch
    with on_device(device), torch.no_grad():
        made.reference_impl(*[values[n] for n in names])


# --- statement -----------------------------------------------------------------

class _Text(html.parser.HTMLParser):
    BLOCKS = {"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "tr", "table",
              "section", "blockquote"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag):
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(text: str) -> str:
    parser = _Text()
    parser.feed(text)
    parser.close()
    lines = [line.rstrip() for line in "".join(parser.parts).splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.lstrip() if line.startswith(" ") else line
                                               for line in lines)).strip() + "\n"


# --- building the Challenge ----------------------------------------------------------

def _kind(ctype) -> tuple[str, str | None]:
    """("tensor", dtype) or ("dim", None) for a ctypes type of get_solve_signature()."""
    import ctypes
    if isinstance(ctype, type) and issubclass(ctype, ctypes._Pointer):
        target = ctype._type_
        if target is ctypes.c_float:
            return "tensor", "float32"
        if target in (ctypes.c_int, ctypes.c_int32):
            return "tensor", "int32"
        raise ValueError(f"a pointer to {target.__name__} (only float32 and int32 tensors are supported)")
    if ctype in (ctypes.c_int, ctypes.c_int32, ctypes.c_int64, ctypes.c_long, ctypes.c_uint32,
                 ctypes.c_size_t):
        return "dim", None
    name = getattr(ctype, "__name__", repr(ctype))
    raise ValueError(f"a scalar of type {name} (only integer scalars are supported so far)")


def _bits(t: torch.Tensor) -> torch.Tensor:
    import torch
    return t.view(torch.int32) if t.dtype in (torch.float32, torch.int32) else t


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    import torch
    return a.shape == b.shape and torch.equal(_bits(a), _bits(b))  # NaN equals NaN


def infer_roles(made, names: list[str], tensors: list[str], example: dict) -> dict[str, str]:
    """Roles from the example: run reference_impl on it, then once more per
    tensor with that tensor overwritten; written tensors are outputs, and
    inout when their initial value changes their final one."""
    import torch
    def run(overwrite: str | None) -> dict:
        values = {n: (v.clone() if isinstance(v, torch.Tensor) else v) for n, v in example.items()}
        if overwrite is not None:
            t = values[overwrite]
            values[overwrite] = torch.full_like(t, 7919 if t.dtype == torch.int32 else 1234.5)
        start = {n: values[n].clone() for n in tensors}
        call_reference(made, names, values, "cpu")
        return {n: (start[n], values[n]) for n in tensors}

    plain = run(None)
    roles = {}
    for name in tensors:
        poked = run(name)
        written = not _same(*plain[name]) or not _same(*poked[name])
        if not written:
            roles[name] = "in"
        else:
            roles[name] = "inout" if not _same(plain[name][1], poked[name][1]) else "out"
    if not any(r != "in" for r in roles.values()):
        raise ValueError("reference_impl wrote none of the example's tensors, so its outputs are unknown "
                         "(give roles in get_solve_signature)")
    return roles


def _probe(code: dict, test: str) -> tuple[list[dict], str]:
    """The tests' shapes and dimensions: from a run on the meta device (no
    data), else two CPU runs with different seeds that must agree."""
    import torch
    try:
        got = run_generator(code, test, 0, "meta")
        return (got if test == "functional" else [got]), "meta"
    except Exception:  # noqa: BLE001 - it needs values: run it for real
        pass
    first = run_generator(code, test, 0, "cpu")
    again = run_generator(code, test, 1, "cpu")
    first, again = (first, again) if test == "functional" else ([first], [again])

    def sizes(tests):
        return [{k: (tuple(v.shape) if isinstance(v, torch.Tensor) else v) for k, v in t.items()} for t in tests]

    if sizes(first) != sizes(again):
        raise ValueError(f"{TESTS[test]}() draws its sizes from torch's random numbers: they change with "
                         f"the seed, which the judge cannot follow")
    return first, "cpu"


def _axis_names(arg: str, cases: list[dict], dims: list[str]) -> list:
    """Arg.shape for display: per axis a dimension it always equals, else a
    constant, else `*` (each case gives its shapes)."""
    from .challenge import PER_CASE
    shapes = [c["shapes"][arg] for c in cases]
    if len({len(s) for s in shapes}) != 1:
        return [PER_CASE]
    out = []
    for axis in range(len(shapes[0])):
        sizes = [s[axis] for s in shapes]
        match = next((d for d in dims if all(c["dims"][d] == n for c, n in zip(cases, sizes))), None)
        out.append(match if match else sizes[0] if len(set(sizes)) == 1 else PER_CASE)
    return out


@functools.lru_cache(maxsize=None)
def _challenge_class():
    import torch
    from pydantic import Field

    from .challenge import Case, Challenge

    class LeetGPUChallenge(Challenge):
        """A challenge built from a LeetGPU folder (see the module's docstring)."""

        leetgpu_folder: str
        # The folder's code, for the worker (inside plans); never dumped or
        # shown: its licence forbids redistributing it.
        leetgpu_bundle: dict = Field(exclude=True, repr=False)

        def reference_fn(self):
            code, names = self.leetgpu_bundle, [a.name for a in self.signature]

            def reference(inputs):
                plan = inputs.plan
                device = next((t.device for t in inputs.values()),
                              torch.device("cuda" if torch.cuda.is_available() else "cpu"))
                values = {}
                for item in plan["call"]:
                    name = item["name"]
                    if item["role"] == "dim":
                        values[name] = int(item["value"])
                    elif name in inputs:
                        values[name] = inputs[name].clone()
                    else:
                        spec = plan["outputs"][name]
                        values[name] = torch.zeros(spec["shape"], dtype=getattr(torch, spec["dtype"]),
                                                   device=device)
                call_reference(instance(code), names, values, device)
                return {name: values[name].to(torch.float64) if values[name].is_floating_point() else values[name]
                        for name in plan["outputs"]}

            return reference

        def generator_spec(self, case: Case) -> dict | None:
            dist = next(iter(case.inputs.values()), None)
            if dist is None:
                return None
            return {"kind": "leetgpu", "bundle": self.leetgpu_bundle, "test": dist.test, "index": dist.index}

        def fits_cpu(self, case: Case) -> str | None:
            elements = sum(math.prod(self.shape_of(a, case)) for a in self.signature if a.is_tensor)
            if elements > CPU_MAX_ELEMENTS:
                return (f"skipped on CPU: {elements:,} tensor elements exceed the interpreter cap of "
                        f"{CPU_MAX_ELEMENTS:,}; grade on a GPU")
            return super().fits_cpu(case)

        def shape_label(self, case: Case) -> str:
            if case.dims:
                return super().shape_label(case)
            first = next(a for a in self.outputs())
            return "×".join(map(str, self.shape_of(first, case)))

        def starter(self) -> str:
            path = self.folder / self.starter_file
            if not path.is_file():
                raise UsageError(f"{self.name}: {path} does not exist (no Triton starter in this folder)")
            return path.read_text()

        def statement(self) -> str:
            if not (self.folder / self.statement_file).is_file():
                return f"{self.title}\n\n(no challenge.html in {self.folder})\n"
            return super().statement()

    return LeetGPUChallenge


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
    with _lock:
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
                kinds[arg] = _kind(ctype)
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
            got, _ = _probe(code, test)
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
                                      "shape": _axis_names(n, described, dims)})
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
            return _challenge_class().model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'challenge'}: {e['msg']}" for e in exc.errors())
            raise ValueError(problems) from None
    except UsageError:
        raise
    except SyntaxError as exc:
        raise UsageError(f"{where}: {step}: syntax error at line {exc.lineno}: {exc.msg}") from None
    except Exception as exc:  # noqa: BLE001 - the folder's code may raise anything
        raise UsageError(f"{where}: {step}: {type(exc).__name__}: {exc}") from None
