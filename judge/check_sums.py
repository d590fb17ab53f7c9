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
nothing here is trusted.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# What sums() calls, bound as the module is imported (at the worker's start,
# before any submission): it runs after each timed call, where an operator is
# the worker's own, so nothing it calls may be looked up anew then (torch's
# names, torch.Tensor's methods, a builtin: a file's swapped in would run there).
_TENSOR = torch._C.TensorBase
_BOUND = (_TENSOR.reshape, _TENSOR.numel, _TENSOR.dtype.__get__, _TENSOR.is_cuda.__get__, _TENSOR.to, _TENSOR.sum,
          _TENSOR.mul, _TENSOR.add, _TENSOR.device.__get__, torch.stack, torch.empty, torch.zeros, triton.cdiv, max,
          torch.float64, frozenset({torch.bool, torch.complex64, torch.complex128}))

BLOCK = 4096
HASH = tl.constexpr(2654435761)  # judge.cases.check_weights: bit 13 of index × HASH picks the sign


@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["x_ptr"])
def _partial_sums(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    block = tl.program_id(0).to(tl.int64)
    index = block * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    x = tl.load(x_ptr + index, mask=index < n, other=0).to(tl.float64)
    bits = ((index * tl.full((BLOCK,), HASH, tl.int64)) >> 13) & 1
    weights = (1 - 2 * bits).to(tl.float64)
    tl.store(partial_ptr + 2 * block, tl.sum(x, axis=0))
    tl.store(partial_ptr + 2 * block + 1, tl.sum(x * weights, axis=0))


def sums(tensors) -> "torch.Tensor":  # noqa: F821 - torch is imported where called
    """[plain sum, weighted sum] of `tensors` (each contiguous, weights by
    position within each tensor), float64, on their device, without a host
    synchronisation. On the GPU (or the CPU under Triton's interpreter) the
    kernel; a dtype it cannot load (bool, complex) through torch operators."""
    (reshape, numel, dtype_of, is_cuda, to, total_of, mul, add, device_of, stack, empty, zeros, cdiv, most,
     float64, unloadable) = _BOUND
    total = None
    for tensor in tensors:
        flat = reshape(tensor, -1)
        n = numel(flat)
        if dtype_of(flat) in unloadable or not (is_cuda(flat) or interpreted()):
            from .cases import check_weights
            wide = to(flat, float64)
            part = stack([total_of(wide), total_of(mul(wide, check_weights(n, device_of(flat))))])
        else:
            blocks = most(1, cdiv(n, BLOCK))
            partial = empty((blocks, 2), dtype=float64, device=device_of(flat))
            _partial_sums[(blocks,)](flat, partial, n, BLOCK=BLOCK)
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
