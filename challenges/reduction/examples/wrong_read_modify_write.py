"""Wrong: each program adds its block's sum to the output with a plain load
and store instead of tl.atomic_add. A GPU runs the programs at once, so
most updates are lost (measured on the H100: 2562.6 for a sum of 524927.4
at N = 2^20); Triton's interpreter runs them one by one, where the sum
comes out right, so the CPU mode reports the race itself."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_block_sum(input_ptr, output_ptr, N, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(input_ptr + offsets, mask=offsets < N, other=0.0), axis=0)
    tl.store(output_ptr, tl.load(output_ptr) + part)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    output.zero_()
    add_block_sum[(triton.cdiv(N, 1024),)](input, output, N, BLOCK=1024)
