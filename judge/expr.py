"""Arithmetic over a challenge's dimensions, as written in challenge.toml
(shapes, work measures, constraints between dimensions). Parsed, never
eval'd: names, numbers, + - * / // % **, comparisons, and/or/not, min/max."""

from __future__ import annotations

import ast
import operator

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_CALLS = {"min": min, "max": max}


class ExprError(ValueError):
    pass


def names(text: str) -> set[str]:
    """The dimension names an expression uses (raises ExprError if it does not parse)."""
    tree = _parse(text)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _CALLS}


def evaluate(text: str | int | float, dims: dict[str, int]):
    if isinstance(text, (int, float)):
        return text
    return _eval(_parse(text).body, dims, text)


def _parse(text: str) -> ast.Expression:
    try:
        return ast.parse(str(text), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {text!r}: {exc.msg}") from None


def _eval(node, dims, text):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in dims:
            raise ExprError(f"{text!r}: unknown dimension {node.id!r}")
        return dims[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, dims, text), _eval(node.right, dims, text))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        value = _eval(node.operand, dims, text)
        return -value if isinstance(node.op, ast.USub) else (not value if isinstance(node.op, ast.Not) else value)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, dims, text)
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in _COMPARE:
                break
            right = _eval(right_node, dims, text)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        else:
            return True
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, dims, text) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS and not node.keywords:
        return _CALLS[node.func.id](*(_eval(a, dims, text) for a in node.args))
    raise ExprError(f"{text!r}: only arithmetic over the dimensions is allowed")
