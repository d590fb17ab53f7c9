"""What Triton's code generator may call in a kernel, in the CPU mode's check
(the worker's side; judge.worker.frontend installs it, judge.worker.twins
makes the functions it compiles).

Triton's compiler calls any Python callable a kernel names (a global, a
constexpr), and applies Python's operators and subscripts to a constexpr's
object, at compile time, on the compiler's values; the interpreter makes the
same calls on the blocks' numpy data. A probe's files had Python code see the
data that way (a bound list.append, a class, a library's callback such as
operator.call or sorted's key, a module the file wrote outside its folder, an
object's __getitem__ or __add__): accepted on the CPU, where a GPU compiles
the kernel to something else. So, when the check compiles a kernel:

- an interpreted function it calls is its fresh twin (judge.worker.twins);
- a callable that is neither @jit, nor one of Triton's builtins, nor a method
  of a block, is never handed a block: no argument, nor anything inside one,
  may be a Triton value other than a constexpr (but for a few of Python's
  builtins that only look at a block: isinstance, getattr, len...); the same
  for an operator or a subscript on a constexpr's object;
- the file's own Python that is not @jit is not called at all (any code not
  installed), nor a Python builtin that runs code or reaches objects by name,
  nor one handed an object of the file's (its dunders are the file's code);
- no `.handle` of a block (its IR value when compiled, its numpy data when
  interpreted), nor any private attribute of one (its `__dict__` holds the
  handle), by attribute or through getattr.
It also records how each `if` test went (judge.worker.kernel_rewrites.branch).
"""

from __future__ import annotations

from judge.worker import audit, builtin_names
from judge.worker.twins import fresh, function_of, jit_options

# Python's builtins a kernel may not call, even through a constexpr: each
# runs code or reaches objects by name (eval ran the file's function from a
# kernel, at compile time on IR and under the interpreter on data).
REFUSED_BUILTINS = frozenset({"eval", "exec", "compile", "__import__", "setattr", "delattr", "vars", "globals",
                              "locals", "open", "breakpoint", "input", "memoryview", "__build_class__"})
# Python's builtins that may be handed a block: they look at it (its type, a
# public attribute, its length) or call only its own methods, and make no
# Python value of its data (str and repr would: a block's text is its data).
LOOKING_BUILTINS = frozenset({"isinstance", "getattr", "hasattr", "len", "list", "tuple"})  # (no abs: Triton defines none in kernels)
_WHY_BLOCK = ("Python code handed a block (a GPU calls it at compile time, on the compiler's values; the "
              "interpreter would call it on the data)")


def police_callees() -> None:
    """Install the police on Triton's code generator (once, before any file)."""
    import os

    from judge.worker import attribution
    global _INSTALLED, _TRITON_CLASSES, _TRITON_DIR
    _INSTALLED = attribution.library_roots(os.path.join(os.getcwd(), "submission.py"))
    import triton
    import triton.language as language
    _TRITON_DIR = os.path.dirname(os.path.abspath(triton.__file__)) + os.sep
    _TRITON_CLASSES = frozenset(id(v) for module in (language, language.core) for v in vars(module).values()
                                if isinstance(v, type))
    from triton.compiler import code_generator
    from triton.compiler.errors import CompilationError
    from triton.language import core
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction
    generator = code_generator.CodeGenerator
    bound_method = getattr(code_generator, "BoundJITMethod", ())
    namespace = frozenset(id(v) for v in generator.builtin_namespace.values())
    call_function, visit_attribute = generator.call_Function, generator.visit_Attribute
    triton_value = getattr(code_generator, "_is_triton_value", lambda o: isinstance(o, core.base_value))

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
            why = _refused_callee(fn, args, kws, namespace, core, triton_value)
            if why:
                raise CompilationError(self.jit_fn.src, node, f"{getattr(fn, '__name__', fn)!r}: {why}; a kernel "
                                       "calls only @triton.jit functions and Triton's own")
        return call_function(self, node, fn, args, kws)

    def visit_Attribute(self, node):
        if node.attr == "handle":
            raise CompilationError(self.jit_fn.src, node, "a block's .handle is the compiler's, not the kernel's")
        return visit_attribute(self, node)

    generator.call_Function, generator.visit_Attribute = call_Function, visit_Attribute
    if hasattr(generator, "get_Attribute"):
        get_attribute = generator.get_Attribute

        def get_Attribute(self, lhs, attr):
            # A block's private attributes hold its handle too (x.__dict__ has
            # it: IR when compiled, the data when interpreted).
            # (A block's only: a tuple's operators come through here, __add__
            # for `(a,) + (b,)`, and Triton's own tl.flip and tl.interleave use them.)
            if isinstance(attr, str) and (attr == "handle" or attr.startswith("_")) and isinstance(lhs, core.tensor):
                raise CompilationError(self.jit_fn.src, None, f"a block's {attr} is the compiler's, not the kernel's")
            return get_attribute(self, lhs, attr)

        generator.get_Attribute = get_Attribute
    if hasattr(generator, "visit_Subscript_Load"):
        def visit_Subscript_Load(self, node):
            # As Triton's: a block's own __getitem__, else Python's subscript of
            # the object, which must not be handed a block.
            lhs = self.visit(node.value)
            slices = self.visit(node.slice)
            if triton_value(lhs):
                return self.call_Method(node, lhs.__getitem__, lhs, [slices], {})
            if _carries_block(slices, core):
                raise CompilationError(self.jit_fn.src, node, f"a subscript of {type(_unwrapped(lhs, core)).__name__}: "
                                       f"{_WHY_BLOCK}")
            return lhs[slices]

        generator.visit_Subscript_Load = visit_Subscript_Load
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


def _refused_callee(fn, args, kws, namespace: frozenset, core, triton_value) -> str | None:
    """Why the code generator may not call `fn`, or None."""
    if core.is_builtin(fn):
        return None if builtin_names.genuine(fn) else "not one of Triton's builtins"
    owner = getattr(fn, "__self__", None)
    if owner is not None and triton_value(owner) and not isinstance(owner, core.constexpr):
        return None  # a block's or a tuple's own method (x.to, t.index)
    if _triton_class(fn) or _plain_namedtuple(fn):
        return None  # Triton's own classes (tl.tuple, tl.condition), a NamedTuple's constructor: they hold the blocks
    python_builtin = getattr(fn, "__module__", None) == "builtins"
    name = getattr(fn, "__name__", None)
    if name in REFUSED_BUILTINS and python_builtin:
        return "a Python builtin that runs code or reaches objects by name"
    if _the_files(fn):
        return "the file's own Python, not @triton.jit"
    values = [_unwrapped(a, core) for a in list(args) + list(kws.values())]
    if any(_carries_block(v, core) for v in values):
        if not (python_builtin and name in LOOKING_BUILTINS and id(fn) in _LOOKING_IDS):
            return _WHY_BLOCK
        if name in ("getattr", "hasattr") and len(values) > 1 and isinstance(values[1], str) \
                and (values[1] == "handle" or values[1].startswith("_")):
            return "a block's handle or private attribute is the compiler's, not the kernel's"
    if id(fn) in namespace or python_builtin:
        if any(_files_object(v) for v in values):
            return "an object of the file's handed to a Python builtin (its methods are the file's code)"
    return None


def _triton_class(cls) -> bool:
    """One of triton.language's own classes, as it was before the file ran,
    whose constructor is still Triton's code (tl.condition wraps a while
    loop's test, tl.tuple holds blocks)."""
    if not isinstance(cls, type) or id(cls) not in _TRITON_CLASSES:
        return False
    for name in ("__new__", "__init__"):
        method = getattr(cls, name, None)
        method = getattr(method, "__func__", method)
        code = getattr(method, "__code__", None)
        if code is not None and not code.co_filename.startswith(_TRITON_DIR):
            return False
    return True


def _plain_namedtuple(cls) -> bool:
    """A NamedTuple class as collections makes it (Triton builds one in a
    kernel): its constructor is the generated one, which only calls
    tuple.__new__; typing.NamedTuple refuses a __new__ or __init__ of the
    file's, and a look-alike class fails here."""
    if not (isinstance(cls, type) and type(cls) is type and issubclass(cls, tuple) and "_fields" in vars(cls)):
        return False
    new = vars(cls).get("__new__")
    new = new.__func__ if type(new) is staticmethod else new
    code = getattr(new, "__code__", None)
    return (code is not None and code.co_filename == "<string>" and code.co_name == "<lambda>"
            and getattr(new, "__globals__", {}).get("_tuple_new") is tuple.__new__
            and cls.__init__ is object.__init__ and all(vars(c).get("__init__") is None for c in cls.__mro__[:-2]))


_LOOKING_IDS = frozenset(id(getattr(__import__("builtins"), name)) for name in LOOKING_BUILTINS)


def _carries_block(value, core, depth: int = 0) -> bool:
    """Is a Triton value other than a constexpr in `value`, or inside a
    constexpr, tuple, list or dict of it? (Deeper than 8 levels: taken as yes.)"""
    if depth > 8:
        return True
    if isinstance(value, core.constexpr):
        return _carries_block(value.value, core, depth + 1)
    if isinstance(value, core.tuple):
        return any(_carries_block(v, core, depth + 1) for v in value.values)
    if isinstance(value, core.base_value):
        return True
    if (getattr(type(value), "__module__", None) or "").startswith(("triton._C", "triton.runtime.interpreter")):
        return True  # a block's handle, however reached: IR compiled, data interpreted
    if isinstance(value, (tuple, list)):  # a NamedTuple's too, read by the base type's own methods
        base = tuple if isinstance(value, tuple) else list
        return any(_carries_block(base.__getitem__(value, i), core, depth + 1) for i in range(base.__len__(value)))
    if type(value) is dict:
        return any(_carries_block(k, core, depth + 1) or _carries_block(v, core, depth + 1)
                   for k, v in value.items())
    return False


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
    """A callable whose Python code is the file's own (not installed: see
    _in_files_folder), seen through partials, bound methods, wrappers and
    callable objects; a class the file defined."""
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
    if isinstance(fn, type):  # a class of the file's: its __new__ and __init__ are the file's code
        return _defined_by_file(fn) or _defined_by_file(type(fn))
    return _the_files_code(fn) or _defined_by_file(type(fn))


def _the_files_code(fn) -> bool:
    code = getattr(fn, "__code__", None)
    if code is None:
        code = getattr(getattr(type(fn), "__call__", None), "__code__", None)
    if code is None:
        return False  # a builtin or a C function
    return _in_files_folder(code.co_filename)


def _in_files_folder(filename) -> bool:
    """Code not installed: the file's (in its folder, in a module it wrote
    anywhere it may write, such as /dev/shm, or made from a string). What is
    installed was read off the import path before the file ran."""
    import os
    if not isinstance(filename, str):
        return False
    if not os.path.isabs(filename):
        return not filename.startswith("<frozen")  # made from a string
    forms = (filename, os.path.realpath(filename))
    return not any(form.startswith(root) for form in forms for root in _INSTALLED)


_INSTALLED: tuple = ()  # filled by police_callees, before the file is imported
_TRITON_CLASSES: frozenset = frozenset()  # triton.language's classes, by identity, as police_callees found them
_TRITON_DIR = "\0"  # where Triton is installed (police_callees)
