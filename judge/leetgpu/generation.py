"""Generating a test's tensors on a device: the folder's own generator, run
under a fixed seed with CUDA rewritten to the run's device.

Runs on both sides of the trust boundary: the untrusted worker builds the
submission's inputs with it (judge.cases.make_inputs), and the trusted judge
builds them again for the truth, with the same code and seed, so both get
the same tensors."""

from __future__ import annotations

import contextlib
import functools
import random
from typing import Any

from .folder_code import instance, lock

TESTS = {"example": "generate_example_test", "functional": "generate_functional_test",
         "performance": "generate_performance_test"}


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
    import gc

    import torch
    made = instance(code)
    default = torch.device("meta") if str(device) == "meta" else contextlib.nullcontext()
    # In a worker the challenge's code runs as the judge's own (its torch
    # operators are the judge's: judge.worker.audit); no collection runs
    # meanwhile, so no finalizer of the submission's runs as the judge's too.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with seeded(seed, device), on_device(device), default, torch.no_grad():
            return getattr(made, TESTS[test])()
    finally:
        if collecting:
            gc.enable()


_generated: dict[tuple, Any] = {}


def generate(spec: dict, seed: int, device) -> dict:
    """One test's arguments. The last list of functional tests is kept: its
    cases share their seed (Case.seed_name), so one call serves them all."""
    if spec["test"] != "functional":
        return run_generator(spec["bundle"], spec["test"], seed, device)
    key = (spec["bundle"]["key"], spec["test"], seed, str(device))
    with lock:
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
