"""On the CPU (Triton's interpreter), the CUDA an honest solve names.

A file written for LeetGPU's GPUs names the GPU: a scratch buffer made with
device="cuda", a tensor moved with .cuda() or .to("cuda"), an assert on
a.is_cuda, torch.cuda.synchronize(), a stream or an event. With a CPU build
of torch each of these raises, and such a file got `runtime_error` on the
CPU where the GPU accepts it. In the CPU worker only, before the submission
is imported:

* the device "cuda" (any index) given to a torch function or a tensor
  method means the CPU: a torch function mode, in force for the worker's
  life (Triton's own CPU copies name "cpu" and are left alone);
* a tensor's is_cuda reads True, as the same tensor's does on a GPU, and
  to the submission's own code its `device` reads cuda:0 (get_device() 0),
  which the first point maps back to the CPU wherever it is passed on;
  Triton, torch and the worker read the tensor's real device;
* torch.cuda's synchronisation, streams, events, device selection, memory
  queries and profiler annotations (nvtx) answer as a GPU that runs
  everything in order, at once, would; its
  device queries describe an H100 (LeetGPU's default GPU; a T4 where the
  self-check answers for one, judge check --gpu t4), since a
  persistent kernel sizes its grid by the SM count;
* Triton's own driver, which has none to offer on the CPU ("0 active
  drivers": Triton's tutorials ask it for the torch device at import),
  is a stand-in that names the CPU as torch's device and describes the
  same GPU. The interpreter itself never asks the driver; the worker
  replaces the autotuner's benchmark on the CPU (judge.worker.interpret).
  torch.cuda.is_available() says True to the file's code, as a GPU would,
  and False to torch's and Triton's own (which then take their CPU paths).

Nothing here computes or decides a verdict: every operator still reaches
the dispatcher, and the rules' guard, as it did. It runs in the untrusted
process; a file that undoes it only gets torch's errors back.
"""

from __future__ import annotations

import contextlib
import time
import types


def _names_cuda(device) -> bool:
    import torch
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, int) and not isinstance(device, bool):
        return True  # torch reads a bare index as a CUDA device
    return isinstance(device, str) and device.split(":")[0].strip() == "cuda"


def _mode_class(submission: str | None):
    import os
    import sys

    import torch

    from judge.worker import host_tensors
    from torch.overrides import TorchFunctionMode
    is_cuda = torch._C.TensorBase.__dict__["is_cuda"]
    device = torch._C.TensorBase.__dict__["device"]
    moves = {torch.Tensor.to, torch.Tensor.cuda}
    # A tensor built from a list of tensors reads each element on the host,
    # below torch's modes (a GPU syncs on every one): a copy, element by
    # element, that the rules never saw (a probe transposed and reversed arrays so).
    builders = _with_stand_ins({torch.tensor, torch.as_tensor, torch.asarray, torch.Tensor.new_tensor, torch.Tensor.new})
    aliasing = _with_stand_ins({torch.as_tensor, torch.asarray})  # may share the memory of the host data they are given
    scalar_reads = {torch.Tensor.__float__, torch.Tensor.__int__, torch.Tensor.__index__, torch.Tensor.__bool__,
                    torch.Tensor.__complex__}
    gpu = torch.device("cuda", 0)
    submission = os.path.abspath(submission) if submission else None

    def asked_by_submission() -> bool:
        # The frame that read the attribute (torch calls the mode from C).
        return submission is not None and sys._getframe(2).f_code.co_filename == submission

    class CudaMeansCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            owner = getattr(func, "__self__", None)
            if owner is is_cuda:
                return True
            mine = asked_by_submission()
            if (owner is device or func is torch.Tensor.get_device) and mine:
                return gpu if owner is device else 0
            if func in scalar_reads and args and isinstance(args[0], torch.Tensor):
                host_tensors.refuse_scalar_read(func.__name__.strip("_") + "()", args[0])
            if func in builders:  # however the file reached it (host_tensors.patch_builders: by torch's names)
                at = 1 if func.__name__ in ("new_tensor", "new") else 0
                args, kwargs = host_tensors.checked_data(func.__name__, at, args, kwargs)
            given_args, given_kwargs = args, dict(kwargs)
            if _names_cuda(kwargs.get("device")):
                kwargs["device"] = "cpu"
            if func is torch.Tensor.cuda:  # .cuda(device=None, non_blocking=False, memory_format=...)
                result = args[0].to(memory_format=kwargs["memory_format"]) if "memory_format" in kwargs \
                    else args[0]
            else:
                if func in moves:
                    args = tuple("cpu" if _names_cuda(a) else a for a in args)
                result = func(*args, **kwargs)
            if (func is torch.Tensor.cuda or func is torch.Tensor.to and (
                    _names_cuda(given_kwargs.get("device")) or any(_names_cuda(a) for a in given_args[1:]))) \
                    and host_tensors.is_host(given_args[0]) and isinstance(result, torch.Tensor):
                result = result.clone()  # a host tensor moved to the GPU is a new tensor there, not the host's
            elif func in aliasing and _names_cuda(given_kwargs.get("device")) and isinstance(result, torch.Tensor) \
                    and not isinstance((given_args[:1] or [given_kwargs.get("obj")])[0], torch.Tensor):
                result = result.clone()  # host data (a numpy array) on the GPU is a copy there, never its memory
            # What a GPU run would hold on the host (judge.worker.host_tensors).
            host_tensors.after(func, given_args, given_kwargs, result, mine)
            return result

    return CudaMeansCpu


class _with_stand_ins(frozenset):
    """Torch's builders, and the gates' stand-ins for them (judge.worker.gates.BUILDERS:
    installed after this mode is made, and what torch then hands the mode as `func`)."""

    def __contains__(self, func) -> bool:
        return frozenset.__contains__(self, func) or (
            getattr(func, "__gate__", False) and getattr(func, "__name__", None) in {f.__name__ for f in self})


def _available_to_the_file(real):
    """torch.cuda.is_available(): True to the file's code, as on a GPU (a
    kernel defined under `if torch.cuda.is_available():` did not exist on
    the CPU, and a device chosen by it was the host's); torch's and Triton's
    own code keep the real answer, and their CPU paths."""
    import os
    import sys

    import torch
    import triton
    own = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch, triton))

    def is_available() -> bool:
        caller = os.path.abspath(sys._getframe(1).f_code.co_filename)
        return real() if caller.startswith(own) else True

    return is_available


class Graph:
    """torch.cuda.CUDAGraph: its capture is refused to the file's code on a
    GPU (judge.worker.gates: work recorded once and replayed unseen), and
    so here (a capture in solve gave runtime_error, torch's dummy class)."""

    def __init__(self, *args, **kwargs):
        pass

    def capture_begin(self, *args, **kwargs):
        from judge.worker import audit
        from judge.worker.rules import RuleViolation
        message = "rule: no CUDA graph captured by the file (torch.cuda.CUDAGraph.capture_begin)"
        audit.report(message)
        raise RuleViolation(message)

    def capture_end(self):
        pass

    def replay(self):
        pass

    def reset(self):
        pass

    def pool(self):
        return (0, 0)


_LEGACY_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor",
                 "ShortTensor", "IntTensor", "LongTensor", "BoolTensor")


class _LegacyCudaType:
    """torch.cuda.<T>Tensor in the CPU mode: made as torch.<T>Tensor is (a tensor the CPU mode
    treats as the GPU's), and an instance is one of that dtype."""

    def __init__(self, cpu_type):
        self._make, self.dtype, self.is_cuda = cpu_type, cpu_type.dtype, True
        self.__name__ = cpu_type.__name__

    def __call__(self, *args, **kwargs):
        return self._make(*args, **kwargs)

    def __instancecheck__(self, value) -> bool:
        import torch
        return isinstance(value, torch.Tensor) and value.dtype == self.dtype

    def __repr__(self) -> str:
        return f"<class 'torch.cuda.{self.__name__}'>"


class _Capture:
    """torch.cuda.graph(g): a capture into g, as torch's context starts one."""

    def __init__(self, cuda_graph):
        self.cuda_graph = cuda_graph

    def __enter__(self):
        self.cuda_graph.capture_begin()

    def __exit__(self, *exc):
        self.cuda_graph.capture_end()
        return False


class Stream:
    """A CUDA stream on a GPU that has finished everything it was given."""

    cuda_stream = 0
    device = None
    priority = 0

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.priority = priority

    def synchronize(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def wait_stream(self, stream) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def record_event(self, event=None):
        event = event if event is not None else Event()
        event.record(self)
        return event


class Event:
    """A CUDA event, recorded at the host's time (there is no other clock)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        self._at: float | None = None

    def record(self, stream=None) -> None:
        self._at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: "Event") -> float:
        if self._at is None or end._at is None:
            raise RuntimeError("both events must be recorded before elapsed_time")
        return (end._at - self._at) * 1000.0


_DEFAULT = Stream()

# What torch.cuda.get_device_properties reports for an H100 SXM (80 GB HBM3).
H100 = dict(name="NVIDIA H100 80GB HBM3", major=9, minor=0, multi_processor_count=132,
            total_memory=85_045_870_592, L2_cache_size=50 << 20, warp_size=32,
            max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
            shared_memory_per_block=48 << 10, shared_memory_per_block_optin=227 << 10,
            shared_memory_per_multiprocessor=228 << 10, is_integrated=False, is_multi_gpu_board=False,
            clock_rate=1_980_000, memory_clock_rate=2_619_000, memory_bus_width=5120,  # kHz, kHz, bits
            gcnArchName="NVIDIA H100 80GB HBM3", uuid="GPU-00000000-0000-0000-0000-000000000000")


# The same for a T4 (16 GB): no TF32, which is when the worker emulates none.
T4 = dict(H100, name="Tesla T4", major=7, minor=5, multi_processor_count=40, total_memory=15_828_320_256,
          L2_cache_size=4 << 20, max_threads_per_multi_processor=1024, shared_memory_per_block_optin=64 << 10,
          shared_memory_per_multiprocessor=64 << 10, clock_rate=1_590_000, memory_clock_rate=5_001_000,
          memory_bus_width=256, gcnArchName="Tesla T4")
GPU = dict(H100)  # the one described: set by install()


def device_properties(device=None):
    import types
    return types.SimpleNamespace(**GPU)


class Driver:
    """triton.runtime.driver.active on the CPU: what a file asks of it."""

    def __init__(self):
        import torch

        class Utils:
            @staticmethod
            def get_device_properties(device=None) -> dict:
                return {"max_shared_mem": GPU["shared_memory_per_block_optin"], "max_num_regs": 65536,
                        "multiprocessor_count": GPU["multi_processor_count"], "warpSize": 32,
                        "sm_clock_rate": 1_980_000, "mem_clock_rate": 2_619_000, "mem_bus_width": 5120}

        self.utils = Utils()
        self._torch = torch

    @staticmethod
    def is_active() -> bool:
        return True

    def get_active_torch_device(self):
        # What a GPU answers (Triton's tutorials start with it): tensors made
        # on it, moved to it or compared with it behave as on the GPU, since
        # the worker reads "cuda" as its CPU stand-in everywhere (a file
        # asserting x.device == DEVICE was a runtime_error here, accepted on the H100).
        return self._torch.device("cuda", 0)

    def get_device_interface(self):
        return self._torch.cuda

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device) -> None:
        pass

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", GPU["major"] * 10 + GPU["minor"], 32)

    def get_empty_cache_for_benchmark(self):
        return self._torch.empty(256 << 20, dtype=self._torch.int8)

    @staticmethod
    def clear_cache(cache) -> None:
        cache.zero_()

    def get_benchmarker(self):
        from triton import testing
        return testing.do_bench


def install(submission: str | None = None, tf32: bool = True) -> None:
    """The mode entered, and torch.cuda's calls answered (CPU worker only).
    `submission`: the path the file is imported from (its code is shown
    cuda:0 as its tensors' device); `tf32`: False where the worker answers
    for a T4 (judge.worker.interpret's emulate_tf32), which is then the GPU
    described."""
    global GPU
    # Read-only from here (a name the seal keeps): a judge function's
    # globals are within the file's reach (f.__globals__).
    GPU = types.MappingProxyType(dict(H100 if tf32 else T4))
    import torch
    cuda = torch.cuda
    answers = {
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: _DEFAULT,
        "default_stream": lambda device=None: _DEFAULT,
        "Stream": Stream,
        "Event": Event,
        "stream": lambda stream=None: contextlib.nullcontext(stream),
        "device": lambda device=None: contextlib.nullcontext(),
        "device_of": lambda tensor=None: contextlib.nullcontext(),
        "set_device": lambda device=None: None,
        "set_stream": lambda stream=None: None,
        "current_device": lambda: 0,
        "device_count": lambda: 1,  # the one GPU described here
        "get_device_properties": device_properties,
        "get_device_capability": lambda device=None: (GPU["major"], GPU["minor"]),
        "get_device_name": lambda device=None: GPU["name"],
        # Memory queries and housekeeping a GPU answers (the memory, all free).
        "mem_get_info": lambda device=None: (GPU["total_memory"], GPU["total_memory"]),
        "reset_peak_memory_stats": lambda device=None: None,
        "reset_max_memory_allocated": lambda device=None: None,
        "init": lambda: None,
        "ipc_collect": lambda: None,
        "CUDAGraph": Graph,
        # torch.cuda.FloatTensor(n) and its kind, an old tutorial's scratch: torch's own here raise
        # "not available" (runtime_error on the CPU only); the CPU's legacy type of the same dtype stands in.
        **{name: _LegacyCudaType(getattr(torch, name)) for name in _LEGACY_TYPES if hasattr(torch, name)},
        "graph": lambda cuda_graph, *args, **kwargs: _Capture(cuda_graph),
    }
    answers["is_available"] = _available_to_the_file(cuda.is_available)
    for name, answer in answers.items():
        setattr(cuda, name, answer)
    # A default device of "cuda" is the CPU's (torch keeps it below every mode,
    # where the mapping above never sees the factories it fills in).
    from judge.worker import host_tensors
    choose_default = torch.set_default_device

    def set_default_device(device) -> None:
        host_tensors.set_default_cuda(_names_cuda(device))
        return choose_default("cpu" if _names_cuda(device) else device)

    torch.set_default_device = set_default_device
    # Profiler annotations: nothing to annotate on the CPU.
    nvtx = {"range_push": lambda msg, *args, **kwargs: 0, "range_pop": lambda: 0, "mark": lambda msg: None,
            "range_start": lambda msg: 0, "range_end": lambda range_id: None,
            "range": lambda msg, *args, **kwargs: contextlib.nullcontext()}
    for name, answer in nvtx.items():
        setattr(cuda.nvtx, name, answer)
    try:
        from triton.runtime import driver
        driver.set_active(Driver())
    except (ImportError, AttributeError):  # another Triton: its driver as it is
        pass
    mode = _mode_class(submission)
    mode().__enter__()
    from judge.worker import guarded_threads
    guarded_threads.thread_function_modes((mode,))  # torch's function modes are per thread: solve's threads enter one too
