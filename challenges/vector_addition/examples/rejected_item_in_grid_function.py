"""Not allowed: the sum made on the host by the launch's grid function,
made by exec under globals of its own (so that its frames looked like
Triton's below the launch): it reads each element with float() (.item(),
a host round trip) and fills the output element by element, while the
kernel does nothing. Below a launch, .item() is Triton's alone."""
import triton
import triton.language as tl

SOURCE = """
def grid(meta):
    for i in range(N):
        c[i].fill_(float(a[i]) + float(b[i]))
    return (1,)
"""


@triton.jit
def idle(c_ptr, n, BLOCK: tl.constexpr):
    pass


def solve(a, b, c, N):
    space = {"a": a, "b": b, "c": c, "N": N}
    exec(SOURCE, space)
    idle[space["grid"]](c, N, BLOCK=16)
