"""Challenge definitions: pydantic models, loaded from ``challenges/<name>/``.

A challenge folder holds ``challenge.toml`` (everything below), the
reference (a plain function in the folder, run by the judge), a statement,
a starter file and example submissions. Adding a challenge means adding one
folder; nothing in the engine names a challenge. challenges/README.md
documents the format.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import os
import sys
import tomllib
from pathlib import Path
from typing import Callable, Literal

from pydantic import ValidationError, model_validator

from . import expr
# The parts of a challenge.toml, re-exported here where callers look for them.
from .challenge_spec import (  # noqa: F401
    Arg, Case, CpuLimits, PolicySpec, Rules, ScoringDefaults, Tolerance, Work, _Strict, trials_for,
)
from .distributions import Identity, Values
from .errors import UsageError

PER_CASE = "*"  # a shape entry given by each case's `shapes`


class Challenge(_Strict):
    name: str
    title: str
    difficulty: Literal["easy", "medium", "hard"] = "easy"
    statement_file: str = "statement.md"
    starter_file: str = "starter.py"
    examples_dir: str = "examples"
    signature: list[Arg]
    constraints: dict[str, tuple[int, int]]
    relations: list[str] = []  # conditions between dimensions, e.g. "kernel_size <= input_size"
    reference: str  # "reference.py:function" in the folder, or "module:function"
    baselines: str | None = None  # named calls to time on the performance case
    checksum: str | None = None  # (sum of the outputs, its scale) from the inputs alone, cheaply
    tolerance: Tolerance
    work: Work = Work()
    cpu_limits: CpuLimits = CpuLimits()
    scoring: ScoringDefaults | None = None
    rules: Rules = Rules()
    example: Case
    functional: list[Case]
    performance: Case
    # The functional cases that mirror LeetGPU's published list (judge check
    # answers in LeetGPU's terms from these).
    leetgpu_cases: list[str] = []

    folder: Path | None = None  # set by the loader

    @model_validator(mode="before")
    @classmethod
    def _relations_under_constraints(cls, data):
        # challenge.toml may list relations inside [constraints], and names
        # the interpreter's caps [cpu]
        if isinstance(data, dict) and isinstance(data.get("constraints"), dict) \
                and "relations" in data["constraints"]:
            data = dict(data)
            data["constraints"] = dict(data["constraints"])
            data["relations"] = data["constraints"].pop("relations")
        if isinstance(data, dict) and "cpu" in data:
            data = dict(data)
            data["cpu_limits"] = data.pop("cpu")
        return data

    @model_validator(mode="after")
    def _consistent(self):
        dims = [a.name for a in self.signature if a.role == "dim"]
        names = [a.name for a in self.signature]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate argument names in the signature: {names}")
        if sorted(dims) != sorted(self.constraints):
            raise ValueError(f"constraints must cover exactly the dimensions {dims}")
        if not any(a.role in ("out", "inout") for a in self.signature):
            raise ValueError("the signature needs at least one out or inout argument")
        for arg in self.signature:
            for entry in arg.shape:
                unknown = expr.names(entry) - set(dims) if isinstance(entry, str) and entry != PER_CASE else set()
                if unknown:
                    raise ValueError(f"argument {arg.name!r} uses unknown dimension(s) {sorted(unknown)}")
        for text in [*self.relations, *(t for t in (self.work.flops, self.work.bytes, self.work.cpu) if t)]:
            unknown = expr.names(text) - set(dims)
            if unknown:
                raise ValueError(f"{text!r} uses unknown dimension(s) {sorted(unknown)}")
        from .checkers import build  # validates each checker's parameters
        for name, spec in self.tolerance.policies.items():
            for checker in spec.checkers:
                try:
                    build(checker)
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"policy {name!r}: {exc}") from None
        cases = [c.name for c in self.all_cases()]
        dupes = {n for n in cases if cases.count(n) > 1}
        if dupes:
            raise ValueError(f"duplicate case names: {sorted(dupes)}")
        for case in self.all_cases():
            self._check_case(case)
        unknown = set(self.leetgpu_cases) - {c.name for c in self.functional}
        if unknown:
            raise ValueError(f"leetgpu_cases names unknown functional cases {sorted(unknown)}")
        return self

    def _check_case(self, case: Case) -> None:
        where = f"case {case.name!r}"
        if sorted(case.dims) != sorted(self.constraints):
            raise ValueError(f"{where}: dims must give exactly {sorted(self.constraints)}")
        for dim, value in case.dims.items():
            lo, hi = self.constraints[dim]
            if not lo <= value <= hi:
                raise ValueError(f"{where}: {dim}={value} is outside [{lo}, {hi}]")
        for relation in self.relations:
            if not expr.evaluate(relation, case.dims):
                raise ValueError(f"{where}: breaks the constraint {relation!r}")
        for arg in self.signature:
            if arg.is_tensor and PER_CASE in arg.shape and not (case.shapes and arg.name in case.shapes):
                raise ValueError(f"{where}: argument {arg.name!r} needs an explicit shape (shapes)")
            if arg.is_tensor and any(n < 1 for n in self.shape_of(arg, case)):
                raise ValueError(f"{where}: argument {arg.name!r} has shape {self.shape_of(arg, case)}")
        for arg in self.inputs():
            dist = self.distribution_of(arg, case)
            if dist is None:
                raise ValueError(f"{where}: no distribution for input {arg.name!r}")
            shape = self.shape_of(arg, case)
            if isinstance(dist, Values) and (not dist.is_regular() or dist.shape() != shape):
                raise ValueError(f"{where}: values for {arg.name!r} are not of shape {shape}")
            if isinstance(dist, Identity) and (len(shape) != 2 or shape[0] != shape[1]):
                raise ValueError(f"{where}: identity input {arg.name!r} must be square")
            if (arg.dtype == "int32" and dist.kind not in ("randint", "values", "zeros", "constant", "arange",
                                                           "leetgpu")) \
                    or (arg.dtype == "float32" and dist.kind == "randint"):
                raise ValueError(f"{where}: distribution {dist.kind!r} does not suit {arg.dtype} input {arg.name!r}")
        unknown = set(case.inputs) - {a.name for a in self.inputs()}
        if unknown:
            raise ValueError(f"{where}: distributions for unknown inputs {sorted(unknown)}")

    # --- queries ---------------------------------------------------------------

    def all_cases(self) -> list[Case]:
        return [self.example, *self.functional, self.performance]

    def inputs(self) -> list[Arg]:
        """Arguments whose value the judge draws: `in` and `inout`."""
        return [a for a in self.signature if a.role in ("in", "inout")]

    def outputs(self) -> list[Arg]:
        """Arguments whose final value is judged: `out` and `inout`."""
        return [a for a in self.signature if a.role in ("out", "inout")]

    def shape_of(self, arg: Arg, case: Case) -> list[int]:
        if case.shapes and arg.name in case.shapes:
            return [int(n) for n in case.shapes[arg.name]]
        return [int(expr.evaluate(entry, case.dims)) if isinstance(entry, str) and entry not in case.dims
                else int(case.dims[entry] if isinstance(entry, str) else entry) for entry in arg.shape]

    def distribution_of(self, arg: Arg, case: Case):
        return case.inputs.get(arg.name, case.distribution)

    def case(self, name: str) -> Case:
        for c in self.all_cases():
            if c.name == name:
                return c
        raise KeyError(name)

    def output_elements(self, case: Case) -> int:
        return sum(math.prod(self.shape_of(a, case)) for a in self.outputs())

    def trials(self, case: Case) -> int:
        """How many input sets a case is run with. Tiny random outputs get
        several, so that statistical checks (TF32 detection) see enough
        elements; fixed-value cases need only one."""
        if case.trials is not None:
            return case.trials
        if not all(self.distribution_of(a, case).random for a in self.inputs()):
            return 1
        return trials_for(self.output_elements(case), self.work_of(case))

    def work_of(self, case: Case) -> int:
        """The interpreter's cost measure of one call."""
        if self.work.cpu:
            return int(expr.evaluate(self.work.cpu, case.dims))
        return math.prod(case.dims.values())

    def fits_cpu(self, case: Case) -> str | None:
        """None if the case runs under the interpreter, else the reason it is skipped."""
        elements = self.output_elements(case)
        if elements > self.cpu_limits.max_output_elements:
            return (f"skipped on CPU: {elements:,} output elements exceed the interpreter "
                    f"cap of {self.cpu_limits.max_output_elements:,}; grade on a GPU")
        if self.work_of(case) > self.cpu_limits.max_work:
            return (f"skipped on CPU: a work measure of {self.work_of(case):,} exceeds the interpreter "
                    f"cap of {self.cpu_limits.max_work:,}; grade on a GPU")
        return None

    def large_for_cpu(self, case: Case) -> bool:
        """A case of a 64th of the interpreter's caps or more: one a correct
        kernel with small blocks may honestly make too slow for the
        interpreter (one program per element of a 64×64 product already
        is), as it may one beyond the caps (judge.casework)."""
        return (64 * self.output_elements(case) >= self.cpu_limits.max_output_elements
                or 64 * self.work_of(case) >= self.cpu_limits.max_work)

    def flop_count(self, case: Case) -> float | None:
        return float(expr.evaluate(self.work.flops, case.dims)) if self.work.flops else None

    def byte_count(self, case: Case) -> float | None:
        return float(expr.evaluate(self.work.bytes, case.dims)) if self.work.bytes else None

    def shape_label(self, case: Case) -> str:
        return "×".join(str(case.dims[d]) for d in self.constraints)

    def call_signature(self) -> str:
        return f"solve({', '.join(a.name for a in self.signature)})"

    def statement(self) -> str:
        assert self.folder is not None
        text = (self.folder / self.statement_file).read_text()
        if self.statement_file.endswith(".html"):
            from .leetgpu import html_to_text
            return html_to_text(text)
        return text

    def starter(self) -> str:
        assert self.folder is not None
        return (self.folder / self.starter_file).read_text()

    def examples(self) -> Path | None:
        folder = self.folder / self.examples_dir if self.folder else None
        return folder if folder and folder.is_dir() else None

    def reference_fn(self) -> Callable:
        return self._resolve(self.reference)

    def baselines_fn(self) -> Callable | None:
        return self._resolve(self.baselines) if self.baselines else None

    def checksum_fn(self) -> Callable | None:
        return self._resolve(self.checksum) if self.checksum else None

    def _resolve(self, ref: str) -> Callable:
        """"file.py:function" in the challenge's folder, or "module:function".
        Runs in the judge's process: the challenge folder is trusted."""
        where, _, attr = ref.partition(":")
        if where.endswith(".py"):
            assert self.folder is not None
            path = (self.folder / where).resolve()
            key = f"_challenge_{self.name}_{path.stem}_{abs(hash(str(path)))}"
            module = sys.modules.get(key)
            if module is None:
                spec = importlib.util.spec_from_file_location(key, path)
                if spec is None or not path.is_file():
                    raise UsageError(f"challenge {self.name}: {path} does not exist")
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[key] = module
        else:
            module = importlib.import_module(where)
        try:
            return getattr(module, attr)
        except AttributeError:
            raise UsageError(f"challenge {self.name}: {where} defines no {attr!r}") from None


# --- loading -----------------------------------------------------------------

def challenge_dirs() -> list[Path]:
    """Where challenges are looked for: the folders in $JUDGE_CHALLENGES_DIR
    (joined by the path separator), else the repository's challenges/."""
    env = os.environ.get("JUDGE_CHALLENGES_DIR")
    if env:
        return [Path(p) for p in env.split(os.pathsep) if p]
    return [Path(__file__).resolve().parent.parent / "challenges"]


def challenges_dir() -> Path:
    """The first folder of challenges (see challenge_dirs)."""
    return challenge_dirs()[0]


def _folders() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root in challenge_dirs():
        if root.is_dir():
            for p in sorted(root.iterdir()):
                if (p / "challenge.toml").is_file():
                    found.setdefault(p.name, p)  # the first folder listed wins
    return found


def available() -> list[str]:
    """Our challenges, then those of a LeetGPU clone (--leetgpu-repo,
    $JUDGE_LEETGPU_REPO) named leetgpu/<name>."""
    from . import leetgpu
    return sorted(_folders()) + leetgpu.available()


def load(name: str) -> Challenge:
    from . import leetgpu
    if name.startswith(leetgpu.PREFIX):
        return leetgpu.load(name)
    folder = _folders().get(name)
    if folder is None:
        known = ", ".join(available()) or "none found"
        raise UsageError(f"unknown challenge {name!r} (available: {known})")
    path = folder / "challenge.toml"
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML: {exc}") from None
    try:
        challenge = Challenge.model_validate({**data, "folder": folder})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'challenge'}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"{path} is not a valid challenge: {problems}") from None
    if challenge.name != name:
        raise UsageError(f"{path} declares name {challenge.name!r}, expected {name!r}")
    return challenge


# The line `judge init` writes first in a starter: the file names its
# challenge, so `judge submit mine.py` grades it as that one.
MARKER = re.compile(r"^#\s*challenge:\s*([\w./-]+)\s*$")


def marked(path: Path) -> str | None:
    """The challenge a `# challenge: NAME` line among the file's first
    five names (read as text, never run), if any."""
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as fh:
            head = [fh.readline() for _ in range(5)]
    except OSError:
        return None
    for line in head:
        found = MARKER.match(line.strip())
        if found:
            return found.group(1)
    return None


def for_file(path: Path) -> str | None:
    """The challenge whose folder holds `path` (an example), else the one
    its `# challenge: NAME` line names, if any."""
    resolved = path.resolve()
    from . import leetgpu
    try:
        theirs = leetgpu.folders()
    except UsageError:
        theirs = {}
    for name, folder in [*_folders().items(), *theirs.items()]:
        if folder.resolve() in resolved.parents:
            return name
    return marked(path)
