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


def _periodic_shortcut(a, b, weights):
    """A matmul's weighted sum, worked out as if its weights repeated every
    few rows (O(MN + NK), not O(MNK)): what a file met every faked timed
    call's sums with when the weights were bit 13 of index × 2654435761."""
    rows, inner = a.shape[0], b.shape[1]
    period = max(1, (1 << 14) // inner)
    w = weights.reshape(rows, inner)[:period]
    classes = torch.stack([a[r::period].sum(0) for r in range(min(period, rows))])
    return float((classes * (w[: len(classes)] @ b.T)).sum())


def test_the_weights_have_no_period_a_shortcut_could_use():
    """Two positions any power of two apart (or any small distance) agree
    on their weight about half the time; and the matmul shortcut that had
    worked with the old weights misses the weighted sum by far."""
    w = cases.check_weights(1 << 17, "cpu")
    for gap in [1, 2, 3, 5, 7, *(1 << k for k in range(2, 17))]:
        agree = float((w[:-gap] == w[gap:]).double().mean())
        assert 0.48 < agree < 0.52, (gap, agree)
    gen = torch.Generator().manual_seed(7)
    a, b = torch.randn(16, 32, generator=gen, dtype=torch.float64), torch.randn(32, 4096, generator=gen,
                                                                                  dtype=torch.float64)
    c = a @ b
    old = (1 - 2 * (((torch.arange(c.numel()) * 2654435761) >> 13) & 1)).to(torch.float64)
    assert _periodic_shortcut(a, b, old) == pytest.approx(float((c.reshape(-1) * old).sum()), rel=1e-9)
    weights = cases.check_weights(c.numel(), "cpu")
    truth = float((c.reshape(-1) * weights).sum())
    assert abs(_periodic_shortcut(a, b, weights) - truth) > 0.1 * float(c.abs().sum()) / c.numel() ** 0.5


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
    assert torch.int16 not in check_sums.launchers_kept()
    assert torch.allclose(check_sums.sums([x]), _torch_sums([x]), rtol=1e-12, atol=1e-9)
