"""CPU mode: a kernel's loop variable is a Triton scalar, as on a GPU.

The GPU compiler turns `for i in range(lo, hi, step)` (or tl.range) into a
loop whose variable is a scalar tensor (int32, int64 where the bounds need
it), so `i.to(tl.int64)` and the like work on it. Triton's interpreter runs
the loop in Python, with a Python int: an honest persistent kernel that
widened its loop variable got compile_error on the CPU and was accepted on
the H100. Here the interpreter's rewrite of each kernel also wraps the
iterator of every such loop, so that the variable is a scalar tensor of
the same type. tl.static_range loops keep Python ints (a constexpr on the
GPU too).
"""

from __future__ import annotations

import ast

import numpy as np

WRAP = "__judge_loop_variables__"  # the wrapper's name in the kernel's globals
INT32 = (-(1 << 31), (1 << 31) - 1)


def loop_variables(numbers: range):
    """Each number of a Python range as the scalar a GPU loop would give."""
    from triton.language import core
    from triton.runtime.interpreter import TensorHandle
    ends = (numbers.start, numbers.stop, numbers.step)
    wide = any(not INT32[0] <= e <= INT32[1] for e in ends)
    kind, np_kind = (core.int64, np.int64) if wide else (core.int32, np.int32)
    for number in numbers:
        yield core.tensor(TensorHandle(np.array(number, dtype=np_kind), kind), kind)


class _WrapRanges(ast.NodeTransformer):
    def visit_For(self, node: ast.For):
        self.generic_visit(node)
        call = node.iter
        if isinstance(node.target, ast.Name) and isinstance(call, ast.Call) and _is_range(call.func):
            node.iter = ast.Call(func=ast.Name(id=WRAP, ctx=ast.Load()), args=[call], keywords=[])
        return node


def _is_range(func) -> bool:
    """`range(...)` or `<something>.range(...)` (tl.range), not static_range."""
    return (isinstance(func, ast.Name) and func.id == "range") or \
        (isinstance(func, ast.Attribute) and func.attr == "range")


def install() -> None:
    from triton.runtime import interpreter
    rewriter = getattr(interpreter, "FunctionRewriter", None)
    original = getattr(rewriter, "_transform_ast", None)
    if original is None:  # another Triton: loop variables stay ints
        return

    def _transform_ast(self, src):
        tree = ast.fix_missing_locations(_WrapRanges().visit(original(self, src)))
        self.fn.__globals__.setdefault(WRAP, loop_variables)  # where the rewritten kernel is run
        return tree

    rewriter._transform_ast = _transform_ast
