"""LeetGPUChallenge: our Challenge model (judge.challenge) for a LeetGPU
folder, with its reference, generator spec, CPU cap, starter and statement."""

from __future__ import annotations

import functools
import math

from ..errors import UsageError
from .folder_code import instance
from .reference import call_reference

# Under Triton's interpreter: cases with more tensor elements than this (all
# arguments together) are skipped, as our own challenges skip theirs.
CPU_MAX_ELEMENTS = 1 << 22


@functools.lru_cache(maxsize=None)
def challenge_class():
    import torch
    from pydantic import Field

    from ..challenge import Case, Challenge

    class LeetGPUChallenge(Challenge):
        """A challenge built from a LeetGPU folder (see judge.leetgpu's docstring)."""

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
