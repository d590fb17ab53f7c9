"""Not allowed: the copy made by torch.cat, joining the one matrix into the
output, beside an idle kernel. torch.cat and F.pad are allowed where torch's
copies are (they move data and compute nothing), and refused with them
here."""

import torch
import triton
import triton.language as tl


@triton.jit
def idle_kernel(b_ptr):
    pass


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    idle_kernel[(1,)](b)
    torch.cat([a.reshape(-1)], out=b.reshape(-1))
