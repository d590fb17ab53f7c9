"""The CUDA IPC path's checks that need no GPU: what a worker sends is
refused before the driver is asked (judge.cuda_ipc). On a GPU the path
itself is exercised by tests/test_isolation.py (gpu marker)."""

from __future__ import annotations

import pytest

from judge import cuda_ipc
from judge.errors import ProtocolError

GOOD = {"handle": "ab" * 64, "offset": 0, "nbytes": 16}


@pytest.mark.parametrize("descriptors", [
    "not a list",
    [["a", "list"]],
    [dict(GOOD, extra=1)],
    [{"handle": "ab" * 64, "offset": 0}],
    [dict(GOOD, handle="ab" * 63)],
    [dict(GOOD, handle="zz" * 64)],
    [dict(GOOD, handle=12)],
    [dict(GOOD, offset=-1)],
    [dict(GOOD, nbytes=1.5)],
    [dict(GOOD, nbytes=True)],
])
def test_malformed_descriptors_are_garbage(descriptors):
    with pytest.raises(ProtocolError):
        cuda_ipc.fetch(descriptors, max_bytes=1 << 20)


def test_byte_cap_holds_before_any_mapping():
    with pytest.raises(ProtocolError, match="exceed"):
        cuda_ipc.fetch([GOOD, dict(GOOD, nbytes=1 << 20)], max_bytes=1 << 20)


def test_well_formed_descriptors_parse():
    parsed = cuda_ipc._parse([GOOD, dict(GOOD, offset=4096)], max_bytes=64)
    assert parsed == [(bytes.fromhex("ab" * 64), 0, 16), (bytes.fromhex("ab" * 64), 4096, 16)]
