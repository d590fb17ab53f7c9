import os

import torch

# Without a GPU, run Triton kernels on CPU tensors through the interpreter.
# Triton reads this when a kernel is decorated, so it must be set before any
# test module imports reference.matmul; conftest.py is imported first.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
