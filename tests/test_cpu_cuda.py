"""The CUDA a GPU file names, answered in a CPU worker (judge/worker/cpu_cuda.py):
checked in a fresh process, since it changes torch.cuda and enters a mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import torch
if torch.cuda.is_available():
    print('skip'); raise SystemExit
from judge.worker import cpu_cuda
cpu_cuda.install(None, tf32={tf32})
x = torch.zeros(3, device='cuda')
assert x.device.type == 'cpu' and x.is_cuda
assert x.to('cuda').device.type == 'cpu' and x.cuda() is x
assert torch.empty(2, device=torch.device('cuda', 0)).device.type == 'cpu'
assert torch.zeros(2, device=0).device.type == 'cpu' and x.to(0).device.type == 'cpu'
torch.cuda.synchronize()
s = torch.cuda.Stream()
with torch.cuda.stream(s), torch.cuda.device(0):
    s.wait_stream(torch.cuda.current_stream())
a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
a.record(); b.record(); b.synchronize()
assert a.elapsed_time(b) >= 0
assert torch.cuda.is_available()  # to the file's code, as on a GPU; torch's own code gets the real answer
import triton
assert triton.runtime.driver.active.get_active_torch_device() == torch.device('cuda', 0)
props = torch.cuda.get_device_properties('cuda')
print(torch.cuda.get_device_name(), torch.cuda.get_device_capability(), props.multi_processor_count,
      triton.runtime.driver.active.utils.get_device_properties(0)['multiprocessor_count'])
"""


@pytest.mark.parametrize("tf32, expected", [(True, "NVIDIA H100 80GB HBM3 (9, 0) 132 132"),
                                            (False, "Tesla T4 (7, 5) 40 40")])
def test_cuda_calls_answer_on_the_cpu_as_the_gpu_checked_for(tf32, expected, tmp_path):
    env = dict(os.environ, TRITON_INTERPRET="1", HOME=str(tmp_path), TRITON_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", PROBE.format(tf32=tf32)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, env=env)
    if out.stdout.strip() == "skip":
        pytest.skip("a CUDA build of torch with a GPU: nothing to answer")
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == expected
