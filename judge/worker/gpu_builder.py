"""CPU mode: builder operations that Triton's interpreter refuses or gets
wrong, made to do what the GPU does exactly (installed by
judge.worker.interpret, before the file is imported)."""

from __future__ import annotations

import numpy as np


def float_exchange(interpreter) -> None:
    """tl.atomic_xchg on float32 and float64: Triton's interpreter refuses
    the type ('Unsupported data type': compile_error on an honest ticket or
    barrier kernel) where the GPU swaps the bits. Swapped here as integers
    of the same width, bit for bit."""
    builder = interpreter.InterpreterBuilder
    rmw = builder.create_atomic_rmw
    widths = {4: interpreter.tl.int32, 8: interpreter.tl.int64}

    def create_atomic_rmw(self, op, ptr, val, mask, sem, scope):
        data = np.asarray(val.data)
        if "XCHG" in str(op).upper() and data.dtype.kind == "f" and data.dtype.itemsize in widths:
            bits = interpreter.TensorHandle(data.view(f"int{8 * data.dtype.itemsize}"), widths[data.dtype.itemsize])
            old = rmw(self, op, ptr, bits, mask, sem, scope)
            return interpreter.TensorHandle(np.asarray(old.data).view(data.dtype), val.dtype.scalar)
        return rmw(self, op, ptr, val, mask, sem, scope)

    builder.create_atomic_rmw = create_atomic_rmw


def int_to_pointer_untagged(interpreter) -> None:
    """An address cast to a pointer in a kernel (LeetGPU's raw-pointer
    starter: a.data_ptr() passed as an int, then .to(tl.pointer_type(...)),
    or bitcast) is the tensor's address on a GPU. The CPU mode hands the
    file addresses tagged (judge.worker.gates.ADDRESS_TAG, so that host code
    cannot use them), and the interpreter's cast kept the tag: the kernel
    read outside memory and the worker died. The tag is cleared where a
    kernel makes the pointer, and the storage it names may then be written
    (judge.worker.write_bounds); an address without the tag grants nothing."""
    from judge.worker import write_bounds
    bitcast = interpreter.InterpreterBuilder.create_bitcast

    def untagged(src):
        data = np.asarray(src.data)
        if data.dtype.kind in "iu" and data.dtype.itemsize == 8:
            return interpreter.TensorHandle(write_bounds.grant(data), src.dtype)
        return src

    def create_int_to_ptr(self, src, dst_type):
        return bitcast(self, untagged(src), dst_type)

    def create_bitcast(self, src, dst_type):
        if getattr(dst_type, "is_ptr", lambda: False)():
            src = untagged(src)
        return bitcast(self, src, dst_type)

    interpreter.InterpreterBuilder.create_int_to_ptr = create_int_to_ptr
    interpreter.InterpreterBuilder.create_bitcast = create_bitcast
