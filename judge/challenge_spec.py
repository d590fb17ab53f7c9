"""The parts of a challenge.toml (judge.challenge assembles them): the
arguments of solve, the cases, the tolerance policies, the work measures,
the interpreter's limits and the performance scale, each a strict pydantic
model."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .distributions import Distribution


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def trials_for(output_elements: int, work: int = 1) -> int:
    """Input sets for a random case: enough for ~256 output elements (so the
    normwise statistics that see TF32 have something to average), at most 32,
    and fewer when each one is costly (~1M multiply-adds in all)."""
    wanted = math.ceil(256 / max(1, output_elements))
    return max(1, min(32, wanted, (1 << 20) // max(1, work)))


# --- signature and cases ------------------------------------------------------

class Arg(_Strict):
    name: str
    # in: read only (checked unchanged); out: written; inout: read and written
    # in place; dim: an int
    role: Literal["in", "out", "inout", "dim"]
    shape: list[str | int] = []  # dimension names, integers or expressions over the dimensions
    dtype: Literal["float32", "int32"] = "float32"

    @model_validator(mode="after")
    def _shape_matches_role(self):
        if self.role == "dim" and self.shape:
            raise ValueError(f"dimension argument {self.name!r} cannot have a shape")
        if self.role != "dim" and not self.shape:
            raise ValueError(f"tensor argument {self.name!r} needs a shape")
        return self

    @property
    def is_tensor(self) -> bool:
        return self.role != "dim"


class Case(_Strict):
    name: str
    dims: dict[str, int]
    inputs: dict[str, Distribution] = {}  # per input argument; overrides `distribution`
    distribution: Distribution | None = None  # default for every input
    trials: int | None = Field(default=None, ge=1, le=32)
    note: str = ""
    # Explicit shape of each tensor argument, for challenges whose shapes are
    # not expressions over the dimensions (LeetGPU folders: from their tests).
    shapes: dict[str, list[int]] | None = None
    # The name the case's data seeds are drawn under (default its own name):
    # cases sharing one share their seeds (one generator call serves them).
    seed_name: str | None = None


class PolicySpec(_Strict):
    """A named tolerance policy: checkers that must all pass (judge.checkers),
    and, where the arithmetic it admits is another than the challenge's
    [scoring] assumes, the performance scale of kernels it accepts (matrix
    multiplication: a float32-accurate kernel is not scored against TF32's
    speed, which it can never reach)."""

    summary: str = ""
    checkers: list[dict[str, Any]] = Field(min_length=1)
    scoring: "ScoringDefaults | None" = None


class Tolerance(_Strict):
    default_policy: str
    policies: dict[str, PolicySpec]

    @model_validator(mode="after")
    def _default_exists(self):
        if self.default_policy not in self.policies:
            raise ValueError(f"default_policy {self.default_policy!r} is not among the policies "
                             f"{sorted(self.policies)}")
        return self

    @property
    def allowed_policies(self) -> list[str]:
        return list(self.policies)


class Work(_Strict):
    """What one call does, for the report (expressions over the dimensions)."""

    flops: str | None = None  # floating-point operations: TFLOPS
    bytes: str | None = None  # bytes a call must move at least: GB/s, % of the GPU's bandwidth
    cpu: str | None = None  # the interpreter's cost measure; default the product of the dimensions


class CpuLimits(_Strict):
    """Cases larger than this are skipped under Triton's interpreter."""

    max_output_elements: int = 512 * 512
    max_work: int = 512 * 512 * 512


class Rules(_Strict):
    """What solve may not ask torch for in this challenge, beyond the rules
    every challenge has (judge.worker.rules): operators that everywhere else
    only move data, where moving the data is the job (a copy, a transpose)."""

    refused_ops: list[str] = []  # aten operator names, such as "copy_", "clone", "_to_copy"
    # torch's copies may copy whole tensors only (a scratch clone of an
    # argument), never part of one: where the job is moving data and copies
    # of parts of a tensor would do it (a reversal by swapping halves).
    whole_copies_only: bool = False
    why: str = "this challenge's job"  # said in the rule's message

    @model_validator(mode="after")
    def _why_given(self):
        if (self.refused_ops or self.whole_copies_only) and not self.why.strip():
            raise ValueError("rules.why must say why refused_ops are refused")
        return self


class ScoringDefaults(_Strict):
    """The challenge's performance scale: latency of `floor` × floor_multiple
    earns no performance points, that of `target` × target_multiple all."""

    floor: str
    target: str
    floor_multiple: float = Field(1.0, gt=0)
    target_multiple: float = Field(1.0, gt=0)


PolicySpec.model_rebuild()
