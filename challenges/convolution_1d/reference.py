"""The truth of convolution_1d (a valid cross-correlation), with the error
scales of its sums of products, and the library call it is timed against.
Runs in the judge (trusted)."""

from __future__ import annotations

import torch

from judge.compare import Expected


def reference(inputs: dict[str, torch.Tensor]) -> dict[str, Expected]:
    """output[i] = Σ_j input[i+j]·kernel[j] in float64, one tap at a time: a
    float32 product is exact in float64, and the memory stays O(output)
    whatever the kernel size (an unfolded matrix would take 24 GB at the
    performance size). Also Σ_j |input[i+j]·kernel[j]| and Σ_j (·)² for the
    error-bound policy."""
    x = inputs["input"].to(torch.float64)
    w = inputs["kernel"].to(torch.float64)
    k = w.numel()
    n_out = x.numel() - k + 1
    exact = torch.zeros(n_out, dtype=torch.float64, device=x.device)
    abs_scale = torch.zeros_like(exact)
    sq_scale = torch.zeros_like(exact)
    for j in range(k):
        p = x[j:j + n_out] * w[j]
        exact += p
        abs_scale += p.abs()
        sq_scale += p.square()
    return {"output": Expected(exact=exact, abs_scale=abs_scale, sq_scale=sq_scale, terms=k)}


def _conv(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor, tf32: bool):
    """torch's conv1d (cuDNN) written into `out`, with cuDNN's TF32 switch
    set to `tf32` during the call only."""
    x3, w3 = x.view(1, 1, -1), w.view(1, 1, -1)

    def call():
        previous = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = tf32
        try:
            out.copy_(torch.nn.functional.conv1d(x3, w3).view(-1))
        finally:
            torch.backends.cudnn.allow_tf32 = previous
    return call


def baselines(inputs: dict[str, torch.Tensor]) -> dict:
    """conv1d in float32 (TF32 off: the accuracy asked of submissions) and,
    for comparison, with cuDNN's default TF32 (GPU only)."""
    x, w = inputs["input"], inputs["kernel"]
    out = torch.empty(x.numel() - w.numel() + 1, device=x.device, dtype=torch.float32)
    return {"torch": _conv(x, w, out, tf32=False), "torch_tf32": _conv(x, w, out, tf32=True)}
