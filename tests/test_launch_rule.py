"""The launch rule as the judge applies it (judge.casework.Run.idle_rule):
a call that launched no Triton kernel passes only where it left every
output as the judge made it and the case needed no work; the worker's
report of such calls is checked like any other reply. The verdicts on real
files: tests/fixtures/no_launch_*.py and reverse_array's examples."""

from __future__ import annotations

import pytest
import torch

from judge.casework import Run
from judge.errors import ProtocolError
from judge.protocol import NO_LAUNCH, POISON_BITS


def _poison(n: int) -> torch.Tensor:
    signed = POISON_BITS - (1 << 32) if POISON_BITS >= 1 << 31 else POISON_BITS
    return torch.full((n,), signed, dtype=torch.int32).view(torch.float32)


def test_an_in_place_output_left_as_its_input_passes():
    made = torch.tensor([1.5, -2.0, 3.25])
    assert Run.idle_rule([0], [{"x": made.clone()}], [{"x": made}]) is None


def test_an_in_place_output_changed_without_a_launch_is_refused():
    made = torch.tensor([1.5, -2.0, 3.25])
    rule = Run.idle_rule([0], [{"x": made.flip(0)}], [{"x": made}])
    assert rule.startswith(NO_LAUNCH) and "'x' changed" in rule


def test_an_output_written_without_a_launch_is_refused_and_one_left_poisoned_is_not():
    inputs = [{"a": torch.ones(4)}, {"a": torch.ones(4)}]
    outputs = [{"c": _poison(4)}, {"c": torch.zeros(4)}]
    assert Run.idle_rule([0], outputs, inputs) is None  # wrong, and rejected once compared (run_case)
    assert "'c' changed" in Run.idle_rule([0, 1], outputs, inputs)
    assert Run.idle_rule([], outputs, inputs) is None


@pytest.mark.parametrize("report", ["0", [0.0], [-1], [2], [True], {"0": 1}, None])
def test_a_garbled_report_is_the_workers_fault(report):
    made = torch.ones(3)
    with pytest.raises(ProtocolError):
        Run.idle_rule(report, [{"x": made}, {"x": made}], [{"x": made}, {"x": made}])
