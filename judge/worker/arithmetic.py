"""CPU mode: arithmetic as the GPU does it, where the interpreter's numpy
differs (each difference gave a verdict the H100 does not give; fixtures
fma_rounding_error, honest_fixed_point_sign, honest_dot_bf16x6,
contracted_product_error).
"""

from __future__ import annotations

import numpy as np

PRODUCT = "judge_product"  # a TensorHandle's attr: the float operands of the multiply that made it
_FUSED = (np.float32, np.float16)  # the types whose multiply and add the GPU fuses into one fma


# A value broadcast from an expand_dims (x[:, :, None], tl.expand_dims(x, 2)):
# the axis it inserted. The GPU compiler turns a sum over axis 1 of a product
# of two such values into a TF32 dot only when the multiply's first operand
# was expanded at axis 2 and its second at axis 0, each broadcast straight
# from the expand_dims (CombineBroadcastMulReducePattern); the same numbers
# made by tl.reshape, or multiplied the other way round, stay float32 there.
EXPANDED = "judge_broadcast_of_expanded"
PRODUCT_EXPANDED = "judge_product_expanded"  # a product's: its operands' EXPANDED, in order
_JUST_EXPANDED = "judge_expanded"


def product_operands(handle):
    """The operands of the float multiply that made this value, if it was one."""
    return handle.attr.get(PRODUCT) if isinstance(handle.attr, dict) else None


def product_expansions(handle) -> tuple | None:
    """(first operand's, second operand's) expand_dims axis, each None
    where that operand was not broadcast straight from an expand_dims."""
    return handle.attr.get(PRODUCT_EXPANDED) if isinstance(handle.attr, dict) else None


def _attr(handle) -> dict:
    return handle.attr if isinstance(getattr(handle, "attr", None), dict) else {}


def _rounded_once(interpreter, x, y, z, like):
    """x * y + z with one rounding, to `like`'s type: float32 (and float16)
    products are exact in float64, so only the final cast rounds."""
    wide = np.asarray(x, np.float64) * np.asarray(y, np.float64) + np.asarray(z, np.float64)
    return interpreter.TensorHandle(wide.astype(np.asarray(like.data).dtype), like.dtype.scalar)


def install(interpreter) -> None:
    """Where the interpreter's numpy arithmetic differs from the GPU's:
    - tl.fma rounds once on a GPU (x * y + z in numpy rounds twice: an
      fma(a, b, -a * b), the product's rounding error, was 0);
    - a float converted to an integer saturates (cvt.rzi: out of range,
      the nearest end; NaN, 0), where numpy's cast wraps to INT_MIN;
    - tl.dot's bf16x3 and bf16x6 precisions, which the CUDA backend allows
      and the interpreter refused. bf16x6 is computed as IEEE float32 (about
      as exact); bf16x3 as the GPU does it, each operand split into a
      bfloat16 high part and a bfloat16 low part, and hi*lo + lo*hi + hi*hi
      summed in float32 (as IEEE float32 it was accepted on the CPU where
      its error, written out in a kernel, failed 23 of 30 cases)."""
    builder = interpreter.InterpreterBuilder

    original_fma = builder.create_fma

    def create_fma(self, x, y, z):
        if np.asarray(z.data).dtype in _FUSED:
            return _rounded_once(interpreter, x.data, y.data, z.data, z)
        return original_fma(self, x, y, z)

    def saturating(original):
        def convert(self, src, dst_type):
            np_type = interpreter._get_np_dtype(dst_type)
            data = np.asarray(src.data)
            if data.dtype.kind == "f" and np.dtype(np_type).kind in "iu":
                info = np.iinfo(np_type)
                wide = np.nan_to_num(data.astype(np.float64), nan=0.0)
                high, low = wide >= float(info.max), wide <= float(info.min)
                out = np.asarray(np.where(high | low, 0.0, wide).astype(np_type))
                out[high], out[low] = info.max, info.min
                return interpreter.TensorHandle(out, dst_type.scalar)
            return original(self, src, dst_type)
        return convert

    builder.create_fma = create_fma
    _contract(interpreter)
    builder.create_fp_to_si = saturating(builder.create_fp_to_si)
    builder.create_fp_to_ui = saturating(builder.create_fp_to_ui)
    import dataclasses
    made = interpreter.interpreter_builder
    made.options = dataclasses.replace(made.options, allowed_dot_input_precisions=tuple(
        made.options.allowed_dot_input_precisions) + ("bf16x3", "bf16x6"))
    original_dot = builder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        from triton._C.libtriton import ir
        extra = [getattr(ir.INPUT_PRECISION, n, None) for n in ("BF16x3", "BF16x6")]
        if input_precision is not None and input_precision in extra:
            ieee = ir.INPUT_PRECISION.IEEE
            if input_precision == extra[0] and np.asarray(a.data).dtype == np.float32:
                (a_hi, a_lo), (b_hi, b_lo) = _bf16_split(interpreter, a), _bf16_split(interpreter, b)
                d = original_dot(self, a_lo, b_hi, d, ieee, max_num_imprecise_acc)
                d = original_dot(self, a_hi, b_lo, d, ieee, max_num_imprecise_acc)
                return original_dot(self, a_hi, b_hi, d, ieee, max_num_imprecise_acc)
            input_precision = ieee
        return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)

    builder.create_dot = create_dot


def _bf16_split(interpreter, handle):
    """A float32 operand as (high, low): its bfloat16 rounding (to nearest,
    ties to even) and the bfloat16 rounding of what is left."""
    def to_bf16(x):
        bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32)

    data = np.asarray(handle.data, dtype=np.float32)
    high = to_bf16(data)
    low = to_bf16(data - high)
    return (interpreter.TensorHandle(high, handle.dtype.scalar), interpreter.TensorHandle(low, handle.dtype.scalar))


def _contract(interpreter) -> None:
    """Triton 3.6 compiles with floating-point fusion on (enable_fp_fusion):
    a multiply whose result an add or subtract takes becomes one fma, one
    rounding (x * y - x * y is the product's rounding error there, not 0).
    The interpreter rounds the product first; here the add takes the
    product's operands and rounds once, as the fused instruction does."""
    builder = interpreter.InterpreterBuilder
    original_fmul, original_fadd, original_fsub = builder.create_fmul, builder.create_fadd, builder.create_fsub

    original_expand, original_broadcast = builder.create_expand_dims, builder.create_broadcast

    def create_expand_dims(self, arg, axis):
        out = original_expand(self, arg, axis)
        if isinstance(out.attr, dict):
            out.attr[_JUST_EXPANDED] = int(axis) % max(np.ndim(out.data), 1)
        return out

    def create_broadcast(self, arg, shape):
        out = original_broadcast(self, arg, shape)
        if isinstance(out.attr, dict) and _JUST_EXPANDED in _attr(arg):
            out.attr[EXPANDED] = _attr(arg)[_JUST_EXPANDED]
        return out

    def create_fmul(self, lhs, rhs):
        product = original_fmul(self, lhs, rhs)
        if np.asarray(product.data).dtype in _FUSED and isinstance(product.attr, dict):
            product.attr[PRODUCT] = (lhs.data, rhs.data)
            product.attr[PRODUCT_EXPANDED] = (_attr(lhs).get(EXPANDED), _attr(rhs).get(EXPANDED))
        return product

    def create_fadd(self, lhs, rhs):
        result = original_fadd(self, lhs, rhs)
        if np.asarray(result.data).dtype in _FUSED:
            made = product_operands(lhs)
            if made is not None:
                return _rounded_once(interpreter, *made, rhs.data, result)
            made = product_operands(rhs)
            if made is not None:
                return _rounded_once(interpreter, *made, lhs.data, result)
        return result

    def create_fsub(self, lhs, rhs):
        result = original_fsub(self, lhs, rhs)
        if np.asarray(result.data).dtype in _FUSED:
            made = product_operands(lhs)
            if made is not None:
                return _rounded_once(interpreter, *made, -np.asarray(rhs.data, np.float64), result)
            made = product_operands(rhs)
            if made is not None:
                return _rounded_once(interpreter, -np.asarray(made[0], np.float64), made[1], lhs.data, result)
        return result

    builder.create_fmul, builder.create_fadd, builder.create_fsub = create_fmul, create_fadd, create_fsub
    builder.create_expand_dims, builder.create_broadcast = create_expand_dims, create_broadcast

