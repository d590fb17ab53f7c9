"""Accepted: a persistent kernel (one program per SM, as many as the GPU
reports) that strides over the blocks, widening its loop variable to int64
before computing offsets (i.to(tl.int64): the GPU's loop variable is a
Triton scalar; the CPU worker makes the interpreter's one too), and adds
each program's sum atomically."""

import torch
import triton
import triton.language as tl


@triton.jit
def strided_sum(input_ptr, output_ptr, N, blocks, programs, BLOCK: tl.constexpr):
    part = tl.zeros([BLOCK], dtype=tl.float32)
    for block in range(tl.program_id(0), blocks, programs):
        offsets = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        part += tl.load(input_ptr + offsets, mask=offsets < N, other=0.0)
    tl.atomic_add(output_ptr, tl.sum(part, axis=0))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    BLOCK = 1024
    blocks = triton.cdiv(N, BLOCK)
    programs = min(blocks, torch.cuda.get_device_properties(0).multi_processor_count)
    output.zero_()
    strided_sum[(programs,)](input, output, N, blocks, programs, BLOCK=BLOCK)
