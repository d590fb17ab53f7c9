import os

import pytest
import torch

# Without a GPU, run Triton kernels on CPU tensors through the interpreter.
# Triton reads this when a kernel is decorated, so it must be set before any
# test module imports reference.matmul; conftest.py is imported first.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture
def family():
    """(parent, child pid): a process with a child of its own, to pause
    (tests/test_gpu_pause.py, tests/test_cpu_share.py)."""
    from tests.pause_helpers import family_processes
    yield from family_processes()
