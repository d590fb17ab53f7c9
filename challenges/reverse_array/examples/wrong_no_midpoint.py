"""Wrong: written like an out-of-place reverse (out[N-1-i] = in[i]) but with
`input` as both source and destination, and a grid over all N elements. A
program can overwrite the far end of the array before the program that
owns it has read it, so what comes back depends on which blocks ran first:
under the interpreter (blocks in order) the back half is overwritten before
it is read; on a GPU it fails once N needs many waves of blocks."""

import torch
import triton
import triton.language as tl


@triton.jit
def reverse_all_kernel(x_ptr, N, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    i = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = i < N
    v = tl.load(x_ptr + i, mask=mask)
    tl.store(x_ptr + (N - 1 - i), v, mask=mask)


def solve(input: torch.Tensor, N: int):
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(N, BLOCK_SIZE),)
    reverse_all_kernel[grid](input, N, BLOCK_SIZE=BLOCK_SIZE)
