"""CPU-mode patches for Triton's interpreter, installed in the worker only.

The interpreter computes tl.dot exactly in float32, but an Ampere-or-newer
GPU rounds float32 dot inputs to TF32 unless the kernel asks for "ieee". We
reproduce that rounding so that a kernel using the default tl.dot gets on a
laptop the wrong_answer it would get on an H100. Hopper's tensor cores take
the top 19 bits of each float32 and drop the rest (truncation; measured in
bench/device_probe.py), which is what we emulate.

@triton.autotune cannot benchmark without a GPU ("0 active drivers"); on CPU
every config is taken to cost the same, so the first (valid) config runs.
"""

from __future__ import annotations

import numpy as np

TF32_MASK = np.uint32(0xFFFFE000)  # keep sign, exponent and 10 mantissa bits


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(x, dtype=np.float32).view(np.uint32) & TF32_MASK).view(np.float32)


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

    def equal_cost(self, *args, config, **meta):
        return [0.0, 0.0, 0.0]

    def no_disk_cache(self, tuning_key, configs, bench_fn):
        bench_fn()
        return False

    autotuner.Autotuner._bench = equal_cost
    autotuner.Autotuner.check_disk_cache = no_disk_cache
