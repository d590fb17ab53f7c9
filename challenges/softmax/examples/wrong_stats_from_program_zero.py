"""Wrong: one launch, in which program 0 computes the maximum and the sum
of exponentials into a scratch buffer and every program reads them. Nothing
makes the other programs wait for program 0 on a GPU (on the H100 the
outputs were off by up to 6.0); Triton's interpreter runs program 0 first,
so the CPU mode reports the race itself."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_one_launch(input_ptr, output_ptr, stats_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        top = -float("inf")
        for start in range(0, N, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            top = tl.maximum(top, tl.max(tl.load(input_ptr + offsets, mask=offsets < N, other=-float("inf")), 0))
        total = 0.0
        for start in range(0, N, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            total += tl.sum(tl.exp(tl.load(input_ptr + offsets, mask=offsets < N, other=-float("inf")) - top), 0)
        tl.store(stats_ptr, top)
        tl.store(stats_ptr + 1, total)
    top = tl.load(stats_ptr)
    total = tl.load(stats_ptr + 1)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(input_ptr + offsets, mask=offsets < N)
    tl.store(output_ptr + offsets, tl.exp(x - top) / total, mask=offsets < N)


def solve(input: torch.Tensor, output: torch.Tensor, N: int):
    stats = torch.empty(2, device=input.device, dtype=torch.float32)
    softmax_one_launch[(triton.cdiv(N, 1024),)](input, output, stats, N, BLOCK=1024)
