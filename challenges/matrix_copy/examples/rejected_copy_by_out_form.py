"""Not allowed: the copy made by an aten operator's .out form, which writes
into the tensor it is given (lift_fresh_copy.out here; _unsafe_view.out and
unsafe_split.Tensor_out do the same), beside an idle kernel. In a challenge
that refuses torch's copies, any form that writes into a tensor counts as
one, an allocation's or a fill's aside."""

import torch
import triton
import triton.language as tl


@triton.jit
def idle(ptr):
    pass


def solve(a: torch.Tensor, b: torch.Tensor, N: int):
    torch.ops.aten.lift_fresh_copy.out(a, out=b)
    idle[(1,)](b)
