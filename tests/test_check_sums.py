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


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_the_gpu_the_kept_launcher_runs_no_hook_of_triton():
    """The worker's warm-up keeps the kernel's C launcher (prepare); the sums
    then run no launch hook that anyone set: a file's hook had done its work
    there, outside the timer's events
    (tests/fixtures/gpu/window_launch_hook_defers_work.py)."""
    import triton
    assert check_sums.prepare(torch.ones(16, device="cuda"))
    seen = []

    def hook(metadata):
        seen.append(metadata)

    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        gen = torch.Generator().manual_seed(5)
        x = torch.randn(3 * check_sums.BLOCK + 11, generator=gen).to("cuda")
        assert torch.allclose(check_sums.sums([x]), _torch_sums([x]), rtol=1e-12, atol=1e-9)
        assert seen == []
        check_sums._partial_sums[(1,)](x, torch.empty((1, 2), dtype=torch.float64, device="cuda"), 1,
                                       BLOCK=check_sums.BLOCK)
        assert len(seen) == 1  # the hook itself works: Triton's own launch runs it
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_dtype_with_no_launcher_kept_goes_through_torch():
    check_sums.prepare(torch.ones(16, device="cuda"))
    x = torch.randint(-9, 9, (5000,), dtype=torch.int16, device="cuda")
    assert torch.int16 not in check_sums._LAUNCHERS
    assert torch.allclose(check_sums.sums([x]), _torch_sums([x]), rtol=1e-12, atol=1e-9)
