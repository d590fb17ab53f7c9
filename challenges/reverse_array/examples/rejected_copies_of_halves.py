"""Cheat: no kernel reverses anything. The array is padded to a power of two
in a scratch buffer, then at each of log2 n levels the two halves of every
block are swapped with clone and copy_ between views of the scratch; a copy_
puts the reversed array back. A kernel that does nothing makes the launch.
Expected: rejected (copies of parts of tensors in reverse_array)."""
import torch
import triton
import triton.language as tl


@triton.jit
def idle(x_ptr):
    pid = tl.program_id(0)


def solve(input, N):
    idle[(1,)](input)
    size = 1
    while size < N:
        size *= 2
    scratch = torch.zeros(size, device=input.device, dtype=input.dtype)
    scratch[:N].copy_(input)
    half = 1
    while half < size:
        blocks = scratch.view(size // (2 * half), 2, half)
        saved = blocks.clone()
        blocks[:, 0, :].copy_(saved[:, 1, :])
        blocks[:, 1, :].copy_(saved[:, 0, :])
        half *= 2
    input.copy_(scratch[size - N:])
