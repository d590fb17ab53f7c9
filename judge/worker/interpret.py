"""CPU-mode patches for Triton's interpreter, installed in the worker only.

The interpreter computes tl.dot exactly in float32, but an Ampere-or-newer
GPU rounds float32 dot inputs to TF32 unless the kernel asks for "ieee". We
reproduce that rounding so that a kernel using the default tl.dot gets on a
laptop the wrong_answer it would get on an H100. Hopper's tensor cores take
the top 19 bits of each float32 and drop the rest (truncation; measured in
bench/device_probe.py), which is what we emulate.

The GPU compiler also rewrites a broadcast multiply-and-sum,
tl.sum(x[:, :, None] * y[None, :, :], axis=1), into a tl.dot at its default
(TF32) precision (measured on the H100: 7e-4 relative error for a kernel
without any tl.dot). The interpreter multiplies such broadcasts in float32;
we round their operands to TF32 as the GPU's rewritten dot does, when the
tile is large enough for tensor cores (every dimension ≥ 16).

@triton.autotune cannot benchmark without a GPU ("0 active drivers"); on CPU
every config is taken to cost the same, so the first (valid) config runs.
"""

from __future__ import annotations

import numpy as np

TF32_MASK = np.uint32(0xFFFFE000)  # keep sign, exponent and 10 mantissa bits


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & TF32_MASK).view(np.float32)


def _outer_broadcast(x, y) -> bool:
    """x[:, :, None] * y[None, :, :] broadcast to (M, K, N), M, K, N ≥ 16:
    the product the GPU compiler turns into a TF32 dot when it is summed
    over its middle axis."""
    return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == np.float32
            and y.dtype == np.float32 and x.ndim == 3 and y.ndim == 3 and x.shape == y.shape
            and min(x.shape) >= 16 and x.strides[2] == 0 and y.strides[0] == 0
            and x.strides[1] != 0 and y.strides[1] != 0)


def install(emulate_tf32: bool = True) -> None:
    from triton._C.libtriton import ir
    from triton.runtime import autotuner, interpreter

    if emulate_tf32:
        builder = interpreter.InterpreterBuilder
        original_dot = builder.create_dot

        def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
            tf32 = input_precision == ir.INPUT_PRECISION.TF32
            if tf32 and a.data.dtype == np.float32 and b.data.dtype == np.float32:
                a = interpreter.TensorHandle(round_to_tf32(a.data), a.dtype.scalar)
                b = interpreter.TensorHandle(round_to_tf32(b.data), b.dtype.scalar)
            return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

        builder.create_dot = create_dot
        original_fmul = builder.create_fmul

        def create_fmul(self, lhs, rhs):
            if _outer_broadcast(lhs.data, rhs.data):
                lhs = interpreter.TensorHandle(round_to_tf32(lhs.data), lhs.dtype.scalar)
                rhs = interpreter.TensorHandle(round_to_tf32(rhs.data), rhs.dtype.scalar)
            return original_fmul(self, lhs, rhs)

        builder.create_fmul = create_fmul

    def equal_cost(self, *args, config, **meta):
        return [0.0, 0.0, 0.0]

    def no_disk_cache(self, tuning_key, configs, bench_fn):
        bench_fn()
        return False

    autotuner.Autotuner._bench = equal_cost
    autotuner.Autotuner.check_disk_cache = no_disk_cache
