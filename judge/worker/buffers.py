"""The buffers a worker hands to solve: each trial's inputs and outputs,
built from the plan and seed the judge sent, inside guard bands the judge
checks when they come back (judge.casework.Run.unpack)."""

from __future__ import annotations

from judge.protocol import GUARD_BITS, INPUT_GUARD, OUTPUT_GUARD, POISON_BITS


def guarded(shape, dtype, fill_bits: int, guard: int, device: str):
    """A tensor of `shape` inside a larger buffer whose guard bands hold
    `fill_bits` (a 32-bit pattern, for float32 and int32 alike)."""
    import torch
    numel = 1
    for d in shape:
        numel *= d
    buf = torch.empty(numel + 2 * guard, dtype=getattr(torch, dtype), device=device)
    buf.view(torch.int32).fill_(fill_bits)
    view = buf[guard:guard + numel].view(shape)
    return buf, view


def prepare(plan: dict, seed: int, device: str):
    """Inputs in NaN-guarded buffers (an out-of-bounds read sees NaN, on the
    CPU as on the GPU) and a poisoned output between guard patterns; an
    in-place (inout) argument holds its input between output guards.
    Returns the call's arguments and the buffers to send back, by name:
    outputs (out and inout) and inputs (in)."""
    from judge.worker import pristine
    # The buffers too are made on torch as the worker found it, inside the draw's
    # window: a torch.empty swapped at import had made them of the file's own
    # tensor class, whose uniform_ the draw then ran with the modes off.
    with pristine.drawing(modes_off=not plan.get("generator")):
        args, outputs, inputs, fresh = _allocate(plan, device)
        from judge.cases import refill_inputs
        refill_inputs(plan, seed, device, fresh)  # drawn straight into the views, without a copy
    from judge.worker import copy_extent
    copy_extent.record_handed(list(outputs.values()), OUTPUT_GUARD)  # whole, for the copy rule
    copy_extent.record_handed(list(inputs.values()), INPUT_GUARD)
    return args, outputs, inputs


def _allocate(plan: dict, device: str):
    import torch
    args, outputs, inputs, fresh = [], {}, {}, {}
    for item in plan["call"]:
        name, role = item["name"], item["role"]
        if role == "dim":
            args.append(int(item["value"]))
            continue
        spec = plan["inputs"].get(name) or plan["outputs"][name]
        if role == "in":
            buf, view = guarded(spec["shape"], spec.get("dtype", "float32"), POISON_BITS, INPUT_GUARD, device)
            inputs[name] = buf
            fresh[name] = view
        else:
            buf, view = guarded(spec["shape"], spec.get("dtype", "float32"), GUARD_BITS, OUTPUT_GUARD, device)
            if role == "inout":
                fresh[name] = view
            else:
                view.view(torch.int32).fill_(POISON_BITS)
            outputs[name] = buf
        args.append(view)
    return args, outputs, inputs, fresh


def plain(args) -> None:
    """The call's tensors, and the buffers under them, put back as the worker
    made them before it touches them again: the file can give a tensor
    attributes of its own, which Python finds before the class's methods
    (the output buffer's `cpu` set to a partial of torch.mm ran the product,
    with no frame of the file's, when the worker read the output back:
    accepted), or a class of its own. No code of the file's runs here."""
    import torch
    base_of = torch._C.TensorBase._base.__get__
    from judge.worker.host_tensors import storage_start
    for arg in args:
        if not issubclass(type(arg), torch._C.TensorBase):
            continue
        base = base_of(arg)
        for tensor in (arg, base):
            if tensor is None:
                continue
            if type(tensor) is not torch.Tensor:
                object.__setattr__(tensor, "__class__", torch.Tensor)
            object.__setattr__(tensor, "__dict__", {})
        # Still a view of the buffer the worker made: `c._base.data = x`
        # (Tensor.data's setter, which no dispatch sees) had the worker send
        # back the file's own tensor in place of the one it handed out.
        if base is not None and storage_start(arg) != storage_start(base):
            from judge.worker import audit
            audit.report("rule: no replacing the memory under a tensor solve was given (Tensor.data = ..., "
                         "set_data): the kernels must write the output where it is")


def release(args: list) -> None:
    """Drop the call's arguments (the list emptied in place). What the file
    hung on them dies here, as it does in plain(): a weakref's callback, a
    builtin with no frame of its own, then runs where the audit hook counts
    it as the file's (judge.worker.attribution: `callbacks`), not the
    worker's (a partial of torch.mm fired by plain() was accepted)."""
    args.clear()

