"""The timer's check sums of each timed call's outputs (judge.check_sums):
one kernel pass that must give what the judge recomputes with torch
(judge.timed.stale_calls: a plain float64 sum and one weighted ±1 by
position with judge.cases.check_weights). On the GPU where there is one,
else under Triton's interpreter: the kernel either way."""

from __future__ import annotations

import pytest
import torch

from judge import cases, check_sums

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _torch_sums(tensors):
    total = torch.zeros(2, dtype=torch.float64, device=DEVICE)
    for t in tensors:
        wide = t.reshape(-1).to(torch.float64)
        total += torch.stack([wide.sum(), (wide * cases.check_weights(wide.numel(), DEVICE)).sum()])
    return total


@pytest.mark.parametrize("n", [0, 1, 15, check_sums.BLOCK - 1, check_sums.BLOCK, 3 * check_sums.BLOCK + 7])
def test_the_kernel_gives_the_judges_sums(n):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n)).to(DEVICE)
    assert torch.allclose(check_sums.sums([x]), _torch_sums([x]), rtol=1e-12, atol=1e-9)


def test_several_outputs_and_dtypes_weigh_each_by_its_own_positions():
    gen = torch.Generator().manual_seed(3)
    outs = [torch.randn(70, 90, generator=gen), torch.randint(-9, 9, (5000,), dtype=torch.int32, generator=gen),
            torch.tensor([True, False, True])]
    outs = [t.to(DEVICE) for t in outs]
    assert torch.allclose(check_sums.sums(outs), _torch_sums(outs), rtol=1e-12, atol=1e-9)


def test_a_permuted_output_changes_the_weighted_sum_only():
    """What the weighted sum is for: right values in the wrong places."""
    x = torch.arange(1, 10_001, dtype=torch.float32, device=DEVICE)
    plain, weighted = check_sums.sums([x]).tolist()
    plain_r, weighted_r = check_sums.sums([x.flip(0).contiguous()]).tolist()
    assert plain == plain_r and weighted != weighted_r


def test_a_nan_left_in_an_output_shows_in_both_sums():
    x = torch.ones(9000, device=DEVICE)
    x[4321] = float("nan")
    assert all(v != v for v in check_sums.sums([x]).tolist())
