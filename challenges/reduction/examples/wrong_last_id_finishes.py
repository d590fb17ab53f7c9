"""Wrong: every program adds its block's sum into a zeroed cell with
tl.atomic_add, and the program with the last id copies the cell into the
output, as if it ran last. Nothing says the others are done: on a GPU the
programs run in no set order, and the last id may copy the cell before
their adds land. (The interpreter ran programs in id order, so this came
out right on the CPU; it now runs them last id first, as a GPU may.)
The honest form takes a ticket: the program whose atomic count comes back
last is the one that reads (correct_atomic_chunks.py adds into the output
itself)."""
import torch
import triton
import triton.language as tl


@triton.jit
def add_then_copy(x_ptr, out_ptr, cell_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(cell_ptr, tl.sum(tl.load(x_ptr + offsets, mask=offsets < n, other=0.0), axis=0))
    if pid == tl.num_programs(0) - 1:
        tl.store(out_ptr, tl.load(cell_ptr))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    cell = torch.zeros(1, dtype=torch.float32, device=input.device)
    add_then_copy[(triton.cdiv(N, 1024),)](input, output, cell, N, BLOCK=1024)
