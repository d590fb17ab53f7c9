"""Input distributions a challenge's cases may name (validated here, on the
trusted side; the worker receives their plain dict form and draws from them
with judge.cases.generate)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    random: ClassVar[bool] = False  # drawn from a seed (several trials make sense)

    def describe(self) -> str:
        return self.kind  # type: ignore[attr-defined]


class Uniform(_Strict):
    """Uniform in [low, high). With `max_condition`, a draw whose values cancel
    so far that Σ|x| > max_condition·|Σx| is drawn again (the generator runs
    on): a sum that lands near zero is judged by a relative tolerance that an
    honest float32 kernel, summing in another order, cannot meet."""

    kind: Literal["uniform"]
    low: float
    high: float
    max_condition: float | None = Field(None, gt=1)
    random: ClassVar[bool] = True

    @model_validator(mode="after")
    def _ordered(self):
        if not self.low < self.high:
            raise ValueError(f"uniform needs low < high, got [{self.low}, {self.high}]")
        return self

    def describe(self) -> str:
        kept = f", Σ|x| ≤ {self.max_condition:g}·|Σx|" if self.max_condition else ""
        return f"uniform({self.low:g}, {self.high:g}{kept})"


class Normal(_Strict):
    kind: Literal["normal"]
    mean: float = 0.0
    std: float = Field(1.0, gt=0)
    random: ClassVar[bool] = True

    def describe(self) -> str:
        return f"normal({self.mean:g}, {self.std:g})"


class SignedLogUniform(_Strict):
    """Random sign times 10**uniform(min_exp, max_exp): magnitudes spread over
    many decades, the regime where relative-error checks are most fragile."""

    kind: Literal["signed_log_uniform"]
    min_exp: float
    max_exp: float
    random: ClassVar[bool] = True

    @model_validator(mode="after")
    def _ordered(self):
        if not self.min_exp <= self.max_exp:
            raise ValueError(f"signed_log_uniform needs min_exp <= max_exp, got {self.min_exp} > {self.max_exp}")
        return self

    def describe(self) -> str:
        return f"±10^uniform({self.min_exp:g}, {self.max_exp:g})"


class RandInt(_Strict):
    """Integers uniform in [low, high] (both included)."""

    kind: Literal["randint"]
    low: int
    high: int
    random: ClassVar[bool] = True

    @model_validator(mode="after")
    def _ordered(self):
        if not self.low <= self.high:
            raise ValueError(f"randint needs low <= high, got [{self.low}, {self.high}]")
        return self

    def describe(self) -> str:
        return f"randint({self.low}, {self.high})"


class Zeros(_Strict):
    kind: Literal["zeros"]


class Identity(_Strict):
    kind: Literal["identity"]


class Constant(_Strict):
    kind: Literal["constant"]
    value: float

    def describe(self) -> str:
        return f"constant {self.value:g}"


class Arange(_Strict):
    """start, start + step, ... in row-major order."""

    kind: Literal["arange"]
    start: float = 0.0
    step: float = 1.0

    def describe(self) -> str:
        return f"arange(start={self.start:g}, step={self.step:g})"


class Values(_Strict):
    """Fixed values, row-major, as (nested) lists of the argument's shape."""

    kind: Literal["values"]
    values: list[Any]

    def describe(self) -> str:
        return "fixed values"

    def shape(self) -> list[int]:
        shape, level = [], self.values
        while isinstance(level, list):
            shape.append(len(level))
            level = level[0] if level else None
        return shape

    def is_regular(self) -> bool:
        shape = self.shape()

        def check(level, depth):
            if depth == len(shape):
                return not isinstance(level, list)
            return isinstance(level, list) and len(level) == shape[depth] and all(check(x, depth + 1) for x in level)

        return check(self.values, 0)


class Generated(_Strict):
    """Drawn by a challenge's own test generator (a LeetGPU challenge folder,
    judge.leetgpu): test `test` ("example", "functional" or "performance"),
    number `index` of the list for functional tests. Both sides rebuild it
    from the plan's generator and the seed (judge.cases.make_inputs)."""

    kind: Literal["leetgpu"]
    test: Literal["example", "functional", "performance"]
    index: int = Field(0, ge=0)
    random: ClassVar[bool] = True

    def describe(self) -> str:
        if self.test == "functional":
            return f"LeetGPU's generator (functional test {self.index + 1})"
        return f"LeetGPU's generator ({self.test} test)"


Distribution = Annotated[
    Union[Uniform, Normal, SignedLogUniform, RandInt, Zeros, Identity, Constant, Arange, Values, Generated],
    Field(discriminator="kind"),
]
