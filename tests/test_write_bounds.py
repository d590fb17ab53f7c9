"""The CPU mode's bound on what a kernel's stores may reach
(judge.worker.write_bounds), checked on its own; the fixtures
kernel_store_renames_operator.py and honest_pointer_table.py check it in a
worker."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from judge.worker import write_bounds
from judge.worker.op_tables import ADDRESS_TAG


def _addresses(tensor, *offsets):
    return np.array([tensor.data_ptr() + o for o in offsets], dtype=np.uint64)


@pytest.fixture
def launch():
    yield write_bounds
    write_bounds.end()


def test_a_store_inside_an_argument_passes_and_outside_fails(launch):
    out, other = torch.zeros(64), torch.zeros(64)
    launch.begin((out, 3), {})
    launch.check(_addresses(out, 0, 252), None, 4, "store")  # the first and the last element
    with pytest.raises(write_bounds.StrayWrite, match="1 element"):
        launch.check(_addresses(out, 0, 253), None, 4, "store")  # its last byte past the storage
    with pytest.raises(write_bounds.StrayWrite):
        launch.check(_addresses(other, 0), None, 4, "store")  # a tensor the kernel was not given


def test_a_view_grants_its_whole_storage_and_masked_addresses_are_not_stores(launch):
    buffer = torch.zeros(100)
    launch.begin((buffer[10:20],), {})
    launch.check(np.array([buffer.data_ptr() + 4 * 99], dtype=np.uint64), None, 4, "store")
    stray = np.array([buffer.data_ptr(), 1 << 40], dtype=np.uint64)
    launch.check(stray, np.array([True, False]), 4, "store")
    with pytest.raises(write_bounds.StrayWrite):
        launch.check(stray, np.array([True, True]), 4, "store")


def test_tuples_and_keyword_arguments_are_arguments(launch):
    a, b, c = torch.zeros(8), torch.zeros(8), torch.zeros(8)
    launch.begin(((a, b),), {"out": c})
    for t in (a, b, c):
        launch.check(_addresses(t, 28), None, 4, "atomic_rmw")


def test_a_tagged_address_grants_its_held_storage_only(launch):
    given, named, stranger = torch.zeros(16), torch.zeros(16), torch.zeros(16)
    write_bounds.hold(named)
    launch.begin((given,), {})
    tagged = np.array([named.data_ptr() | ADDRESS_TAG, stranger.data_ptr() | ADDRESS_TAG], dtype=np.int64)
    untagged = launch.grant(tagged)
    assert untagged.tolist() == [named.data_ptr(), stranger.data_ptr()]
    launch.check(_addresses(named, 60), None, 4, "store")
    with pytest.raises(write_bounds.StrayWrite):  # never held: its address was not handed out
        launch.check(_addresses(stranger, 0), None, 4, "store")
    plain = launch.grant(np.array([stranger.data_ptr()], dtype=np.int64))  # no tag: no grant
    assert plain.tolist() == [stranger.data_ptr()]
    with pytest.raises(write_bounds.StrayWrite):
        launch.check(_addresses(stranger, 0), None, 4, "store")


def test_after_the_launch_nothing_is_granted(launch):
    t = torch.zeros(4)
    launch.begin((t,), {})
    launch.end()
    launch.check(_addresses(t, 1 << 30), None, 4, "store")  # no launch: raw_memory refuses the call itself


def test_memory_torch_did_not_allocate_is_never_granted(launch):
    """numpy's memory (torch.from_numpy) is the host's on a GPU as well: its
    address, read and cast back in a kernel, grants no store."""
    given, host = torch.zeros(4), torch.from_numpy(np.zeros(4, dtype=np.float32))
    write_bounds.hold(host)
    launch.begin((given,), {})
    launch.grant(np.array([host.data_ptr() | ADDRESS_TAG], dtype=np.int64))
    with pytest.raises(write_bounds.StrayWrite):
        launch.check(_addresses(host, 0), None, 4, "store")


def test_an_address_one_past_the_end_grants_its_storage(launch):
    """A kernel handed only the end of a buffer (it walks back from there)."""
    given, scratch = torch.zeros(4), torch.zeros(8)
    write_bounds.hold(scratch)
    launch.begin((given,), {})
    launch.grant(np.array([(scratch.data_ptr() + 32) | ADDRESS_TAG], dtype=np.int64))
    launch.check(_addresses(scratch, 28), None, 4, "store")
