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
ways (judge.worker.kernel_rewrites.branch). And it polices what a kernel
calls (police_callees): only @jit functions and Triton's own.

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

from judge.worker import audit, builtin_names

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
    body.__defaults__, body.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    body.__annotations__ = dict(fn.__annotations__)
    kept = (src, start, body, fn)
    audit.memo(("made", id(fn)), kept)
    return kept


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
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__module__, copy.__qualname__ = fn.__kwdefaults__, fn.__module__, fn.__qualname__
    copy.__annotations__ = dict(fn.__annotations__)
    twin = JITFunction(copy, **(options or {}))
    twin.raw_src, twin.starting_line_number, twin._src, twin.hash = src.splitlines(True), start, src, None
    twins[id(fn)] = twin  # before its globals: a kernel may reach itself through them
    state["origin"][id(twin)] = fn
    state["reads"] += reads(fn)
    scope.update(_with_twins(fn.__globals__, state, {}))
    return twin


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
        out.append((cell, None, _contents(cell)))
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


# Python's builtins a kernel may not call, even through a constexpr: each
# runs code or reaches objects by name (eval ran the file's function from a
# kernel, at compile time on IR and under the interpreter on data).
REFUSED_BUILTINS = frozenset({"eval", "exec", "compile", "__import__", "setattr", "delattr", "vars", "globals",
                              "locals", "open", "breakpoint", "input", "memoryview", "__build_class__"})


def police_callees() -> None:
    """What Triton's code generator calls in a kernel: an interpreted
    function as its fresh twin; nothing of the file's own Python that is not
    @jit (seen through partials, bound methods and callable objects), no
    object of the file's handed to a Python builtin (its dunders are the
    file's code), no builtin that runs code or reaches objects by name, and
    no function posing as a Triton builtin: each ran numpy on the
    interpreter's blocks where the compiler had called it on IR. And no
    `.handle` of a block (its IR value when compiled, its numpy data when
    interpreted)."""
    from triton.compiler import code_generator
    from triton.compiler.errors import CompilationError
    from triton.language import core
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    generator = code_generator.CodeGenerator
    bound_method = getattr(code_generator, "BoundJITMethod", ())
    namespace = frozenset(id(v) for v in generator.builtin_namespace.values())
    call_function, visit_attribute = generator.call_Function, generator.visit_Attribute

    def call_Function(self, node, fn, args, kws):
        state = audit.memo(("checking",))
        if type(fn) is InterpretedFunction and state is not None:
            fn = fresh(function_of(fn), state, jit_options(fn))
        elif isinstance(fn, JITFunction) and state is not None and id(fn) not in state["origin"]:
            origin = audit.memo(("origin", id(fn)))  # a helper passed as an argument (judge.worker.frontend)
            if origin is not None:
                fn = fresh(origin[0], state, origin[1])
        target = getattr(fn, "__func__", None) if bound_method and isinstance(fn, bound_method) else fn
        if not isinstance(target, JITFunction) and not isinstance(fn, bound_method or ()):
            why = _refused_callee(fn, args, kws, namespace, core)
            if why:
                raise CompilationError(self.jit_fn.src, node, f"{getattr(fn, '__name__', fn)!r}: {why}; a kernel "
                                       "calls only @triton.jit functions and Triton's own")
        return call_function(self, node, fn, args, kws)

    def visit_Attribute(self, node):
        if node.attr == "handle":
            raise CompilationError(self.jit_fn.src, node, "a block's .handle is the compiler's, not the kernel's")
        return visit_attribute(self, node)

    generator.call_Function, generator.visit_Attribute = call_Function, visit_Attribute
    _record_branches(generator, core)


def _record_branches(generator, core) -> None:
    """Each `if` test and conditional expression the code generator meets,
    with how it went: decided at compile time (True or False: only that way
    is compiled) or a tensor ("dynamic": both are). The interpreter may then
    go only those ways (judge.worker.kernel_rewrites.branch); the functions
    compiled, for judge.worker.frontend.runnable."""
    from triton.runtime.interpreter import InterpretedFunction
    visit, visit_if, visit_ifexp, call_jit = (generator.visit, generator.visit_If, generator.visit_IfExp,
                                              generator.call_JitFunction)

    def visit_recording(self, node):
        value = visit(self, node)
        if getattr(node, "_judge_test", False):
            state = audit.memo(("checking",))
            if state is not None:
                fn = state["origin"].get(id(self.jit_fn))
                outcome = "dynamic" if isinstance(value, core.tensor) else bool(_unwrapped(value, core))
                key = (id(fn), node.lineno, node.col_offset)
                state["decisions"].setdefault(key, set()).add(outcome)
        return value

    def marking(method):
        def visit_test(self, node):
            node.test._judge_test = True
            return method(self, node)
        return visit_test

    def call_JitFunction(self, fn, *args, **kwargs):
        state = audit.memo(("checking",))
        if type(fn) is InterpretedFunction and state is not None:  # a builtin's own call (a combine function)
            fn = fresh(function_of(fn), state, jit_options(fn))
        if state is not None:
            state["visited"].append(state["origin"].get(id(fn), getattr(fn, "fn", None)))
        return call_jit(self, fn, *args, **kwargs)

    generator.visit, generator.visit_If, generator.visit_IfExp = visit_recording, marking(visit_if), marking(visit_ifexp)
    generator.call_JitFunction = call_JitFunction


def _refused_callee(fn, args, kws, namespace: frozenset, core) -> str | None:
    """Why the code generator may not call `fn`, or None."""
    if core.is_builtin(fn):
        return None if builtin_names.genuine(fn) else "not one of Triton's builtins"
    if getattr(fn, "__name__", None) in REFUSED_BUILTINS and getattr(fn, "__module__", None) == "builtins":
        return "a Python builtin that runs code or reaches objects by name"
    if _the_files(fn):
        return "the file's own Python, not @triton.jit"
    if id(fn) in namespace or getattr(fn, "__module__", None) == "builtins":
        values = [_unwrapped(a, core) for a in list(args) + list(kws.values())]
        if any(_files_object(v) for v in values):
            return "an object of the file's handed to a Python builtin (its methods are the file's code)"
    return None


def _unwrapped(value, core):
    return value.value if isinstance(value, core.constexpr) else value


def _files_object(value) -> bool:
    """An object whose class, or the class's class, the file defined."""
    cls = value if isinstance(value, type) else type(value)
    return any(_defined_by_file(c) for c in (cls, type(cls)))


def _defined_by_file(cls) -> bool:
    import sys
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    return module is not None and _in_files_folder(getattr(module, "__file__", None))


def _the_files(fn) -> bool:
    """A callable whose Python code is the file's own (in its file or its
    folder, or made from a string), seen through partials, bound methods,
    wrappers and callable objects."""
    seen = 0
    while seen < 8:
        seen += 1
        inner = getattr(fn, "func", None) or getattr(fn, "__func__", None) or getattr(fn, "__wrapped__", None)
        if inner is not None and inner is not fn:
            if _the_files_code(fn):
                return True
            fn = inner
            continue
        break
    return _the_files_code(fn) or (not isinstance(fn, type) and _defined_by_file(type(fn)))


def _the_files_code(fn) -> bool:
    code = getattr(fn, "__code__", None)
    if code is None:
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)
    if code is None:
        return False  # a builtin or a C function
    return _in_files_folder(code.co_filename)


def _in_files_folder(filename) -> bool:
    import os
    import sys
    if not isinstance(filename, str):
        return False
    if not os.path.isabs(filename):
        return not filename.startswith("<frozen")  # made from a string
    submission = getattr(sys.modules.get("submission"), "__file__", None)
    folder = os.path.dirname(os.path.abspath(submission)) if submission else os.getcwd()
    return filename.startswith(folder + os.sep) or filename == submission
