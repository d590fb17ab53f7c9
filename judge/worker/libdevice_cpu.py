"""CPU mode: libdevice's math functions for Triton's interpreter.

`triton.language.extra.libdevice` (and `.extra.cuda.libdevice`) hold stubs: the GPU compiler
calls NVIDIA's libdevice function of the same name, and Triton's
interpreter has nothing to call, so `libdevice.exp(x)` gave None and the
kernel failed there (an honest softmax written with it got compile_error
on the CPU and was accepted on the H100). While a kernel runs under the
interpreter the stubs of the floating-point functions are numpy's
(computed in float64, rounded to the argument's type: libdevice's own are
within a few ulps), and put back after the launch, since the GPU front end
(judge.worker.frontend) must see the stubs. A name imported from the
module before (`from ...libdevice import exp`) keeps the stub.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])

# name -> (numpy function, number of arguments)
FUNCTIONS = {
    "exp": (np.exp, 1), "exp2": (np.exp2, 1), "exp10": (lambda x: np.power(10.0, x), 1),
    "expm1": (np.expm1, 1), "log": (np.log, 1), "log2": (np.log2, 1), "log10": (np.log10, 1),
    "log1p": (np.log1p, 1), "sqrt": (np.sqrt, 1), "rsqrt": (lambda x: 1.0 / np.sqrt(x), 1),
    "cbrt": (np.cbrt, 1), "rcp": (lambda x: 1.0 / x, 1),
    "sin": (np.sin, 1), "cos": (np.cos, 1), "tan": (np.tan, 1), "asin": (np.arcsin, 1),
    "acos": (np.arccos, 1), "atan": (np.arctan, 1), "sinh": (np.sinh, 1), "cosh": (np.cosh, 1),
    "tanh": (np.tanh, 1), "asinh": (np.arcsinh, 1), "acosh": (np.arccosh, 1), "atanh": (np.arctanh, 1),
    "erf": (_erf, 1), "erfc": (_erfc, 1),
    "floor": (np.floor, 1), "ceil": (np.ceil, 1), "trunc": (np.trunc, 1), "rint": (np.rint, 1),
    "nearbyint": (np.rint, 1), "round": (_round_half_away, 1), "fabs": (np.abs, 1),
    "saturatef": (lambda x: np.clip(x, 0.0, 1.0), 1),
    "fast_expf": (np.exp, 1), "fast_exp10f": (lambda x: np.power(10.0, x), 1), "fast_logf": (np.log, 1),
    "fast_log2f": (np.log2, 1), "fast_log10f": (np.log10, 1), "fast_sinf": (np.sin, 1),
    "fast_cosf": (np.cos, 1), "fast_tanf": (np.tan, 1),
    "pow": (np.power, 2), "powf": (np.power, 2), "fast_powf": (np.power, 2), "atan2": (np.arctan2, 2),
    "hypot": (np.hypot, 2), "copysign": (np.copysign, 2), "fmod": (np.fmod, 2), "fmin": (np.fmin, 2),
    "fmax": (np.fmax, 2), "fdim": (lambda x, y: np.maximum(x - y, 0.0), 2), "div_rn": (np.divide, 2),
    "fast_dividef": (np.divide, 2), "fma": (lambda x, y, z: x * y + z, 3),
}


def _implementation(numpy_fn, arity: int):
    def call(*args, _semantic=None, **kwargs):
        from triton.language import core
        from triton.runtime.interpreter import TensorHandle
        tensors = [a for a in args if isinstance(a, core.tensor)]
        if len(args) != arity or not tensors or not tensors[0].dtype.is_floating():
            raise NotImplementedError("this libdevice call is not available under Triton's interpreter")
        values = [np.asarray(a.handle.data, dtype=np.float64) if isinstance(a, core.tensor)
                  else float(getattr(a, "value", a)) for a in args]
        with np.errstate(all="ignore"):
            out = np.asarray(numpy_fn(*values))
        scalar = tensors[0].dtype
        data = out.astype(tensors[0].handle.data.dtype)
        kind = core.block_type(scalar, list(data.shape)) if data.shape else scalar
        return core.tensor(TensorHandle(data, scalar), kind)

    return call


_made: dict = {}


MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice")  # either may be imported


@contextlib.contextmanager
def during_launch():
    """libdevice's stubs replaced by numpy's functions for one launch."""
    import sys
    if not _made:
        _made.update({name: _implementation(*spec) for name, spec in FUNCTIONS.items()})
    kept = []
    for module in filter(None, (sys.modules.get(name) for name in MODULES)):
        for name in _made:
            if name in module.__dict__:
                kept.append((module, name, module.__dict__[name]))
                setattr(module, name, _made[name])
    try:
        yield
    finally:
        for module, name, stub in kept:
            setattr(module, name, stub)
