"""Fault: solve asks for a 4 TiB scratch buffer (1 << 40 float32 elements).

torch.zeros must also touch every page, so the request cannot slip through
lazily: it fails or hits the memory limit. Expected: memory_limit_exceeded.
"""
import torch


def solve(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, M: int, N: int, K: int):
    scratch = torch.zeros(1 << 40, dtype=torch.float32, device=a.device)
    c.copy_(scratch[: M * K].view(M, K))
