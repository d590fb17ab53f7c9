"""Whether a torch copy in solve takes whole tensors only, for a challenge
whose rules allow copies of whole tensors and no part of one
(judge.challenge_spec.Rules.whole_copies_only; read by judge.worker.rules)."""

from __future__ import annotations

from judge.protocol import INPUT_GUARD, OUTPUT_GUARD


def all_whole(args, kwargs) -> bool:
    """Every tensor among an operator's arguments is all of what it was made
    as: a whole allocation, or a tensor the worker handed to solve (inside
    its guard bands: judge.worker.buffers); not a slice, a transposed view
    or a window of one. Copies of whole tensors keep the elements' order."""
    import torch
    items = list(args) + list((kwargs or {}).values())
    while items:
        item = items.pop()
        if isinstance(item, (list, tuple)):
            items += list(item)
        elif isinstance(item, torch.Tensor) and not _whole(item):
            return False
    return True


def _whole(tensor) -> bool:
    import torch
    tensor_base = torch._C.TensorBase
    if not tensor_base.is_contiguous(tensor):
        return False
    base, n, offset = tensor_base._base.__get__(tensor), tensor_base.numel(tensor), tensor_base.storage_offset(tensor)
    if base is None:
        return offset == 0  # an allocation of its own
    size, start = tensor_base.numel(base), tensor_base.storage_offset(base)
    return (n == size and offset == start) or (start == 0 and any(offset == band and n == size - 2 * band
                                                                  for band in (INPUT_GUARD, OUTPUT_GUARD)))
