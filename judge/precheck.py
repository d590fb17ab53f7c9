"""LeetGPU's rules, checked on the source text before anything runs (parsed,
never executed): solve's exact signature, only Triton and torch's native
features, no torch compute doing the job, one self-contained file. Each
finding comes with a one-line fix. The graded run enforces the same rules
at run time (judge.worker.rules); this says it earlier and plainer."""

from __future__ import annotations

import ast
import sys
from dataclasses import asdict, dataclass

# Modules a LeetGPU Triton file may import: the framework, Triton, and the
# plain Python that kernels' launch code uses.
ALLOWED_ROOTS = {"torch", "triton", "math", "typing", "functools", "itertools", "operator", "dataclasses",
                 "__future__", "collections", "numbers", "enum"}
# Compute libraries LeetGPU's rule excludes by name ("Triton and the framework's native features only").
FOREIGN_COMPUTE = {"numpy", "cupy", "jax", "jaxlib", "numba", "scipy", "tensorflow", "pycuda", "cuda",
                   "cupyx", "tinygrad", "mlx", "cffi", "ctypes", "sklearn", "pandas"}
# torch functions that only allocate, view or describe: anything else in solve may do the job.
TORCH_ALLOWED = {"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                 "arange", "empty_strided", "float32", "float16", "bfloat16", "float64", "int8", "int16", "int32",
                 "int64", "uint8", "bool", "device", "cuda", "synchronize", "Tensor", "Size", "dtype", "is_tensor",
                 "numel", "finfo", "iinfo",
                 # contexts and questions that compute nothing (an honest persistent kernel sizes its grid by
                 # the SM count; inference_mode as a decorator)
                 "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "autocast",
                 "get_device_properties", "get_device_capability", "get_device_name", "current_device",
                 "current_stream", "default_stream", "set_device", "device_count", "is_available", "Stream",
                 "Event", "stream", "manual_seed",
                 # views and reshapes of a tensor: no data computed
                 "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "narrow", "as_strided",
                 # data moved, not computed (the graded run allows them: judge.worker.rules), and constants
                 # built from Python numbers
                 "cat", "concat", "concatenate", "stack", "clone", "pad", "tensor", "as_tensor",
                 # the allocator's and the profiler's housekeeping
                 "empty_cache", "range_push", "range_pop", "range", "mark", "record_function"}
# Modules whose functions share a name with a tensor method (math.prod of a shape) but never take a tensor's data.
PLAIN_MODULES = {"math", "operator", "functools", "itertools", "builtins", "statistics", "typing", "triton", "tl"}
TENSOR_COMPUTE = {"matmul", "mm", "bmm", "addmm", "einsum", "sum", "mean", "softmax", "log_softmax", "cumsum",
                  "flip", "relu", "sort", "topk", "max", "min", "argmax", "argmin", "exp", "conv1d", "conv2d",
                  "add", "sub", "mul", "div", "prod", "norm", "tanh", "sigmoid",
                  "__matmul__", "dot", "outer", "cpu", "numpy", "tolist", "item"}


@dataclass(frozen=True)
class Finding:
    rule: str  # signature | imports | torch_compute | self_contained | triton
    line: int
    problem: str
    fix: str
    blocking: bool  # LeetGPU would refuse or fail the file for it

    def as_dict(self) -> dict:
        return asdict(self)


def check(source: str, arg_names: list[str]) -> list[Finding]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [Finding("syntax", exc.lineno or 0, f"syntax error: {exc.msg}", "fix the syntax first", True)]
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes; nesting past the parser's depth
        return [Finding("syntax", 0, f"Python cannot parse the file: {type(exc).__name__}: {exc}",
                        "fix the source (null bytes, or expressions nested thousands deep)", True)]
    findings = _imports(tree, _main_block_nodes(tree))
    # The last def wins, as Python binds it (a first, correct def read here had hidden the one that runs).
    solve = next((n for n in reversed(tree.body) if isinstance(n, ast.FunctionDef) and n.name == "solve"), None)
    assigned = next((n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign)) and any(
        isinstance(t, ast.Name) and t.id == "solve" for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))),
        None)
    if solve is None and assigned is not None:
        # solve = _impl, a partial, a bound method, an object with __call__: called all the
        # same (the graded run checks it takes the arguments); its signature is not in the text.
        findings.append(Finding("signature", assigned.lineno, "solve is assigned, not defined with def: its "
                                "signature cannot be read from the source", f"def solve({', '.join(arg_names)}): "
                                "is what LeetGPU's starter has", False))
    elif solve is None:
        findings.append(Finding("signature", 0, "no top-level function named solve",
                                f"define def solve({', '.join(arg_names)}):", True))
    else:
        findings += _signature(solve, arg_names)
        findings += _torch_compute(solve, _plain_containers(tree))
    if not (any(_is_triton_jit(d) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for d in n.decorator_list)
            or any(_is_triton_jit(n) for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args)):
        # (a decorator, or called on a function: kernel = triton.jit(body))
        findings.append(Finding("triton", 0, "no @triton.jit kernel in the file",
                                "write the computation as a Triton kernel launched from solve", True))
    return findings


def _signature(solve: ast.FunctionDef, arg_names: list[str]) -> list[Finding]:
    if solve.args.posonlyargs:
        return [Finding("signature", solve.lineno, "solve's parameters are positional-only (the `/`): LeetGPU may "
                        "pass them by name", f"def solve({', '.join(arg_names)}):", True)]
    params = [a.arg for a in solve.args.posonlyargs + solve.args.args]
    if params == arg_names and not solve.args.kwonlyargs:
        return []
    wanted = f"def solve({', '.join(arg_names)}):"
    required = params[:len(params) - len(solve.args.defaults)]
    keyword_required = [a.arg for a, d in zip(solve.args.kwonlyargs, solve.args.kw_defaults) if d is None]
    if params[:len(arg_names)] == arg_names and len(required) <= len(arg_names) and not keyword_required:
        # The challenge's parameters first, in order; the rest have defaults: callable by position or by name.
        extra = params[len(arg_names):] + [a.arg for a in solve.args.kwonlyargs]
        return [Finding("signature", solve.lineno,
                        f"solve takes parameters of its own with defaults ({', '.join(extra)}): fine, as long as "
                        "they stay optional", wanted, False)]
    if keyword_required and params[:len(arg_names)] == arg_names:
        problem = f"solve needs keyword-only parameters the challenge never passes: {', '.join(keyword_required)}"
    elif len(required) > len(arg_names) and params[:len(arg_names)] == arg_names:
        problem = f"solve needs parameters the challenge never passes: {', '.join(required[len(arg_names):])}"
    elif sorted(params) == sorted(arg_names):
        problem = f"solve's parameters are in another order: solve({', '.join(params)})"
    elif len(params) == len(arg_names):
        problem = f"solve's parameter names differ from the starter's: solve({', '.join(params)})"
    else:
        problem = f"solve takes {len(params)} parameters, the challenge passes {len(arg_names)}"
    return [Finding("signature", solve.lineno, problem + " (LeetGPU may pass them by name)", wanted, True)]


def _main_block_nodes(tree: ast.Module) -> set[int]:
    """ids of the nodes inside top-level `if __name__ == "__main__":` blocks:
    a self-test LeetGPU never runs (it imports the file)."""
    inside = set()
    if any(isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and "__name__" in
           {_dotted(t) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])}
           for node in ast.walk(tree)):
        return inside  # a file that sets __name__ itself runs its "self-test" at import
    for node in tree.body:
        test = node.test if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and {_dotted(test.left), _constant(test.comparators[0])} == {"__name__", "__main__"}
                or isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and {_constant(test.left), _dotted(test.comparators[0])} == {"__main__", "__name__"}):
            inside |= {id(n) for statement in node.body for n in ast.walk(statement)}
    return inside


def _constant(node: ast.AST) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _imports(tree: ast.Module, skipped: set[int] = frozenset()) -> list[Finding]:
    out = []
    stdlib = getattr(sys, "stdlib_module_names", set())
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            roots = [(a.name.split(".")[0], a.name) for a in node.names]
        elif isinstance(node, ast.Call) and _dotted(node.func) in ("__import__", "importlib.import_module",
                                                                    "import_module", "builtins.__import__") \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            roots = [(node.args[0].value.split(".")[0], node.args[0].value)]  # np = __import__("numpy")
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x: a neighbouring file
                out.append(Finding("self_contained", node.lineno, "a relative import: LeetGPU runs your file alone",
                                   "put everything solve needs into this one file", True))
                continue
            roots = [((node.module or "").split(".")[0], node.module or "")]
        else:
            continue
        for root, full in roots:
            if root in ALLOWED_ROOTS:
                continue
            if root in FOREIGN_COMPUTE:
                out.append(Finding("imports", node.lineno,
                                   f"imports {full}: LeetGPU allows Triton and torch's native features only",
                                   f"remove the {root} import and do the work in a Triton kernel", True))
            elif root in stdlib:
                out.append(Finding("imports", node.lineno, f"imports {full}, which a kernel file should not need",
                                   f"drop `import {full}` unless solve really needs it", False))
            else:
                out.append(Finding("self_contained", node.lineno,
                                   f"imports {full}, which LeetGPU's runner does not have",
                                   "put everything solve needs into this one file", True))
    return out


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


# Python's own containers, and the calls that make them: their .sort(), .add(), .max() are no tensor's.
_CONTAINER_NODES = (ast.List, ast.Set, ast.Dict, ast.Tuple, ast.ListComp, ast.SetComp, ast.DictComp)
_CONTAINER_CALLS = {"list", "set", "dict", "tuple", "sorted", "frozenset", "collections.deque", "deque",
                    "collections.defaultdict", "defaultdict", "collections.Counter", "Counter",
                    "collections.OrderedDict", "OrderedDict"}


def _plain_containers(tree: ast.Module) -> set[str]:
    """Names the file only ever binds to Python containers (`seen = set()`,
    `blocks = []`): method calls on them are not torch's."""
    bound: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            plain = isinstance(value, _CONTAINER_NODES) or (
                isinstance(value, ast.Call) and _dotted(value.func) in _CONTAINER_CALLS)
            for target in targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = bound.get(target.id, True) and plain
    return {name for name, plain in bound.items() if plain}


def _torch_compute(solve: ast.FunctionDef, containers: set[str] = frozenset()) -> list[Finding]:
    out = []
    body = ast.Module(body=solve.body, type_ignores=[])  # not its decorators (@torch.inference_mode())
    for node in ast.walk(body):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            out.append(Finding("torch_compute", node.lineno, "solve uses the @ operator (torch's matmul)",
                               "compute the product in a Triton kernel", True))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            head, _, last = name.rpartition(".")
            if head.split(".")[0] in ("torch", "F") and last not in TORCH_ALLOWED and name not in (
                    "torch.cuda.synchronize",):
                out.append(Finding("torch_compute", node.lineno, f"solve calls {name}: torch may not do the job",
                                   "do this step in a Triton kernel (allocation and views are fine)", True))
            elif head and head.split(".")[0] not in {"torch", "F"} | PLAIN_MODULES | containers \
                    and last in TENSOR_COMPUTE:
                out.append(Finding("torch_compute", node.lineno,
                                   f"solve calls .{last}() on a tensor: torch may not do the job",
                                   "do this step in a Triton kernel", True))
    return out


def _is_triton_jit(decorator: ast.AST) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return _dotted(target).split(".")[-1] in ("jit", "autotune", "heuristics")
