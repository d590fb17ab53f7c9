"""What the CPU front end (judge.worker.frontend) compiles and what the
interpreter runs, made from one reading of each function's source.

A kernel under the interpreter is an InterpretedFunction; Triton's code
generator knows only JITFunctions. For each function the worker reads its
source once and makes from that text both the interpreted body (Triton's
rewrite of it, with the worker's own rewrites) and, for every check, a
fresh JITFunction "twin" over the same text, whose globals are the
function's globals as they are at that check, each interpreted function
in them replaced by its own twin. A check records what the twins' code
reads (globals, the attributes of the modules it names, closure cells,
a constexpr's value); the check is reused only while all of it holds the
same objects, and nothing of it may change while the kernel compiles or
runs (judge.worker.interpret checks after the launch). It also records how
each `if` test went when compiled: the interpreted body may go only those
ways (judge.worker.kernel_rewrites.branch). What a kernel may call is
judge.worker.kernel_callees's.

The bodies, the check under way and the record of checks live in the
audit hook (judge.worker.audit.memo), which the file cannot reach: the
file's own code can run during a check (a function a kernel calls at
compile time through a constexpr) and could otherwise edit them.
"""

from __future__ import annotations

import ast
import re
import textwrap
import types

from judge.worker import audit

_MISSING = object()
_DEF = re.compile(r"^def\s+\w+\s*\(", re.MULTILINE)  # where Triton's JITFunction starts a kernel's source


def function_of(kernel):
    """The function an interpreted function was made over: the one its
    rewriter keeps, as a GPU's JITFunction compiles the source it read
    when @jit was applied (setting kernel.fn afterwards changes neither).
    Only Triton's own InterpretedFunction: a subclass's __call__ would be
    the file's code in place of the worker's."""
    from triton.runtime.interpreter import FunctionRewriter, InterpretedFunction
    if type(kernel) is not InterpretedFunction:
        raise TypeError(f"{type(kernel).__name__} is not a @triton.jit function")
    own = vars(kernel)
    rewriter = own.get("rewriter")
    fn = vars(rewriter).get("fn") if type(rewriter) is FunctionRewriter else None
    if not isinstance(fn, types.FunctionType):
        fn = own.get("fn")
    if not isinstance(fn, types.FunctionType):
        raise TypeError("a @triton.jit function must wrap a Python function")
    return fn


def made(fn) -> tuple:
    """(source from its def line, its first line's number, the interpreted
    body, fn) for function `fn`: read once, kept in the audit hook."""
    kept = audit.memo(("made", id(fn)))
    if kept is not None and kept[3] is fn:
        return kept
    import inspect

    from triton.runtime.interpreter import FunctionRewriter
    lines, start = inspect.getsourcelines(fn)
    text = textwrap.dedent("".join(lines))
    found = _DEF.search(text)
    if found is None:
        raise ValueError(f"@jit function {fn.__name__}: no def line in its source")
    src = text[found.start():]
    rewriter = FunctionRewriter(fn)
    rewriter.filename = fn.__code__.co_filename
    rewriter.def_file_lineno = start + text.count("\n", 0, found.start())
    rewriter._judge_branches = True  # each if told to kernel_rewrites.branch()
    tree = rewriter._transform_ast(src)
    _drop_evaluated_parts(tree, fn.__name__)
    body = rewriter._compile_and_exec(tree)
    # The def is run again to make the body: its defaults and annotations are
    # the function's own, not evaluated a second time (a default made by a
    # call had given the check one helper and the body another).
    if fn.__closure__:
        # A kernel made in a function (a factory, or solve itself) reads its
        # closure's names; the body, made from its text at module level,
        # read them as globals (NameError, or an honest kernel's compile_error
        # on the CPU only). The GPU compiler reads them (get_capture_scope).
        body = types.FunctionType(body.__code__, ClosureGlobals(fn), body.__name__)
    body.__defaults__, body.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    body.__annotations__ = dict(fn.__annotations__)
    kept = (src, start, body, fn)
    audit.memo(("made", id(fn)), kept)
    return kept


class ClosureGlobals(dict):
    """An interpreted body's globals when its function has a closure: the
    closure's names, then the function's globals, both read at each lookup
    (a check records the cells, and a cell changed between the check and
    the run is caught: reads). Holds nothing itself but the builtins."""

    def __init__(self, fn):
        super().__init__(__builtins__=fn.__globals__.get("__builtins__", __builtins__))
        self._cells = dict(zip(fn.__code__.co_freevars, fn.__closure__))
        self._space = fn.__globals__

    def __missing__(self, name):
        cell = self._cells.get(name)
        if cell is not None:
            value = _contents(cell)
            if value is not _MISSING:
                return value
        return self._space[name]

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name) -> bool:
        return name in self._cells or name in self._space

    def items(self):
        # What Triton's interpreter scans for triton.language (_patch_lang).
        closed = [(name, _contents(cell)) for name, cell in self._cells.items()]
        return [*self._space.items(), *((n, v) for n, v in closed if v is not _MISSING)]


def _drop_evaluated_parts(tree: ast.Module, name: str) -> None:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            node.decorator_list = []
            node.returns = None
            node.args.defaults = []
            node.args.kw_defaults = [None] * len(node.args.kwonlyargs)
            for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                arg.annotation = None


JIT_OPTIONS = ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline", "repr",
               "launch_metadata")


def jit_options(kernel) -> dict:
    """What @triton.jit was given for this interpreted function (noinline,
    do_not_specialize...), as its JITFunction on a GPU would take it."""
    given = vars(kernel).get("kwargs")
    return {k: v for k, v in given.items() if k in JIT_OPTIONS} if isinstance(given, dict) else {}


def wrapped_interpreted(value):
    """The interpreted function behind a tl.tensor method: the function
    itself, or the one triton.language's member wrapper forwards to."""
    from triton.runtime.interpreter import InterpretedFunction
    if type(value) is InterpretedFunction:
        return value
    if type(value) is types.FunctionType and value.__code__.co_name == "wrapper" and value.__closure__:
        inner = [_contents(c) for c in value.__closure__]
        found = [v for v in inner if type(v) is InterpretedFunction]
        return found[0] if len(found) == 1 else None
    return None


def fresh(fn, state: dict, options: dict | None = None):
    """A new twin of `fn` for the check `state` (made once per check): over
    the text its body was made from, its globals as they are now, with
    @jit's options."""
    twins = state["twins"]
    if id(fn) in twins:
        return twins[id(fn)]
    from triton.runtime.jit import JITFunction
    src, start, _, _ = made(fn)
    scope: dict = {}
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, _closure_with_twins(fn, state))
    copy.__kwdefaults__, copy.__module__, copy.__qualname__ = fn.__kwdefaults__, fn.__module__, fn.__qualname__
    copy.__annotations__ = dict(fn.__annotations__)
    twin = JITFunction(copy, **(options or {}))
    twin.raw_src, twin.starting_line_number, twin._src, twin.hash = src.splitlines(True), start, src, None
    twins[id(fn)] = twin  # before its globals: a kernel may reach itself through them
    state["origin"][id(twin)] = fn
    state["reads"] += reads(fn)
    scope.update(_with_twins(fn.__globals__, state, {}))
    return twin


def _closure_with_twins(fn, state: dict):
    """`fn`'s closure for its twin: a cell holding an interpreted function
    (a @jit helper made in the same function) holds its twin instead, which
    the code generator knows (it refused the interpreted one: "Unsupported
    function referenced")."""
    from triton.runtime.interpreter import InterpretedFunction
    if not fn.__closure__:
        return fn.__closure__
    cells = []
    for cell in fn.__closure__:
        value = _contents(cell)
        if type(value) is InterpretedFunction:
            try:
                cell = types.CellType(fresh(function_of(value), state, jit_options(value)))
            except TypeError:  # not over a function: the code generator refuses it if the kernel calls it
                pass
        cells.append(cell)
    return tuple(cells)


def _with_twins(namespace: dict, state: dict, modules: dict) -> dict:
    """`namespace` with each interpreted function named in it, directly or
    as an attribute of a module named in it, replaced by its fresh twin."""
    from triton.runtime.interpreter import InterpretedFunction
    out = dict(namespace)
    for name, value in list(namespace.items()):  # making a body adds Triton's names to its globals
        if type(value) is InterpretedFunction:
            try:
                out[name] = fresh(function_of(value), state, jit_options(value))
            except TypeError:  # not over a function: the code generator refuses it if the kernel calls it
                continue
        elif type(value) is types.ModuleType and _holds_kernels(value):
            twin = modules.get(id(value))
            if twin is None:
                twin = modules[id(value)] = types.ModuleType(value.__name__)
                twin.__dict__.update(_with_twins(vars(value), state, modules))  # after the memo: modules may name each other
            out[name] = twin
    return out


def _holds_kernels(module: types.ModuleType) -> bool:
    """Whether the module names interpreted functions (triton.language's own
    @jit functions count); torch and numpy, as installed, name none."""
    import sys
    from triton.runtime.interpreter import InterpretedFunction
    if module.__name__.split(".")[0] in ("torch", "numpy") and sys.modules.get(module.__name__) is module \
            and getattr(module, "__file__", None):
        return False
    return any(type(v) is InterpretedFunction for v in list(vars(module).values()))


def reads(fn) -> list:
    """(namespace, name, value) for each name the code of `fn` reads: in its
    globals, in the modules those name, a constexpr's value, and its
    closure cells (name None)."""
    from triton.language import core
    names = _names(fn.__code__)
    space = fn.__globals__
    out = []
    for name in names:
        value = dict.get(space, name, _MISSING)
        out.append((space, name, value))
        if type(value) is types.ModuleType:
            inner = vars(value)
            out += [(inner, attr, dict.get(inner, attr, _MISSING)) for attr in names]
        elif type(value) is core.constexpr:
            out.append((vars(value), "value", vars(value).get("value", _MISSING)))
    for cell in fn.__closure__ or ():
        value = _contents(cell)
        out.append((cell, None, value))
        if type(value) is core.constexpr:
            out.append((vars(value), "value", vars(value).get("value", _MISSING)))
    return out


def unchanged(recorded) -> bool:
    for space, name, value in recorded:
        now = _contents(space) if name is None else dict.get(space, name, _MISSING)
        if now is not value:
            return False
    return True


def _names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING
