"""CPU mode: a kernel's Python, rewritten where the interpreter and the GPU
compiler read it differently.

Loop variables.

The GPU compiler turns `for i in range(lo, hi, step)` (or tl.range) into a
loop whose variable is a scalar tensor (int32, int64 where the bounds need
it), so `i.to(tl.int64)` and the like work on it. Triton's interpreter runs
the loop in Python, with a Python int: an honest persistent kernel that
widened its loop variable got compile_error on the CPU and was accepted on
the H100. Here the interpreter's rewrite of each kernel also wraps the
iterator of every such loop, so that the variable is a scalar tensor of
the same type. tl.static_range loops keep Python ints (a constexpr on the
GPU too).

tl.static_print. The GPU compiler prints its arguments while it compiles:
a block's type, never its values. The interpreter called Python's print
at run time, values and all, through sys.stdout. Here it prints what the
compiler would, to file descriptor 1.

print. The GPU compiler reads `print(...)` in a kernel as tl.device_print,
printf to the process's standard output; the interpreter called Python's
print, through sys.stdout, which solve can swap for a buffer and so read a
block's values back. Here it writes to file descriptor 1, each block's
values formatted by the worker (judge.worker.interpret does the same for
tl.device_print).

Python's own operators on blocks. The GPU compiler gives `and`, `or` and
`not` Triton's meaning when a value is a tensor (element by element:
logical_and, logical_or, __not__; every operand evaluated, constexprs still
short-circuit), `max(...)` and `min(...)` that of tl.maximum and
tl.minimum, `len(...)` of a constexpr that of its value, and an `assert`
that of tl.device_assert (nothing unless the kernel is compiled for debugging). The interpreter ran Python's: `a and b`
on a mask kept one of the two whole, `max(x, 0.0)` one operand whole, and an
assert failed a kernel the GPU runs. Here each is rewritten to a helper
that does what the compiler does.
"""

from __future__ import annotations

import ast
import os
from types import MappingProxyType

import numpy as np

from judge.worker.kernel_output import emit

WRAP = "__judge_loop_variables__"  # the wrappers' names in the kernel's globals
PRINT = "__judge_kernel_print__"
BOOL_OP, NOT, ASSERT = "__judge_bool_op__", "__judge_not__", "__judge_assert__"
BRANCH = "__judge_branch__"
BUILTINS = MappingProxyType({"max": "__judge_builtin_max__", "min": "__judge_builtin_min__",
                             "len": "__judge_builtin_len__"})
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


def kernel_print(*values, sep=" ", end="\n", **_ignored) -> None:
    """print() in a kernel: out where a GPU's printf goes (judge.worker.kernel_output)."""
    emit((sep.join(format_value(v) for v in values) + end).encode())


def format_value(value) -> str:
    """A block's values by the worker's own formatting; anything else by str."""
    from triton.language import core
    return block_text(value.handle.data) if isinstance(value, core.tensor) else str(value)


def block_text(data, hex: bool = False) -> str:
    """A block's values as a kernel's print shows them, formatted by the
    worker's own code (numpy's printer and a tensor's __str__ are the
    file's to replace: they would hand it every value). Also
    tl.device_print's (judge.worker.interpret)."""
    return "[" + " ".join(f"0x{int(v):02x}" if hex else repr(v) for v in ravel(data).tolist()) + "]"


write, ravel = os.write, np.ravel  # taken before the submission is imported


def bool_op(kind: str, *operands):
    """`a and b ...` / `a or b ...` as the GPU compiler reads them: operands
    evaluated in order (each a thunk); a constexpr that decides the result
    short-circuits; tensors are combined element by element."""
    from triton.language import core
    tensors, value = [], None
    for operand in operands:
        value = operand()
        if not isinstance(value, core.tensor):
            if (kind == "and" and not value) or (kind == "or" and value):
                return value
            continue
        tensors.append(value)
    if not tensors:
        return value
    while len(tensors) >= 2:
        rhs, lhs = tensors.pop(), tensors.pop()
        tensors.append(lhs.logical_and(rhs) if kind == "and" else lhs.logical_or(rhs))
    return tensors[0]


def logical_not(value):
    from triton.language import core
    return value.__not__() if isinstance(value, core.tensor) else not value


def kernel_assert(test, msg="") -> None:
    """`assert` in a kernel: tl.device_assert, which does nothing unless the
    kernel is compiled for debugging (the judge never asks for it)."""
    from triton import language  # triton.language's functions are the ones patched for a launch
    if isinstance(test, language.core.tensor):
        language.device_assert(test, str(msg))


def _extremum(name: str, python):
    def extremum(*args, **kwargs):
        from triton import language
        if len(args) < 2 or not any(isinstance(a, language.core.tensor) for a in args):
            return python(*args, **kwargs)
        pick = language.maximum if name == "max" else language.minimum
        nan = {"propagate_nan": kwargs["propagate_nan"]} if "propagate_nan" in kwargs else {}
        out = args[0]
        for arg in args[1:]:
            out = pick(out, arg, **nan)
        return out
    return extremum


import builtins as _builtins  # noqa: E402

builtin_max, builtin_min = _extremum("max", _builtins.max), _extremum("min", _builtins.min)


def builtin_len(value, _len=_builtins.len):
    """len() as the compiler evaluates it, on a constexpr's value: Triton's
    interpreter handed it the tl.constexpr itself, which has no len() (an
    honest `tl.static_assert(I < len(SIZES))` over a global constexpr tuple
    was a runtime_error on the CPU only)."""
    from triton.language import core
    return _len(value.value if isinstance(value, core.constexpr) else value)


def bind(namespace: dict) -> None:
    """The rewrite's helpers, under their names in a kernel's globals (again
    before every launch: the file may have rebound them in between). Each
    is read from this module, whose functions and names are sealed."""
    namespace.update({WRAP: loop_variables, PRINT: kernel_print, BOOL_OP: bool_op, NOT: logical_not,
                      ASSERT: kernel_assert, BUILTINS["max"]: builtin_max, BUILTINS["min"]: builtin_min,
                      BUILTINS["len"]: builtin_len, BRANCH: branch})


def _thunk(expr: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[]), body=expr)


def branch(fn_id: int, line: int, col: int, value):
    """An `if` (or `x if c else y`) of a kernel under the interpreter: the
    way it goes must be one the GPU compiler compiled for this launch
    (judge.worker.twins records each test: decided at compile time, or a
    tensor with both ways compiled). A test the compiler decided one way
    and the interpreter another is code no GPU runs: a file told the two
    apart (a Triton builtin's marker, a method the interpreter adds) and ran
    numpy only under the interpreter."""
    from judge.worker import audit
    decisions = audit.memo(("decisions",))
    if decisions is None:
        return value
    seen = decisions.get((fn_id, line, col))
    if seen is None or ("dynamic" not in seen and bool(value) not in seen):
        message = ("rule: a kernel took a branch the GPU compiler did not compile for this launch (line "
                   f"{line} of its source): it runs only under the interpreter")
        audit.report(message)
        raise RuntimeError(message)
    return value


class _Rewrite(ast.NodeTransformer):
    def __init__(self, shadowed=frozenset(), where=None):
        # Names the function's module defines itself (triton.language's
        # standard.py has max and min reductions of its own: tl.softmax and
        # tl.argmax call them): those calls are left as they are, as the GPU
        # compiler reads a global before a builtin.
        self.shadowed = shadowed
        self.where = where  # (id of the function, its def's line - 1): each test told to branch()

    def _test(self, node):
        if self.where is None:
            return node.test
        fn_id, offset = self.where
        place = [ast.Constant(fn_id), ast.Constant(node.test.lineno - offset), ast.Constant(node.test.col_offset)]
        return ast.Call(func=ast.Name(id=BRANCH, ctx=ast.Load()), args=[*place, node.test], keywords=[])

    def visit_If(self, node: ast.If):
        node.test = self._test(node)
        self.generic_visit(node)
        return node

    def visit_IfExp(self, node: ast.IfExp):
        node.test = self._test(node)
        self.generic_visit(node)
        return node

    def visit_For(self, node: ast.For):
        self.generic_visit(node)
        call = node.iter
        if isinstance(node.target, ast.Name) and isinstance(call, ast.Call) and _is_range(call.func):
            node.iter = ast.Call(func=ast.Name(id=WRAP, ctx=ast.Load()), args=[call], keywords=[])
        return node

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.shadowed:
            return node
        if isinstance(node.func, ast.Name) and node.func.id == "print":
            node.func = ast.Name(id=PRINT, ctx=ast.Load())
        elif isinstance(node.func, ast.Name) and node.func.id in BUILTINS:
            node.func = ast.Name(id=BUILTINS[node.func.id], ctx=ast.Load())
        return node

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        kind = "and" if isinstance(node.op, ast.And) else "or"
        return ast.Call(func=ast.Name(id=BOOL_OP, ctx=ast.Load()),
                        args=[ast.Constant(kind), *map(_thunk, node.values)], keywords=[])

    def visit_UnaryOp(self, node: ast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return ast.Call(func=ast.Name(id=NOT, ctx=ast.Load()), args=[node.operand], keywords=[])
        return node

    def visit_Assert(self, node: ast.Assert):
        self.generic_visit(node)
        call = ast.Call(func=ast.Name(id=ASSERT, ctx=ast.Load()),
                        args=[node.test, node.msg or ast.Constant("")], keywords=[])
        return ast.Expr(value=call)


def _is_range(func) -> bool:
    """`range(...)` or `<something>.range(...)` (tl.range), not static_range."""
    return (isinstance(func, ast.Name) and func.id == "range") or \
        (isinstance(func, ast.Attribute) and func.attr == "range")


def static_print(*values, sep=" ", end="\n", **_ignored) -> None:
    """tl.static_print under the interpreter: a block's type, as the GPU
    compiler prints it, not its values."""
    from triton.language import core
    write(1, (sep.join(str(v.type) if isinstance(v, core.tensor) else str(v) for v in values) + end).encode())


def install() -> None:
    from triton.runtime import interpreter
    patch_lang = interpreter._patch_lang

    def _patch_lang(fn):
        # Triton's patches for a launch, then tl.static_print's (undone with them).
        scope = patch_lang(fn)
        from triton import language
        for lang in (language, language.core):
            scope.set_attr(lang, "static_print", static_print)
        return scope

    interpreter._patch_lang = _patch_lang
    rewriter = getattr(interpreter, "FunctionRewriter", None)
    original = getattr(rewriter, "_transform_ast", None)
    if original is None:  # another Triton: loop variables stay ints
        return

    def _transform_ast(self, src):
        shadowed = frozenset(name for name in ("print", *BUILTINS) if name in self.fn.__globals__)
        where = (id(self.fn), self.def_file_lineno - 1) if getattr(self, "_judge_branches", False) else None
        tree = ast.fix_missing_locations(_Rewrite(shadowed, where).visit(original(self, src)))
        # Where the rewritten kernel is run (Triton adds its own names there too).
        bind(self.fn.__globals__)
        return tree

    rewriter._transform_ast = _transform_ast
