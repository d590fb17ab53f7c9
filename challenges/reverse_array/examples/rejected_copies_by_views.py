"""Cheat: reverse_array without a kernel doing the work. Only operators the guard allows
(constant_pad_nd, view/reshape, slice, cat, copy_) are used: at each of log2(n) levels the
halves of every block are swapped with one torch.cat over views. reverse_array, unlike
matrix_copy/matrix_transpose, has no refused_ops, though moving data is its whole job.
A no-op Triton kernel satisfies "at least one launch". Expected: rejected."""
import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def touch(x_ptr):
    pid = tl.program_id(0)


def solve(input, N):
    touch[(1,)](input)
    size = 1
    while size < N:
        size *= 2
    x = F.pad(input, (0, size - N))  # constant_pad_nd: [x, 0...]
    half = 1
    while half < size:
        v = x.view(size // (2 * half), 2, half)
        x = torch.cat([v[:, 1:2, :], v[:, 0:1, :]], dim=1).view(size)
        half *= 2
    input.copy_(x[size - N:])
