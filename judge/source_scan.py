"""What the judge reads in a submission's source text (parsed, never run) to
explain a verdict: patterns the GPU compiler treats differently from how
they read."""

from __future__ import annotations

import ast
from pathlib import Path

BROADCAST_SUM_NOTE = (
    "this kernel's tl.sum of a broadcast product (x[:, :, None] * y[None, :, :], or tl.expand_dims(x, 2) * "
    "tl.expand_dims(y, 0), summed over axis 1) is rewritten by Triton's GPU compiler into a tl.dot at its "
    "default precision, TF32 on Ampere and newer GPUs, although the code has no tl.dot (the CPU judge "
    "emulates that rewrite). Write tl.dot(x, y, input_precision=\"ieee\") instead to keep float32 precision.")


def _has_none_index(node: ast.AST) -> bool:
    """A subscript such as x[:, :, None] or y[None, :, :]."""
    if not isinstance(node, ast.Subscript):
        return False
    index = node.slice
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(i, ast.Constant) and i.value is None for i in items)


def broadcast_sum(source: str) -> bool:
    """Whether a sum(...) call takes a product of two None-indexed broadcasts."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # The file's text only (the worker compiled it, maybe a few frames
        # shallower than here): a note unsaid, never the judge's failure.
        return False
    called = set()
    expanded = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            called.add(name)
            if name == "sum" and node.args and isinstance(node.args[0], ast.BinOp) \
                    and isinstance(node.args[0].op, ast.Mult):
                product = node.args[0]
                if _has_none_index(product.left) and _has_none_index(product.right):
                    return True
        expanded = expanded or _has_none_index(node)
    # No dot anywhere, a sum, and values expanded: TF32 can only have come
    # from the rewrite (the product kept in a variable, or tl.expand_dims).
    return "dot" not in called and "sum" in called and (expanded or "expand_dims" in called)


def explain(path: Path, diagnosis: str | None) -> str | None:
    """A diagnosis with what the source says about it added."""
    if not diagnosis or "TF32" not in diagnosis:
        return diagnosis
    try:
        source = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError:
        return diagnosis
    return BROADCAST_SUM_NOTE if broadcast_sum(source) else diagnosis
