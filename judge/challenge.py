"""Challenge definitions: pydantic models, loaded from ``challenges/<name>/``.

A challenge folder holds ``challenge.toml`` (everything below), the statement
(markdown) and a starter file. Adding a challenge means adding one folder.
"""

from __future__ import annotations

import importlib
import math
import os
import tomllib
from pathlib import Path
from typing import Annotated, Callable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .errors import UsageError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- input distributions -----------------------------------------------------

class Uniform(_Strict):
    kind: Literal["uniform"]
    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self):
        if not self.low < self.high:
            raise ValueError(f"uniform needs low < high, got [{self.low}, {self.high}]")
        return self

    def describe(self) -> str:
        return f"uniform({self.low:g}, {self.high:g})"


class Normal(_Strict):
    kind: Literal["normal"]
    mean: float = 0.0
    std: float = Field(1.0, gt=0)

    def describe(self) -> str:
        return f"normal({self.mean:g}, {self.std:g})"


class SignedLogUniform(_Strict):
    """Random sign times 10**uniform(min_exp, max_exp): magnitudes spread over
    many decades, the regime where relative-error checks are most fragile."""

    kind: Literal["signed_log_uniform"]
    min_exp: float
    max_exp: float

    @model_validator(mode="after")
    def _ordered(self):
        if not self.min_exp <= self.max_exp:
            raise ValueError(f"signed_log_uniform needs min_exp <= max_exp, got {self.min_exp} > {self.max_exp}")
        return self

    def describe(self) -> str:
        return f"±10^uniform({self.min_exp:g}, {self.max_exp:g})"


class Zeros(_Strict):
    kind: Literal["zeros"]

    def describe(self) -> str:
        return "zeros"


class Identity(_Strict):
    kind: Literal["identity"]

    def describe(self) -> str:
        return "identity"


class Values(_Strict):
    """Fixed values, row-major, given as nested lists."""

    kind: Literal["values"]
    values: list[list[float]]

    def describe(self) -> str:
        return "fixed values"


Distribution = Annotated[
    Union[Uniform, Normal, SignedLogUniform, Zeros, Identity, Values],
    Field(discriminator="kind"),
]

RANDOM_KINDS = ("uniform", "normal", "signed_log_uniform")


def trials_for(output_elements: int, work: int = 1) -> int:
    """Input sets for a random case: enough for ~256 output elements (so the
    normwise statistics that see TF32 have something to average), at most 32,
    and fewer when each one is costly (~1M multiply-adds in all)."""
    wanted = math.ceil(256 / max(1, output_elements))
    return max(1, min(32, wanted, (1 << 20) // max(1, work)))


# --- signature and cases ------------------------------------------------------

class Arg(_Strict):
    name: str
    role: Literal["in", "out", "dim"]
    shape: list[str] = []  # dimension names, for tensors

    @model_validator(mode="after")
    def _shape_matches_role(self):
        if self.role == "dim" and self.shape:
            raise ValueError(f"dimension argument {self.name!r} cannot have a shape")
        if self.role != "dim" and not self.shape:
            raise ValueError(f"tensor argument {self.name!r} needs a shape")
        return self


class Case(_Strict):
    name: str
    dims: dict[str, int]
    inputs: dict[str, Distribution] = {}  # per input argument; overrides `distribution`
    distribution: Distribution | None = None  # default for every input
    trials: int | None = Field(default=None, ge=1, le=32)
    note: str = ""


class Tolerance(_Strict):
    default_policy: str = "fp32"
    allowed_policies: list[str] = ["fp32", "leetgpu", "tf32"]


class CpuLimits(_Strict):
    """Cases larger than this are skipped under Triton's interpreter (it runs
    about 1e8 multiply-adds per second at best, far less with small tiles)."""

    max_output_elements: int = 512 * 512
    max_work: int = 512 * 512 * 512  # the product of all dimensions


class Challenge(_Strict):
    name: str
    title: str
    difficulty: Literal["easy", "medium", "hard"] = "easy"
    statement_file: str = "statement.md"
    starter_file: str = "starter.py"
    dtype: Literal["float32"] = "float32"
    signature: list[Arg]
    constraints: dict[str, tuple[int, int]]
    accumulation_dim: str | None = None  # the dimension summed over, for error bounds
    flops: str  # expression over the dimensions, e.g. "2*M*N*K"
    reference: str  # "module:function" returning the expected outputs
    baselines: str | None = None  # "module:function" returning named calls to time on the performance case
    checksum: str | None = None  # "module:function": (sum of the outputs, its scale) from the inputs alone
    tolerance: Tolerance = Tolerance()
    cpu_limits: CpuLimits = CpuLimits()
    example: Case
    functional: list[Case]
    performance: Case

    folder: Path | None = None  # set by the loader

    @model_validator(mode="after")
    def _consistent(self):
        dims = [a.name for a in self.signature if a.role == "dim"]
        if sorted(dims) != sorted(self.constraints):
            raise ValueError(f"constraints must cover exactly the dimensions {dims}")
        for arg in self.signature:
            for d in arg.shape:
                if d not in dims:
                    raise ValueError(f"argument {arg.name!r} uses unknown dimension {d!r}")
        if self.accumulation_dim is not None and self.accumulation_dim not in dims:
            raise ValueError(f"accumulation_dim {self.accumulation_dim!r} is not a dimension")
        names = [c.name for c in self.all_cases()]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise ValueError(f"duplicate case names: {sorted(dupes)}")
        for case in self.all_cases():
            self._check_case(case)
        return self

    def _check_case(self, case: Case) -> None:
        where = f"case {case.name!r}"
        if sorted(case.dims) != sorted(self.constraints):
            raise ValueError(f"{where}: dims must give exactly {sorted(self.constraints)}")
        for dim, value in case.dims.items():
            lo, hi = self.constraints[dim]
            if not lo <= value <= hi:
                raise ValueError(f"{where}: {dim}={value} is outside [{lo}, {hi}]")
        for arg in self.inputs():
            dist = case.inputs.get(arg.name, case.distribution)
            if dist is None:
                raise ValueError(f"{where}: no distribution for input {arg.name!r}")
            shape = self.shape_of(arg, case)
            if isinstance(dist, Values):
                got = (len(dist.values), len(dist.values[0]) if dist.values else 0)
                if got != tuple(shape) or any(len(r) != shape[1] for r in dist.values):
                    raise ValueError(f"{where}: values for {arg.name!r} are not {shape}")
            if isinstance(dist, Identity) and (len(shape) != 2 or shape[0] != shape[1]):
                raise ValueError(f"{where}: identity input {arg.name!r} must be square")
        unknown = set(case.inputs) - {a.name for a in self.inputs()}
        if unknown:
            raise ValueError(f"{where}: distributions for unknown inputs {sorted(unknown)}")

    # --- queries ---------------------------------------------------------------

    def all_cases(self) -> list[Case]:
        return [self.example, *self.functional, self.performance]

    def inputs(self) -> list[Arg]:
        return [a for a in self.signature if a.role == "in"]

    def outputs(self) -> list[Arg]:
        return [a for a in self.signature if a.role == "out"]

    def shape_of(self, arg: Arg, case: Case) -> list[int]:
        return [case.dims[d] for d in arg.shape]

    def distribution_of(self, arg: Arg, case: Case):
        return case.inputs.get(arg.name, case.distribution)

    def case(self, name: str) -> Case:
        for c in self.all_cases():
            if c.name == name:
                return c
        raise KeyError(name)

    def trials(self, case: Case) -> int:
        """How many input sets a case is run with. Tiny random outputs get
        several, so that statistical checks (TF32 detection) see enough
        elements; fixed-value cases need only one."""
        if case.trials is not None:
            return case.trials
        if not all(self.distribution_of(a, case).kind in RANDOM_KINDS for a in self.inputs()):
            return 1
        return trials_for(sum(math.prod(self.shape_of(a, case)) for a in self.outputs()), self.work(case))

    def work(self, case: Case) -> int:
        return math.prod(case.dims.values())

    def fits_cpu(self, case: Case) -> str | None:
        """None if the case runs under the interpreter, else the reason it is skipped."""
        elements = sum(math.prod(self.shape_of(a, case)) for a in self.outputs())
        if elements > self.cpu_limits.max_output_elements:
            return (f"skipped on CPU: {elements:,} output elements exceed the interpreter "
                    f"cap of {self.cpu_limits.max_output_elements:,}; grade on a GPU")
        if self.work(case) > self.cpu_limits.max_work:
            return (f"skipped on CPU: {self.work(case):,} multiply-adds exceed the interpreter "
                    f"cap of {self.cpu_limits.max_work:,}; grade on a GPU")
        return None

    def flop_count(self, case: Case) -> float:
        return float(eval(self.flops, {"__builtins__": {}}, dict(case.dims)))  # trusted file

    def shape_label(self, case: Case) -> str:
        return "×".join(str(case.dims[d]) for d in self.constraints)

    def statement(self) -> str:
        assert self.folder is not None
        return (self.folder / self.statement_file).read_text()

    def starter(self) -> str:
        assert self.folder is not None
        return (self.folder / self.starter_file).read_text()

    def reference_fn(self) -> Callable:
        module, _, attr = self.reference.partition(":")
        return getattr(importlib.import_module(module), attr)


# --- loading -----------------------------------------------------------------

def challenges_dir() -> Path:
    """The folder of challenges: $JUDGE_CHALLENGES_DIR, else the repository's."""
    env = os.environ.get("JUDGE_CHALLENGES_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "challenges"


def available() -> list[str]:
    root = challenges_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "challenge.toml").is_file())


def load(name: str) -> Challenge:
    folder = challenges_dir() / name
    path = folder / "challenge.toml"
    if not path.is_file():
        known = ", ".join(available()) or "none found"
        raise UsageError(f"unknown challenge {name!r} (available: {known})")
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    challenge = Challenge.model_validate({**data, "folder": folder})
    if challenge.name != name:
        raise UsageError(f"{path} declares name {challenge.name!r}, expected {name!r}")
    return challenge
