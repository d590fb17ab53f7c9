"""Accepted: one program per 1024-wide block in three launches (maximum,
sum of exponentials, normalise), the exponentials from libdevice
(triton.language.extra.libdevice.exp) rather than tl.exp. On the CPU the
interpreter has no libdevice, so the worker lends it numpy's
(judge/worker/libdevice_cpu.py)."""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def block_max(input_ptr, partial_ptr, N, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(input_ptr + offsets, mask=offsets < N, other=-float("inf"))
    tl.store(partial_ptr + tl.program_id(0), tl.max(x, axis=0))


@triton.jit
def block_sum_exp(input_ptr, partial_max_ptr, partial_sum_ptr, N, blocks, BLOCK: tl.constexpr,
                  BLOCKS: tl.constexpr):
    top = tl.max(tl.load(partial_max_ptr + tl.arange(0, BLOCKS), mask=tl.arange(0, BLOCKS) < blocks,
                         other=-float("inf")), axis=0)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(input_ptr + offsets, mask=offsets < N, other=-float("inf"))
    tl.store(partial_sum_ptr + tl.program_id(0), tl.sum(libdevice.exp(x - top), axis=0))


@triton.jit
def normalise(input_ptr, output_ptr, partial_max_ptr, partial_sum_ptr, N, blocks, BLOCK: tl.constexpr,
              BLOCKS: tl.constexpr):
    inside = tl.arange(0, BLOCKS) < blocks
    top = tl.max(tl.load(partial_max_ptr + tl.arange(0, BLOCKS), mask=inside, other=-float("inf")), axis=0)
    total = tl.sum(tl.load(partial_sum_ptr + tl.arange(0, BLOCKS), mask=inside, other=0.0), axis=0)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(input_ptr + offsets, mask=offsets < N)
    tl.store(output_ptr + offsets, libdevice.exp(x - top) / total, mask=offsets < N)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    blocks = triton.cdiv(N, BLOCK)
    BLOCKS = triton.next_power_of_2(blocks)
    partial_max = torch.empty(blocks, device=input.device, dtype=torch.float32)
    partial_sum = torch.empty(blocks, device=input.device, dtype=torch.float32)
    block_max[(blocks,)](input, partial_max, N, BLOCK=BLOCK)
    block_sum_exp[(blocks,)](input, partial_max, partial_sum, N, blocks, BLOCK=BLOCK, BLOCKS=BLOCKS)
    normalise[(blocks,)](input, output, partial_max, partial_sum, N, blocks, BLOCK=BLOCK, BLOCKS=BLOCKS)
