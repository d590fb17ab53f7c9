"""Ways around the operator guard, kept behind the audit hook.

The guard (judge.worker.rules) is a dispatch mode: it sees every operator
that reaches torch's Python dispatch key. Torch also offers, from Python,
ways past that key: popping the mode stack, excluding the key for a block,
redispatching an operator to its backend kernel, calling a kernel for a
named key, registering kernels of one's own, capturing a CUDA graph at
import to replay in solve, threads that never met the guard. Triton's
package carries a cuBLAS binding too. Each of these entry points is
replaced, here and in every loaded module that holds a reference to it, by
a stand-in that hands the call to the audit hook (judge.worker.audit); the
original lives only in the hook's closure, which nothing else can reach.
The hook lets a call through when it is torch's own work for the guard (the
mode entering and leaving, in solve and in the threads solve starts) or an
installed library's import, and refuses it, as a violation, from anywhere
else: the submission, a hook it handed to Triton, a thread it started, at
import or in solve. (A CUDA graph's capture is refused to the submission's
own code only; a new thread, unless it starts through the guard's
Thread.start in solve, or for Triton or a library.)

Installed once, before the submission is imported (so it never holds an
original), and sealed: replacing a stand-in is itself a violation.
"""

from __future__ import annotations

import importlib
import os
import sys

# Both imported before the file exists: a stand-in made later (an operator's
# per-key entry, gate_overload_result) runs in the file's code, where an
# import of the judge's own modules is refused.
from judge.worker import host_tensors
from judge.worker.op_tables import ADDRESS_TAG

# TorchScript's switches that turn a fuser on (each also gated: GATED).
JIT_FUSER_SWITCHES = ("_jit_set_texpr_fuser_enabled", "_jit_override_can_fuse_on_cpu", "_jit_override_can_fuse_on_gpu",
                      "_jit_override_can_fuse_on_cpu_legacy", "_jit_set_llga_enabled", "_jit_set_nvfuser_enabled",
                      "_jit_set_texpr_reductions_enabled", "_jit_set_fusion_strategy")

# (module, attribute) or (module, class, attribute): each gated where present.
GATED = (
    # the dispatch mode stack
    ("torch._C", "_pop_torch_dispatch_stack"), ("torch._C", "_push_on_torch_dispatch_stack"),
    ("torch._C", "_set_dispatch_mode"), ("torch._C", "_unset_dispatch_mode"),
    # dispatch keys switched off (or on) for the thread or a block
    ("torch._C", "_DisableTorchDispatch"), ("torch._C", "_ExcludeDispatchKeyGuard"),
    ("torch._C", "ExcludeDispatchKeyGuard"), ("torch._C", "_SetExcludeDispatchKeyGuard"),
    ("torch._C", "_ForceDispatchKeyGuard"), ("torch._C", "_IncludeDispatchKeyGuard"),
    ("torch._C", "_dispatch_tls_set_dispatch_key_excluded"), ("torch._C", "_dispatch_tls_set_dispatch_key_included"),
    ("torch._C", "_RestorePythonTLSSnapshot"), ("torch._C", "_EnablePythonDispatcher"),
    ("torch._C", "_DisablePythonDispatcher"), ("torch._C", "_EnablePreDispatch"),
    ("torch._C", "_AutoDispatchBelowAutograd"), ("torch._C", "_AutoDispatchBelowADInplaceOrView"),
    # kernels called directly, below every mode, or registered
    ("torch._C", "_DispatchOperatorHandle", "redispatch_boxed"), ("torch._C", "_dispatch_call_boxed"),
    ("torch._C", "_dispatch_get_computed_kernel_for_dispatch_key"), ("torch._C", "_dispatch_library"),
    # work recorded at import and replayed in solve, unseen
    ("torch._C", "_CUDAGraph", "capture_begin"),
    # work run on TorchScript's own threads, or handed to another library's arrays
    ("torch._C", "fork"), ("torch._C", "_to_dlpack"), ("torch._C", "_to_dlpack_versioned"),
    ("torch._C", "_dlpack_exchange_api"),
    # storages and tensors over a raw address or a raw object pointer: a
    # storage built over id() of the interned 'mm', copied into at import
    # and in solve, renamed the operator the guard reads (accepted), as
    # ctypes would (refused already); no honest file needs them
    ("torch._C", "_construct_storage_from_data_pointer"), ("torch._C", "_wrap_tensor_impl"),
    ("torch._C", "StorageBase", "_new_with_weak_ptr"), ("torch._C", "StorageBase", "_set_cdata"),
    ("torch._C", "StorageBase", "_swap_data_ptr_"), ("torch._C", "StorageBase", "_resize_with_addr_"),
    # cuBLAS, as Triton's own package ships it (for its tutorials' benchmarks)
    ("triton._C.libtriton.nvidia.cublas", "CublasLt"),
    # CUDA compiled and launched by torch in one C call (torch.cuda.jiterator's)
    ("torch._C", "_cuda_jiterator_compile_and_launch_kernel"),
    # TorchScript's fusers, switched off before the file exists (jit_fusers_off):
    # a fused graph computes in a kernel of its own, and the guard saw only its
    # output's allocation (a scripted (a + b) * 1.0, profiled at import, added
    # the vectors in solve; NNC fused a whole softmax too)
    *(("torch._C", name) for name in JIT_FUSER_SWITCHES),
    # the collector switched back on: a collection in the courier's threads
    # would run the file's finalizers free of their filter (judge.worker.courier)
    ("gc", "enable"), ("gc", "set_threshold"),
    # a signal handler: the file's code run between any two bytecodes of the
    # worker's own, outside solve and its rules (a timer's handler wrote
    # torch.mm into the output as the worker went on to send it); signal's
    # function wraps _signal's
    ("signal", "signal"), ("_signal", "signal"),
)
# New threads: only through the guard's Thread.start in solve, where the
# thread gets a mode of its own (one started at import, or with _thread,
# would run torch with no guard); libraries' and Triton's own threads go on.
THREADS = (("_thread", "start_new_thread"), ("_thread", "start_joinable_thread"))
# A tensor's memory on the host, from torch's C class itself (torch.Tensor's
# own methods are watched by the guard in solve, but a CPU tensor's numpy
# view, list or storage is a C method of TensorBase too, reached past them:
# the host copy a GPU run cannot make). Allowed only to the worker's own code
# and to Triton's interpreter copying a launch's arguments (judge.worker.audit).
HOST = (("torch._C", "TensorBase", "numpy"), ("torch._C", "TensorBase", "tolist"),
        ("torch._C", "TensorBase", "untyped_storage"),
        # a Python function run on every element on the host (a GPU tensor refuses)
        ("torch._C", "TensorBase", "apply_"), ("torch._C", "TensorBase", "map_"),
        ("torch._C", "TensorBase", "map2_"))
# A tensor's value as a Python number. Torch's builders (torch.tensor, as_tensor,
# new_tensor, the legacy torch.Tensor(list) and torch.FloatTensor(list), the
# sparse constructors) read each tensor inside a list through these, with
# torch's Python dispatch key switched off: the operator guard never sees the
# read, on a GPU or in the CPU mode, however the builder was reached (a
# reference to torch.tensor taken at import went past the guard's wrapper of
# it). Refused to the submission's code while that key is off, on any device
# (a tensor subclass's own __float__ that copied its element to the host
# first read a host tensor); let through otherwise, where the guard sees
# the read (judge.worker.audit).
SCALARS = tuple(("torch._C", "TensorBase", name) for name in (
    "__float__", "__int__", "__index__", "__bool__", "__complex__", "__long__", "__nonzero__", "item"))
# Torch's tensor builders, each given only plain data (judge.worker.builder_data,
# called by the stand-in before the builder): (owner, name, leading arguments that are not data).
BUILDERS = tuple(("torch._C", "_VariableFunctionsClass", name, 0) for name in (
    "tensor", "as_tensor", "asarray", "sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csr_tensor",
    "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor")) + (
    ("torch._C._nested", "nested_tensor", 0), ("torch._C", "TensorBase", "new_tensor", 1),
    ("torch._C", "TensorBase", "new", 1), ("torch._C", "TensorBase", "__new__", 1))
# (An index list, x[[i, j]], is built into a tensor the same way, but it has
# no stand-in: a Python __getitem__ on torch.Tensor gives every tensor the
# sequence protocol, and torch then read 0-d tensors inside a list as
# sequences: TypeError on the H100 for torch.Tensor(list of elements).)
# Under the interpreter (CPU), a tensor's address is one of host memory: an
# array built over it by hand (numpy's __array_interface__) reads and writes
# the data with no method above. A GPU hands out device addresses the host
# cannot follow, so there the submission's own code gets the address with a
# bit set that no mapped host address has (order, differences and alignment
# kept): following it faults, on the CPU as on a GPU. Triton's interpreter,
# below its launch, gets the address itself.
ADDRESSES = (("torch._C", "TensorBase", "data_ptr"), ("torch._C", "TensorBase", "const_data_ptr"),
             ("torch._C", "_data_address"),  # the same address, by a function of torch._C
             # a storage's too: the file's own storage set under a device tensor (below)
             # had its address read so, for numpy to add over it
             ("torch._C", "StorageBase", "data_ptr"))
# Under the interpreter, Tensor.set_ (unseen by torch's function modes): the
# file holds no device tensor's storage (untyped_storage is HOST's), so one it
# gives is the host's, which a GPU refuses under a device tensor; a probe's
# numpy computed over such a storage (judge.worker.host_tensors.check_set).
STORAGE_SETS = (("torch._C", "TensorBase", "set_"),)
# TorchScript run or built by the file's code: the guard sees each operator a
# scripted function dispatches, but TorchScript's own prim::tolist reads a
# tensor below the dispatcher (on the CPU, where inputs are host tensors, a
# function compiled from a string read them as lists: accepted; a GPU copies
# first, through the guard). Every method of its C classes, their dunders
# (a scripted class's __len__ or __getitem__ runs its TorchScript) and the
# functions that compile, load or interpret it; torch's own use at a
# library's import goes on (judge.worker.audit: kind "script").
SCRIPT_CLASSES = ("ScriptFunction", "ScriptMethod", "ScriptObject", "ScriptModule", "ScriptClass",
                  "LiteScriptModule", "CompilationUnit")
SCRIPT_FUNCTIONS = ("_jit_interpret_graph", "_jit_script_compile", "_jit_script_class_compile",
                    "_jit_script_interface_compile", "_create_function_from_graph", "_create_function_from_trace",
                    "_create_function_from_trace_with_dict", "_create_module_with_type", "import_ir_module",
                    "import_ir_module_from_buffer", "_import_ir_module_from_package", "_load_for_lite_interpreter",
                    "_load_for_lite_interpreter_from_buffer", "_load_jit_module_from_bytes",
                    "_load_jit_module_from_file", "_load_mobile_module_from_bytes", "_load_mobile_module_from_file",
                    "_jit_trace_graph", "_jit_trace_module", "parse_ir")
# What a class's own dictionary holds that is no code of TorchScript's: left alone.
_NOT_SCRIPT = {"__doc__", "__module__", "__dict__", "__weakref__", "_pybind11_conduit_v1_", "__new__",
               "__init_subclass__", "__subclasshook__", "__getstate__", "__setstate__"}


def script_entries() -> tuple:
    """(module, class, method) of every method of TorchScript's C classes, and
    (module, function) of its compilers, loaders and interpreter, present in this torch."""
    import torch
    entries = [("torch._C", name) for name in SCRIPT_FUNCTIONS if hasattr(torch._C, name)]
    for name in SCRIPT_CLASSES:
        cls = getattr(torch._C, name, None)
        if isinstance(cls, type):
            entries += [("torch._C", name, key) for key, value in vars(cls).items()
                        if key not in _NOT_SCRIPT and callable(value)]
    return tuple(entries)


# Refused only when the submission's own code asks (at import, or directly
# in solve): Triton's autotuner may capture a CUDA graph to time configs.
SUBMISSION_ONLY = {("torch._C", "_CUDAGraph", "capture_begin"), ("gc", "enable"), ("gc", "set_threshold"),
                   ("signal", "signal"), ("_signal", "signal")}
# Passed through, but the per-key kernel entry of each operator it returns
# (OpOverload._op_dk) is gated.
OVERLOADS = ("torch._C", "_get_operation_overload")

_installed: list = []


def install() -> list[tuple[object, str]]:
    """Gate every entry point of GATED and the per-key entries of the
    operators; returns the (owner, attribute) pairs replaced, to seal."""
    if _installed:
        raise RuntimeError("the gates are installed once per process")
    jit_fusers_off()
    replaced: list[tuple[object, str]] = []
    stand_ins: dict[int, object] = {}  # id of an original -> its stand-in
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"  # set by the judge for a CPU worker
    script = script_entries()
    for target in (GATED + THREADS + HOST + SCALARS + ((ADDRESSES + STORAGE_SETS) if interpreted else ())
                   + (OVERLOADS,) + script):
        owner = _owner(target[:-1])
        original = getattr(owner, target[-1], None) if owner is not None else None
        if original is None or id(original) in stand_ins:
            continue
        kind = ("overload" if target == OVERLOADS else "submission" if target in SUBMISSION_ONLY
                else "thread" if target in THREADS else "host" if target in HOST else "scalar" if target in SCALARS
                else "address" if target in ADDRESSES else "set" if target in STORAGE_SETS
                else "script" if target in script else "call")
        stand_in = _stand_in(_keep(original, kind), ".".join(target))
        try:
            setattr(owner, target[-1], stand_in)
        except TypeError:  # a C class (TensorBase) refuses setattr
            _set_on_c_type(owner, target[-1], stand_in)
        replaced.append((owner, target[-1]))
        stand_ins[id(original)] = stand_in
    replaced += _gate_builders(stand_ins)
    replaced += _replace_references(stand_ins)
    _gate_existing_overloads()
    _installed.append(True)
    return replaced


def jit_fusers_off() -> None:
    """Every TorchScript fuser off (NNC on CPU and GPU, oneDNN Graph, nvFuser):
    a scripted function then runs operator by operator, through the guard."""
    import torch
    for name in JIT_FUSER_SWITCHES:
        switch = getattr(torch._C, name, None)
        if switch is None or name == "_jit_set_fusion_strategy":  # a strategy, not an on/off switch
            continue
        if name == "_jit_set_nvfuser_enabled" and _torch_release(torch) >= (2, 2):
            continue  # no nvfuser in TorchScript since 2.2: the call only prints a deprecation to the file's stderr
        try:
            switch(False)
        except (RuntimeError, TypeError):  # a build without that fuser
            pass


def _torch_release(torch) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in torch.__version__.split(".")[:2])


def _gate_builders(stand_ins: dict[int, object]) -> list[tuple[object, str]]:
    """Each of BUILDERS behind a stand-in that checks its data first. The
    legacy torch.Tensor(list) reaches TensorBase.__new__ through
    torch.Tensor's own slot, which follows its dictionary: set there too."""
    import torch
    replaced = []
    for *path, name, skip in BUILDERS:
        owner = _owner(tuple(path))
        original = getattr(owner, name, None) if owner is not None else None
        if original is None or id(original) in stand_ins:
            continue
        stand_in = _checked_stand_in(_keep(original, "builder"), ".".join(path + [name]), skip)
        static = isinstance(owner, type) and isinstance(vars(owner).get(name), staticmethod) or name == "__new__"
        value = staticmethod(stand_in) if static else stand_in
        try:
            setattr(owner, name, value)
        except TypeError:  # a C class refuses setattr
            _set_on_c_type(owner, name, value, stand_in)
        replaced.append((owner, name))
        stand_ins[id(original)] = stand_in
        if name == "__new__":
            # torch.Tensor's slot follows its own dictionary, not TensorBase's
            setattr(torch.Tensor, name, value)
            replaced.append((torch.Tensor, name))
    from judge.worker import argument_types
    from judge.worker.builder_data import refuse_tensor_subclasses
    argument_types.record_tensor_types()  # torch's own, before the file can add any
    # (Bound anew on each access, so not sealable by identity. A file that
    # swaps it out still meets judge.worker.argument_types in every operator
    # and builder_data's check in every builder.)
    torch.Tensor.__init_subclass__ = classmethod(refuse_tensor_subclasses)
    return replaced


def stand_in_codes() -> set:
    """The code of every stand-in (one function, many closures, and the
    builders' own)."""
    return {_stand_in(-1, "sample").__code__, _checked_stand_in(-1, "sample", 0).__code__}


def gate_overload_result(result):
    """The audit hook's treatment of _get_operation_overload's answer
    (op, op_dk, tags): op_dk gated."""
    if isinstance(result, tuple) and len(result) == 3 and callable(result[1]):
        op, op_dk, tags = result
        return op, _stand_in(_keep(op_dk, "call"), "OpOverload._op_dk"), tags
    return result


def _owner(path: tuple):
    """The object at `path`: a module path (its tail may be attributes, as
    for a C extension's submodules), then attributes."""
    parts = path[0].split(".") + list(path[1:])
    for cut in range(len(parts), 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            owner = getattr(owner, name, None)
        return owner
    return None


def _set_on_c_type(cls: type, name: str, value, seen=None) -> None:
    """Replace `name` in a C class's own dictionary (setattr refuses): the
    dictionary as the collector sees it behind the class's read-only view,
    then the attribute caches of the class and its subclasses reset, as
    CPython does after any change to a class."""
    import ctypes
    import gc
    namespace = next(r for r in gc.get_referents(cls.__dict__) if isinstance(r, dict))
    namespace[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))
    if getattr(cls, name) is not (value if seen is None else seen):
        raise RuntimeError(f"{cls.__name__}.{name} could not be gated")


def _keep(original, kind: str) -> int:
    """Hand `original` to the audit hook; its number there."""
    box: list = []
    sys.audit("tritonjudge.gate_keep", original, kind, box)
    if not box:
        raise RuntimeError("the audit hook is not installed")
    return box[0]


# What a stand-in does with the result of an original the hook let through.
POST_NONE, POST_TAG, POST_OVERLOAD, POST_SET = 0, 1, 2, 3


def _stand_in(number: int, name: str):
    audit = sys.audit
    from judge.worker.write_bounds import hold

    def gated(*args, **kwargs):
        box: list = []
        audit("tritonjudge.gated", number, name, box)  # refused, or [original, what to do with its result]
        post = box.pop()
        host = post == POST_SET and host_tensors.check_set(args, kwargs)  # the file's set_: the GPU's refusal
        # Called straight off the box: the original is never a local of any
        # frame, so nothing the call runs can read it off this frame.
        result = box.pop()(*args, **kwargs)
        if post == POST_SET:
            host_tensors.after_set(args, kwargs, host)
        if post == POST_TAG and isinstance(result, int):
            # An address the host cannot follow. Set, not flipped: a call that
            # comes through the gate twice (torch's function mode on the CPU
            # hands the method back to the gate, judge.worker.cpu_cuda) must
            # not clear it again.
            result |= ADDRESS_TAG
            hold(args[0])  # a kernel may write the storage it names (judge.worker.write_bounds)
        elif post == POST_OVERLOAD:
            result = gate_overload_result(result)
        return result

    gated.__name__ = gated.__qualname__ = name.rpartition(".")[2]
    gated.__gate__ = True
    return gated


def _checked_stand_in(number: int, name: str, skip: int):
    """A builder's stand-in: its data checked (judge.worker.builder_data)
    before the audit hook hands over the builder."""
    audit = sys.audit
    from judge.worker.builder_data import checked
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"

    def gated(*args, **kwargs):
        args, kwargs = checked(name.rpartition(".")[2], args, kwargs, skip)
        box: list = []
        audit("tritonjudge.gated", number, name, box)
        box.pop()
        result = box.pop()(*args, **kwargs)
        if interpreted:
            # torch.Tensor(storage): a tensor over a storage someone made, the host's on a GPU
            host_tensors.mark_if_over_storage(args[skip:], result)
        return result

    gated.__name__ = gated.__qualname__ = name.rpartition(".")[2]
    gated.__gate__ = True
    return gated


def _replace_references(stand_ins: dict[int, object]) -> list[tuple[object, str]]:
    """Loaded modules that imported an original by name get its stand-in
    (one pass over every module's globals)."""
    replaced = []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            stand_in = stand_ins.get(id(value))
            if stand_in is not None and value is not stand_in:
                namespace[key] = stand_in
                replaced.append((module, key))
    return replaced


def _gate_existing_overloads() -> None:
    """OpOverload objects made before the gates (torch caches them on first
    use) keep their per-key entry in their own __dict__: gate each."""
    import torch
    from torch._ops import OpOverload, OpOverloadPacket
    for namespace in list(vars(torch.ops).values()):
        for packet in list(getattr(namespace, "__dict__", {}).values()):
            if not isinstance(packet, OpOverloadPacket):
                continue
            for overload in list(vars(packet).values()):
                entry = vars(overload).get("_op_dk") if isinstance(overload, OpOverload) else None
                if entry is not None and not getattr(entry, "__gate__", False):
                    overload._op_dk = _stand_in(_keep(entry, "call"), "OpOverload._op_dk")
