"""Two-pass sum written as Triton's tutorials open: the device taken from
Triton's driver (DEVICE), the input checked against it, and the scratch
buffer of partial sums made on it. On a GPU the driver answers cuda:0; the
CPU mode answers the same (it was the CPU, so the check failed and the
scratch was taken for host memory there, while the H100 accepted)."""
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def block_sums(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    values = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(partial_ptr + pid, tl.sum(values, axis=0))


@triton.jit
def add_partials(partial_ptr, out_ptr, count, BLOCK: tl.constexpr):
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, count, BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        total += tl.load(partial_ptr + offsets, mask=offsets < count, other=0.0)
    tl.store(out_ptr, tl.sum(total, axis=0))


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    assert input.device == DEVICE and output.device == DEVICE, "the tensors live on Triton's device"
    block = 2048
    count = triton.cdiv(N, block)
    partials = torch.empty(count, device=DEVICE, dtype=torch.float32)
    block_sums[(count,)](input, partials, N, BLOCK=block)
    add_partials[(1,)](partials, output, count, BLOCK=1024)
