"""A worker that fills the disk is stopped from the judge's side
(judge.disk_watch): its folders' sum is watched, each file capped."""

from __future__ import annotations

import time

from judge.disk_watch import DiskWatch, usage
from judge.grader import GradeOptions, grade
from judge.isolation import Limits

FILLS_THE_DISK = '''"""Hostile: writes 16 MB files into its folder until stopped, then
computes the answer. Expected under a 64 MB disk limit: runtime_error."""
import os
import time

import triton
import triton.language as tl


@triton.jit
def _add(a, b, c, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(c + i, tl.load(a + i, mask=m) + tl.load(b + i, mask=m), mask=m)


def solve(a, b, c, N):
    chunk = os.urandom(1 << 20) * 16
    for k in range(64):  # 1 GiB at most, 16 MB at a time
        with open(f"fill-{k}.bin", "wb") as out:
            out.write(chunk)
        time.sleep(0.1)
    _add[(triton.cdiv(N, 1024),)](a, b, c, N, BLOCK=1024)
'''


def test_usage_counts_bytes_and_entries(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.bin").write_bytes(b"\1" * 100_000)
    (tmp_path / "y.bin").write_bytes(b"\1" * 50_000)
    held, entries = usage([tmp_path])
    assert held >= 150_000 and entries == 3
    assert usage([tmp_path], max_entries=1)[1] > 1  # the walk stops past the cap


def test_the_watch_calls_back_once_the_limit_is_passed(tmp_path):
    called = []
    watch = DiskWatch([tmp_path], 1 << 20, lambda: called.append(time.monotonic()), period_s=0.05).start()
    (tmp_path / "small.bin").write_bytes(b"\1" * 1000)
    time.sleep(0.3)
    assert not called
    (tmp_path / "large.bin").write_bytes(b"\1" * (2 << 20))
    deadline = time.monotonic() + 5
    while not called and time.monotonic() < deadline:
        time.sleep(0.05)
    watch.stop()
    assert called and "GiB" in watch.exceeded


def test_a_file_that_fills_the_disk_is_killed(tmp_path):
    path = tmp_path / "fills_the_disk.py"
    path.write_text(FILLS_THE_DISK)
    result = grade(path, GradeOptions(challenge="vector_addition", device="cpu", seed=3,
                                      limits=Limits(disk_bytes=64 << 20, case_timeout_s=60, total_timeout_s=120)))
    assert result.verdict.value == "runtime_error"
    assert "past the judge's limit" in result.message and "killed" in result.message
