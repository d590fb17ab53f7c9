"""Running the folder's reference_impl: the truth (in the trusted judge), and
the roles it reveals when the signature does not give them."""

from __future__ import annotations

from .generation import on_device


def call_reference(made, names: list[str], values: dict, device) -> None:
    """reference_impl on `values` (changed in place), positionally."""
    import torch
    with on_device(device), torch.no_grad():
        made.reference_impl(*[values[n] for n in names])



def _bits(t: torch.Tensor) -> torch.Tensor:
    import torch
    return t.view(torch.int32) if t.dtype in (torch.float32, torch.int32) else t


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    import torch
    return a.shape == b.shape and torch.equal(_bits(a), _bits(b))  # NaN equals NaN


def infer_roles(made, names: list[str], tensors: list[str], example: dict) -> dict[str, str]:
    """Roles from the example: run reference_impl on it, then once more per
    tensor with that tensor overwritten; written tensors are outputs, and
    inout when their initial value changes their final one."""
    import torch
    def run(overwrite: str | None) -> dict:
        values = {n: (v.clone() if isinstance(v, torch.Tensor) else v) for n, v in example.items()}
        if overwrite is not None:
            t = values[overwrite]
            values[overwrite] = torch.full_like(t, 7919 if t.dtype == torch.int32 else 1234.5)
        start = {n: values[n].clone() for n in tensors}
        call_reference(made, names, values, "cpu")
        return {n: (start[n], values[n]) for n in tensors}

    plain = run(None)
    roles = {}
    for name in tensors:
        poked = run(name)
        written = not _same(*plain[name]) or not _same(*poked[name])
        if not written:
            roles[name] = "in"
        else:
            roles[name] = "inout" if not _same(plain[name][1], poked[name][1]) else "out"
    if not any(r != "in" for r in roles.values()):
        raise ValueError("reference_impl wrote none of the example's tensors, so its outputs are unknown "
                         "(give roles in get_solve_signature)")
    return roles
