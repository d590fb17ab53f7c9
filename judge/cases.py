"""Seeds, the install secret, and input generation from a case spec.

Case data comes from a seed mixed with a secret that is not in the
repository, so nobody can precompute answers from the public case list; the
run seed (printed in every report, or given with --seed) reproduces a run on
the same install and device. Both sides of the process boundary call
`make_inputs` with the same arguments and get bit-identical tensors: the
worker for running the submission, the judge for computing the truth.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import UsageError

if TYPE_CHECKING:  # imported where used: starting a grading's workers must not wait for torch
    import torch

SECRET_ENV = "JUDGE_SECRET"


def secret_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "tritonjudge" / "secret"


def load_secret() -> bytes:
    """$JUDGE_SECRET if set, else a per-install secret created on first use."""
    env = os.environ.get(SECRET_ENV)
    if env:
        return env.encode()
    path = secret_path()
    try:
        value = path.read_bytes().strip()
    except FileNotFoundError:
        value = None
    if value:
        return value
    if value is not None:
        raise UsageError(f"the secret file {path} is empty: delete it and a new one is made, "
                         f"or set ${SECRET_ENV}")
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written whole to a private temporary file, then linked into place: a
    # reader never sees a half-written secret, and of two judges starting at
    # once the first link wins and both use it.
    tmp = path.with_name(f".secret-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(secrets.token_hex(32).encode())
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return path.read_bytes().strip()


def new_run_seed() -> int:
    return secrets.randbelow(2**31)


def case_seed(secret: bytes, challenge: str, run_seed: int, case: str, trial: int) -> int:
    text = f"{challenge}\x00{run_seed}\x00{case}\x00{trial}".encode()
    digest = hashlib.sha256(secret + b"\x00" + text).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def call_seed(base: int, call: int) -> int:
    """The seed of the inputs of timed call number `call` (fresh data each call)."""
    digest = hashlib.sha256(f"{base}\x00call\x00{call}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def _arg_seed(seed: int, arg: str) -> int:
    digest = hashlib.sha256(f"{seed}\x00{arg}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def generate(dist: dict, shape: list[int], seed: int, device: str, dtype: str = "float32",
             out: torch.Tensor | None = None) -> torch.Tensor:
    """One tensor drawn from a distribution given as its dict form (the
    worker receives plain JSON, not pydantic models). With `out` (a
    contiguous tensor of `shape` and the draw's dtype), the draw is written
    there and `out` returned: the same values as without it, and for the
    random kinds one pass over memory instead of several (a timed call's
    fresh inputs are drawn between calls: judge.timing)."""
    import torch
    kind = dist["kind"]
    torch_dtype = getattr(torch, dtype)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    if kind in ("uniform", "normal"):
        # float32 always; drawn in place, in one kernel, as torch.rand/randn would.
        in_place = out is not None and out.dtype == torch.float32 and out.is_contiguous()
        target = out if in_place else torch.empty(shape, device=device, dtype=torch.float32)
        if kind == "uniform":
            value = target.uniform_(float(dist["low"]), float(dist["high"]), generator=gen)
            if dist.get("max_condition"):
                _redraw_while_cancelling(value, dist, gen)
        else:
            value = target.normal_(float(dist.get("mean", 0.0)), float(dist.get("std", 1.0)), generator=gen)
    elif kind == "signed_log_uniform":
        lo, hi = float(dist["min_exp"]), float(dist["max_exp"])
        u = torch.rand(shape, generator=gen, device=device, dtype=torch.float64)
        sign = torch.rand(shape, generator=gen, device=device, dtype=torch.float64) < 0.5
        mag = torch.pow(10.0, u * (hi - lo) + lo)
        value = torch.where(sign, -mag, mag).to(torch.float32)
    elif kind == "randint":
        value = torch.randint(int(dist["low"]), int(dist["high"]) + 1, shape, generator=gen, device=device,
                              dtype=torch.int64).to(torch_dtype)
    elif kind == "zeros":
        value = torch.zeros(shape, device=device, dtype=torch_dtype)
    elif kind == "constant":
        value = torch.full(shape, float(dist["value"]), device=device, dtype=torch.float64).to(torch_dtype)
    elif kind == "arange":
        n = 1
        for d in shape:
            n *= d
        start, step = float(dist.get("start", 0.0)), float(dist.get("step", 1.0))
        values = torch.arange(n, device=device, dtype=torch.float64) * step + start
        value = values.reshape(shape).to(torch_dtype)
    elif kind == "identity":
        value = torch.eye(shape[0], shape[1], device=device, dtype=torch_dtype)
    elif kind == "values":
        value = torch.tensor(dist["values"], device=device, dtype=torch.float64).reshape(shape).to(torch_dtype)
    elif kind == "leetgpu":
        raise ValueError("a LeetGPU generator draws a whole test at once: make_inputs with the plan's generator")
    else:
        raise ValueError(f"unknown distribution kind {kind!r}")
    return value if out is None or value is out else out.copy_(value)


MAX_REDRAWS = 64


def _redraw_while_cancelling(value, dist: dict, gen) -> None:
    """Draw `value` again, in place, until Σ|x| ≤ max_condition·|Σx| (in
    float64): judge.distributions.Uniform says why."""
    limit = float(dist["max_condition"])
    for _ in range(MAX_REDRAWS):
        wide = value.double()
        if float(wide.abs().sum()) <= limit * abs(float(wide.sum())):
            return
        value.uniform_(float(dist["low"]), float(dist["high"]), generator=gen)
    raise ValueError(f"uniform({dist['low']}, {dist['high']}) gave no draw with Σ|x| ≤ {limit:g}·|Σx| in "
                     f"{MAX_REDRAWS} tries: the case's max_condition is too tight for its distribution")


class Inputs(dict):
    """make_inputs' result: the input tensors by name, and the plan they were
    built from (a reference that needs the outputs' shapes or the dimensions
    reads them there: judge.leetgpu)."""

    def __init__(self, values: dict, plan: dict):
        super().__init__(values)
        self.plan = plan


def make_inputs(plan: dict, seed: int, device: str) -> Inputs:
    """Inputs (the initial values of `in` and `inout` arguments) for one trial
    of a case. `plan` is `input_plan(...)`'s output. A plan with a
    `generator` (a LeetGPU challenge) draws them all from the challenge's own
    test generator, seeded."""
    if plan.get("generator"):
        from . import leetgpu
        return Inputs(leetgpu.make_inputs(plan, seed, device), plan)
    return Inputs({
        name: generate(spec["distribution"], spec["shape"], _arg_seed(seed, name), device,
                       spec.get("dtype", "float32"))
        for name, spec in plan["inputs"].items()
    }, plan)


def refill_inputs(plan: dict, seed: int, device: str, views: dict[str, torch.Tensor]) -> None:
    """Write make_inputs(plan, seed, device)'s values into `views` (by name,
    tensors on that device): the same values, drawn in place where the
    distribution allows (judge.timing's fresh inputs before each call)."""
    if plan.get("generator"):
        values = make_inputs(plan, seed, device)
        for name, view in views.items():
            view.copy_(values[name])
        return
    for name, view in views.items():
        spec = plan["inputs"][name]
        generate(spec["distribution"], spec["shape"], _arg_seed(seed, name), device,
                 spec.get("dtype", "float32"), out=view)


def input_plan(challenge, case) -> dict:
    """Everything needed to build a case's tensors, as plain JSON-able data."""
    return {
        "inputs": {
            arg.name: {
                "shape": challenge.shape_of(arg, case),
                "dtype": arg.dtype,
                "role": arg.role,
                "distribution": challenge.distribution_of(arg, case).model_dump(),
            }
            for arg in challenge.inputs()
        },
        "outputs": {arg.name: {"shape": challenge.shape_of(arg, case), "dtype": arg.dtype, "role": arg.role}
                    for arg in challenge.outputs()},
        "call": [
            {"name": arg.name, "role": arg.role, "value": case.dims[arg.name] if arg.role == "dim" else None}
            for arg in challenge.signature
        ],
        # A challenge that draws its inputs with its own code (judge.leetgpu)
        # says how: the code travels with the plan, so the worker needs no
        # access to where it came from.
        "generator": challenge.generator_spec(case) if hasattr(challenge, "generator_spec") else None,
    }


# The weights' mixer (splitmix64's finaliser, on signed 64-bit integers, as
# torch and Triton both compute it): every bit of an index moves every bit of
# its hash. A multiplicative hash read at bit 13 had depended on the index
# modulo 2^14 alone: a matmul's weights then repeated every few rows, and a
# file met both sums of a faked call with O(MN + NK) work (accepted, 100 points).
WEIGHT_SEED = -7046029254386353131  # 0x9E3779B97F4A7C15 as a signed 64-bit integer
WEIGHT_MUL_1 = -4658895280553007687  # 0xBF58476D1CE4E5B9
WEIGHT_MUL_2 = -7723592293110705685  # 0x94D049BB133111EB
WEIGHT_BIT = 29


def check_weights(n: int, device) -> torch.Tensor:
    """±1 weights by element position, the same on both sides: a timed call's
    output is summed with them (as well as plainly), so an output that holds
    the right values in the wrong places (an in-place reverse that did
    nothing, a stale permutation) still changes its check sum, and so that
    the weighted sum costs as much as the work itself (the weights have no
    structure a shortcut could use: WEIGHT_SEED)."""
    import torch
    z = torch.arange(n, device=device, dtype=torch.int64) + WEIGHT_SEED
    z = (z ^ (z >> 30)) * WEIGHT_MUL_1
    z = (z ^ (z >> 27)) * WEIGHT_MUL_2
    bits = ((z ^ (z >> 31)) >> WEIGHT_BIT) & 1
    return (1 - 2 * bits).to(torch.float64)
