"""Not allowed: the transpose is torch's (a column-wise strided view of the
input, cloned into a contiguous scratch buffer); the Triton kernel only
copies that buffer into the output in order."""

import torch
import triton
import triton.language as tl


@triton.jit
def flat_copy(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=inside), mask=inside)


def solve(input: torch.Tensor, output: torch.Tensor, rows: int, cols: int):
    scratch = torch.as_strided(input, (cols, rows), (1, cols)).clone(memory_format=torch.contiguous_format)
    n = rows * cols
    flat_copy[(triton.cdiv(n, 1024),)](scratch, output, n, BLOCK=1024)
