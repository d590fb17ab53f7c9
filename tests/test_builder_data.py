"""What torch's tensor builders may be handed in the worker (judge.worker.builder_data),
and the arguments the operator guard refuses (judge.worker.argument_types): unit checks,
no worker. The verdicts of the files behind them are in tests/fixtures (builder_*.py,
symbolic_size_runs_torch.py, tensor_subclass_own_index.py)."""
import numpy as np
import pytest
import torch

from judge.worker import builder_data
from judge.worker.rules import RuleViolation
from judge.worker.argument_types import other_layout, record_tensor_types, refused_in


class Deferred:
    def __float__(self):
        return 1.0


class Count(int):
    pass


class Rows:
    def __len__(self):
        return 2

    def __getitem__(self, index):
        if index >= 2:
            raise IndexError(index)
        return [float(index), 2.0]


@pytest.mark.parametrize("data", [
    [1.0, 2, True], (1, 2), [[1.0], [2.0]], np.arange(4.0), np.float32(2.0), 7,
    [np.int64(3), np.float16(1.0)], torch.zeros(3), [torch.zeros(()), torch.ones(())], torch.Size([2, 3]),
])
def test_plain_data_passes_as_it_was(data):
    args, kwargs = builder_data.checked("tensor", (data,), {"dtype": torch.float32, "device": "cpu"})
    assert kwargs == {"dtype": torch.float32, "device": "cpu"}
    assert torch.equal(torch.as_tensor(args[0], dtype=torch.float64), torch.as_tensor(data, dtype=torch.float64))


@pytest.mark.parametrize("data", [[Deferred()], [[1.0, Deferred()]], np.array([Deferred()], dtype=object)])
def test_an_object_whose_own_conversion_torch_would_call_is_refused(data):
    with pytest.raises(RuleViolation, match="inside a tensor builder"):
        builder_data.checked("tensor", (data,), {})


def test_a_number_subclass_passes_only_with_pythons_own_conversions():
    import enum

    class Mode(enum.IntEnum):
        FAST = 2

    class Flags(enum.IntFlag):
        LEAKY = 1

    builder_data.checked("tensor", ([Mode.FAST, Flags.LEAKY, 1],), {})
    Count.__float__ = lambda self: 0.0
    try:
        with pytest.raises(RuleViolation):
            builder_data.checked("tensor", ([Count(3)],), {})
    finally:
        del Count.__float__


def test_a_sequence_of_the_files_is_read_into_a_list_first():
    args, _ = builder_data.checked("tensor", (Rows(),), {})
    assert args[0] == [[0.0, 2.0], [1.0, 2.0]]


def test_a_tensor_subclass_with_its_own_conversion_is_refused_inside_a_list():
    own = type("Own", (torch.Tensor,), {})
    own.__float__ = lambda self: 0.0  # set after the class was made: the builder's check finds it
    for data in ([torch.zeros(()).as_subclass(own)], torch.zeros(()).as_subclass(own)):
        with pytest.raises(RuleViolation):
            builder_data.checked("tensor", (data,), {})
    builder_data.checked("tensor", ([3j, 1.0],), {})


def test_leading_arguments_that_are_not_data_are_left_alone():
    tensor = torch.zeros(2)
    args, _ = builder_data.checked("new_tensor", (tensor, [1.0, 2.0]), {}, skip=1)
    assert args[0] is tensor and args[1] == [1.0, 2.0]


def test_symbolic_numbers_and_new_tensor_subclasses_are_found_among_arguments():
    class Node:
        def is_int(self):
            return True

    record_tensor_types()
    number = torch.SymInt(Node())
    assert "SymInt" in refused_in((1, number), {})
    assert "SymInt" in refused_in(([1, number],), {})
    assert "SymInt" in refused_in((), {"end": number})
    assert refused_in((1, [2, 3], torch.zeros(1), torch.nn.Parameter(torch.zeros(1))), {"dim": 0}) is None
    plain = type("Plain", (torch.Tensor,), {"scale": lambda self: 2.0})
    assert refused_in((torch.zeros(1).as_subclass(plain),), {}) is None
    plain.__torch_function__ = classmethod(lambda cls, func, types, args=(), kwargs=None: func(*args, **(kwargs or {})))
    assert "__torch_function__" in refused_in((torch.zeros(1).as_subclass(plain),), {})


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_tensors_that_are_not_plain_strided_ones_are_found_among_arguments():
    """Their views and copies compute (a sparse select summed duplicates)."""
    record_tensor_types()
    sparse = torch.sparse_coo_tensor(torch.zeros((1, 2), dtype=torch.long), torch.ones(2, 3), (1, 3))
    assert other_layout((sparse, 0, 0), {}) == "a sparse_coo tensor"
    assert other_layout(([torch.zeros(1), sparse],), {}) == "a sparse_coo tensor"
    assert other_layout((), {"input": torch.eye(3).to_sparse_csr()}) == "a sparse_csr tensor"
    assert other_layout((torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),), {}) == "a nested tensor"
    assert other_layout((torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint32),), {}) == "a quantized tensor"
    assert "negation" in other_layout((torch._neg_view(torch.ones(3)),), {})
    assert other_layout((torch.ones(3), [torch.zeros(2)], 1.0), {"out": torch.empty(3)}) is None
