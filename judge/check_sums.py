"""The two check sums of a timed call's outputs (judge.timing), in one pass
over them on the GPU.

The timer sums every timed call's outputs on the device, plainly and with
±1 weights by position (judge.cases.check_weights), in float64; the judge
recomputes both from the call's fresh inputs (judge.timed.stale_calls).
Done with torch operators that is a cast to float64, a weights tensor and
a product: ~100 bytes of memory traffic per output element, ~1 ms per call
on the H100 at matrix multiplication's performance size, between calls of
~10 ms. That much memory-bound work between calls lets a power-limited
GPU's clock recover, so the calls read faster than back-to-back calls
would (bench/results/cost_fidelity_h100.md). One Triton kernel reads each
element once (4 bytes) and derives the weights from the index.

The kernel is compiled by the worker's warm-up (judge.worker.warmup),
before any submission is loaded, and kept in the judge's Triton cache seed
(judge.warm_cache); it runs in the worker, whose sums the judge checks, so
nothing here is trusted. The warm-up also keeps the kernel's C launcher
(prepare), and the sums call it directly: a launch through Triton's Python
runs the launch hooks anyone set (triton.knobs.runtime), and a file's hook
had added the vectors there, after each timed call and outside the timer's
events, while the calls themselves did nothing
(tests/fixtures/gpu/window_launch_hook_defers_work.py). A dtype with no
launcher kept gets torch's operators, as a dtype the kernel cannot load.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .cases import WEIGHT_BIT, WEIGHT_MUL_1, WEIGHT_MUL_2, WEIGHT_SEED, check_weights

# What sums() calls, bound as the module is imported (at the worker's start,
# before any submission): it runs after each timed call, where an operator is
# the worker's own, so nothing it calls may be looked up anew then (torch's
# names, torch.Tensor's methods, a builtin: a file's swapped in would run there).
_TENSOR = torch._C.TensorBase
_BOUND = (_TENSOR.reshape, _TENSOR.numel, _TENSOR.dtype.__get__, _TENSOR.is_cuda.__get__, _TENSOR.to, _TENSOR.sum,
          _TENSOR.mul, _TENSOR.add, _TENSOR.device.__get__, torch.stack, torch.empty, torch.zeros, max,
          torch.float64, frozenset({torch.bool, torch.complex64, torch.complex128}))
_LAUNCH_BOUND = (_TENSOR.data_ptr, _TENSOR.get_device, getattr(torch._C, "_cuda_getCurrentRawStream", None))
# dtype -> what its kernel's C launcher is handed (prepare); in the two
# functions' defaults only (deleted below): a module's names are within a
# file's reach in the worker (a judge function's __globals__), and a launcher
# of the file's put in this dict in place would compute the timed outputs'
# sums, the answer too, outside the timed calls.
_LAUNCHERS: dict = {}
_I32 = 2 ** 31  # the launcher kept takes n as a 32-bit int (n = 1 when compiled)

BLOCK = 4096
# judge.cases.check_weights' mixer, as constants of the kernel.
SEED, MUL_1, MUL_2, BIT = (tl.constexpr(v) for v in (WEIGHT_SEED, WEIGHT_MUL_1, WEIGHT_MUL_2, WEIGHT_BIT))


@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["x_ptr"])
def _partial_sums(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    block = tl.program_id(0).to(tl.int64)
    index = block * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    x = tl.load(x_ptr + index, mask=index < n, other=0).to(tl.float64)
    z = index + tl.full((BLOCK,), SEED, tl.int64)
    z = (z ^ (z >> 30)) * tl.full((BLOCK,), MUL_1, tl.int64)
    z = (z ^ (z >> 27)) * tl.full((BLOCK,), MUL_2, tl.int64)
    bits = ((z ^ (z >> 31)) >> BIT) & 1
    weights = (1 - 2 * bits).to(tl.float64)
    tl.store(partial_ptr + 2 * block, tl.sum(x, axis=0))
    tl.store(partial_ptr + 2 * block + 1, tl.sum(x * weights, axis=0))


def prepare(sample, _LAUNCHERS=_LAUNCHERS) -> bool:
    """Compile and load the kernel for `sample`'s dtype (a CUDA tensor), and
    keep its C launcher for sums(). Called by the worker's warm-up, before
    any submission is loaded: nothing of a file's runs here. False where
    this Triton's launcher is not the one known here (its sums then go
    through torch's operators)."""
    flat = sample.reshape(-1)[:1]
    partial = torch.empty((1, 2), dtype=torch.float64, device=sample.device)
    kernel = _partial_sums[(1,)](flat, partial, 1, BLOCK=BLOCK)
    launcher = getattr(kernel, "run", None)
    launch = getattr(launcher, "launch", None)
    if not (type(launcher).__name__ == "CudaLauncher" and type(launch).__name__ == "builtin_function_or_method"
            and getattr(launcher, "global_scratch_size", 1) == 0 and getattr(launcher, "profile_scratch_size", 1) == 0
            and _LAUNCH_BOUND[2] is not None):
        return False
    _LAUNCHERS[sample.dtype] = (launch, kernel.function, launcher.launch_cooperative_grid, launcher.launch_pdl,
                                kernel.packed_metadata)
    # Checked once against torch's operators, on more than one block: a
    # launcher that takes its arguments otherwise is not kept.
    probe = torch.arange(3 * BLOCK + 5, device=sample.device).to(sample.dtype)
    try:
        kept = torch.equal(sums([probe]), _by_torch(probe))
    except Exception:  # noqa: BLE001 - not kept; the sums go through torch
        kept = False
    if not kept:
        del _LAUNCHERS[sample.dtype]
    return kept


def _by_torch(flat) -> "torch.Tensor":
    wide = flat.to(torch.float64)
    return torch.stack([wide.sum(), (wide * check_weights(flat.numel(), flat.device)).sum()])


def sums(tensors, _LAUNCHERS=_LAUNCHERS) -> "torch.Tensor":  # noqa: F821 - torch is imported where called
    """[plain sum, weighted sum] of `tensors` (each contiguous, weights by
    position within each tensor), float64, on their device, without a host
    synchronisation. On the GPU the kernel, by its C launcher (prepare);
    under Triton's interpreter (the CPU) the kernel as Triton runs it; a
    dtype with no launcher kept, or one the kernel cannot load (bool,
    complex), through torch operators."""
    (reshape, numel, dtype_of, is_cuda, to, total_of, mul, add, device_of, stack, empty, zeros, most,
     float64, unloadable) = _BOUND
    data_ptr, device_index, raw_stream = _LAUNCH_BOUND
    total = None
    for tensor in tensors:
        flat = reshape(tensor, -1)
        n = numel(flat)
        dtype = dtype_of(flat)
        cuda = is_cuda(flat)
        direct = _LAUNCHERS.get(dtype) if cuda and n < _I32 else None
        if direct is None and (dtype in unloadable or cuda or not interpreted()):
            wide = to(flat, float64)
            part = stack([total_of(wide), total_of(mul(wide, check_weights(n, device_of(flat))))])
        else:
            blocks = most(1, -(-n // BLOCK))
            partial = empty((blocks, 2), dtype=float64, device=device_of(flat))
            if direct is None:
                _partial_sums[(blocks,)](flat, partial, n, BLOCK=BLOCK)
            else:
                launch, function, cooperative, pdl, packed = direct
                # (grid, stream, function, launch flags, scratch, metadata, launch
                # metadata and the two hooks: none, then the kernel's own arguments)
                launch(blocks, 1, 1, raw_stream(device_index(flat)), function, cooperative, pdl, None, None, packed,
                       None, None, None, data_ptr(flat), data_ptr(partial), n, BLOCK)
            part = total_of(partial, 0)
        total = part if total is None else add(total, part)
    return total if total is not None else zeros(2, dtype=float64)


def totals(sums: list) -> list:
    """The timed calls' [plain, weighted] sums, read on the host at the end of
    a timing (here, among the worker's own reads: judge.worker.attribution)."""
    return _TENSOR.tolist(_BOUND[9](sums))


def interpreted() -> bool:
    """Under TRITON_INTERPRET=1, triton.jit made an InterpretedFunction (CPU tensors)."""
    return _INTERPRETED


_INTERPRETED = type(_partial_sums).__name__ == "InterpretedFunction"  # (known as the module is imported)


def launchers_kept() -> frozenset:
    """The dtypes whose sums go through their kernel's C launcher."""
    return frozenset(prepare.__defaults__[0])


del _LAUNCHERS  # kept in prepare's and sums' defaults only
