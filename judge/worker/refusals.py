"""What the audit hook (judge.worker.audit) refuses to the submission, and
the few names it needs to tell Triton's and the guard's own work apart:
tables only, read once as the hook is installed."""

from __future__ import annotations

import os

RULE = 'LeetGPU\'s rule: "Triton and the framework\'s native features only"'

# Top-level modules whose import (by the submission) is refused: compute
# libraries and the foreign-function interfaces.
DENIED_IMPORTS = frozenset({
    "cupy", "cupyx", "cupy_backends", "jax", "jaxlib", "tensorflow", "tf_keras", "keras", "numba", "llvmlite",
    "pycuda", "cuda", "cudf", "cuml", "nvmath", "cutlass", "cutlass_library", "scipy", "sklearn",
    "tensorrt", "torch_tensorrt", "mlx", "dask", "cffi", "_cffi_backend", "ctypes", "_ctypes", "pyopencl",
    "taichi", "warp", "tilelang", "thunderkittens", "flashinfer", "xformers", "apex", "onnxruntime",
    "mpmath", "sympy", "blis", "mkl", "cython", "pyximport", "multiprocessing", "subprocess", "socket",
})
# Events refused to the submission, by prefix, with the rule they break.
REFUSED = (
    ("ctypes.", "no foreign calls or raw memory access (ctypes)"),
    ("cffi.", "no foreign calls or raw memory access (cffi)"),
    ("gc.get_objects", "no digging through the garbage collector"),
    ("gc.get_referrers", "no digging through the garbage collector"),
    ("gc.get_referents", "no digging through the garbage collector"),
    ("sys._current_frames", "no reading other threads' frames"),
    ("sys._current_exceptions", "no reading other threads' frames"),
    ("sys.setprofile", "no tracing hooks"),
    ("sys.settrace", "no tracing hooks"),
    # Hooks that run in every thread, the courier's too (judge.worker.courier).
    ("sys._setprofileallthreads", "no tracing hooks"),
    ("sys._settraceallthreads", "no tracing hooks"),
    ("sys.monitoring", "no tracing hooks"),
    ("sys.addaudithook", "no audit hooks of its own"),
    ("os.fork", "no new processes"),
    ("os.forkpty", "no new processes"),
    ("os.exec", "no new processes"),
    ("os.posix_spawn", "no new processes"),
    ("os.spawn", "no new processes"),
    ("os.system", "no new processes"),
    ("os.killpg", "no signals to other processes"),
    ("os.setsid", "no new processes"),
    ("subprocess.Popen", "no new processes"),
    ("pty.spawn", "no new processes"),
    ("socket.", "no network"),
    ("code.__new__", "no hand-made code objects"),
    ("function.__new__", "no hand-made functions"),
)
# The tracing hooks among them: refused to everyone but the worker's own tracer.
TRACING = frozenset({"sys.setprofile", "sys.settrace", "sys._setprofileallthreads", "sys._settraceallthreads",
                     "sys.monitoring"})
# Attribute reads that hand out frames (object.__getattr__ events).
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"})
# Modules already loaded by torch and Triton whose functions need no audit
# event to call (ctypes.memmove on an address, _posixsubprocess.fork_exec):
# hidden behind a stand-in.
HIDDEN_MODULES = ("ctypes", "_ctypes", "_cffi_backend", "cffi", "_posixsubprocess")
# Torch's ways to compute that never reach its dispatcher (so the operator
# guard sees nothing), hidden the same way: the tensor-expression compiler
# (a probe's file added vectors with it), collective operations (a one-rank
# Gloo group's allreduce summed two local tensors) and the jiterator (CUDA
# compiled and launched by one C call; its C function is gated too).
TORCH_BACKDOORS = {"torch._C._te": "torch's tensor-expression compiler",
                   "torch._C._distributed_c10d": "torch's collective operations",
                   "torch.cuda.jiterator": "torch's jiterator"}

# Triton's interpreter reads a launch's tensors through their storage, in these
# functions of this file (judge.worker.gates.HOST).
INTERPRETER_FILE = os.path.join("triton", "runtime", "interpreter.py")
INTERPRETER_COPIES = frozenset({"_to_cpu", "_from_cpu", "_init_args_hst", "_restore_args_dev"})

# The gates the guard itself goes through, entering and leaving its modes.
MODE_STACK = frozenset({"_push_on_torch_dispatch_stack", "_pop_torch_dispatch_stack", "_set_dispatch_mode",
                        "_unset_dispatch_mode"})


def gate_refusal(kind: str, name: str) -> str:
    """The rule a call through a gate (judge.worker.gates) breaks, by the gate's kind."""
    if kind == "thread":
        return "no threads but threading.Thread's in solve (which run under the rules)"
    if kind == "host":
        return f"no host round trip of the data ({name})"
    if kind == "scalar":
        return f"no host round trip of the data ({name} of a tensor in a tensor builder's data: use Python numbers)"
    if kind == "script":
        return (f"no TorchScript in the file ({name}): it reads tensors below the operator guard; "
                "write the computation as a Triton kernel")
    if name.partition(".")[0] in ("signal", "_signal"):
        return f"no signal handlers: one runs the file's code outside solve's rules ({name})"
    if name.endswith("_dispatch_library"):
        # torch.library's decorators (custom_op, triton_op, Library.impl) all register through it.
        return (f"no operators registered with torch.library (custom_op, triton_op, Library: {name}): a "
                "registered kernel runs below the operator guard; launch your Triton kernel directly from solve")
    return f"no way around the operator guard ({name})"


def named_builtins(names: str) -> tuple:
    """Python's builtins of these names as they are now, before the file is
    imported: the hook's closures bind them once (a file can swap builtins'
    own at any moment; sorted swapped for a chain of torch.add ran inside the
    seal's own check)."""
    import builtins
    return tuple(getattr(builtins, name) for name in names.split())
