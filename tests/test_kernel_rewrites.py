"""judge.worker.kernel_rewrites: Python's operators in a kernel as the GPU
compiler reads them (the end-to-end fixtures honest_builtin_max.py,
honest_and_mask.py and honest_python_assert.py run them in kernels)."""

from __future__ import annotations

import ast

from judge.worker import kernel_rewrites as kr


def test_constexpr_operands_short_circuit_as_python():
    calls = []

    def thunk(value):
        def run():
            calls.append(value)
            return value
        return run

    assert kr.bool_op("and", thunk(0), thunk(5)) == 0 and calls == [0]
    calls.clear()
    assert kr.bool_op("or", thunk(0), thunk(7), thunk(9)) == 7 and calls == [0, 7]
    assert kr.bool_op("and", thunk(3), thunk(4)) == 4
    assert kr.logical_not(0) is True and kr.logical_not([1]) is False


def test_builtins_stay_python_on_python_values():
    assert kr.builtin_max(3, 9, 4) == 9 and kr.builtin_min([5, 2]) == 2
    assert kr.builtin_max("ab", "b") == "b"


def test_the_rewrite_calls_the_helpers():
    tree = ast.parse("def k(a, b):\n    assert a, 'm'\n    x = max(a, b) if not a else (a and b or min(a, b))\n")
    source = ast.unparse(ast.fix_missing_locations(kr._Rewrite().visit(tree)))
    for name in (kr.ASSERT, kr.NOT, kr.BOOL_OP, kr.BUILTINS["max"], kr.BUILTINS["min"]):
        assert name in source, source
    assert "assert" not in source.replace(kr.ASSERT, "")
    namespace: dict = {}
    kr.bind(namespace)
    assert namespace[kr.BOOL_OP] is kr.bool_op and namespace[kr.PRINT] is kr.kernel_print
