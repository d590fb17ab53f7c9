"""The guard's tables (judge.worker.rules): the aten operators solve may
call, by kind (none computes on the data), and the tensor methods that read
a tensor on the host. Sealed with the guard (judge.worker.arming); rules
binds every name here as its own too."""

from __future__ import annotations

# The operators solve may call, by kind: none computes on the data.
ALLOCATION_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
    "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "scalar_tensor",
    "arange", "lift_fresh", "lift_fresh_copy", "resize_", "resize_as_",
})
FILL_OPS = frozenset({"fill_", "zero_", "fill"})
IN_PLACE_VIEWS = frozenset({"t_", "transpose_", "unsqueeze_", "squeeze_", "as_strided_", "swapdims_", "swapaxes_"})
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "as_strided", "slice", "select", "t", "transpose", "permute",
    "expand", "unsqueeze", "squeeze", "alias", "detach", "split", "split_with_sizes", "chunk",
    "narrow", "flatten", "unflatten", "view_as", "unbind", "_reshape_alias", "contiguous",
    "is_contiguous", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "record_stream",
    "unfold", "diagonal", "movedim", "swapaxes", "swapdims", "expand_as", "reshape_as", "tensor_split",
    "unsafe_split", "unsafe_chunk", "view_as_real", "view_as_complex",
    # in place, on the view's own shape only (an honest transpose's output.view(...).t_())
    *IN_PLACE_VIEWS,
})
# Copies (same device: checked below), the joining and padding of tensors
# among them (torch.cat, torch.stack, F.pad with a constant: a convolution's input padded
# ahead of its kernel moves data and computes nothing).
COPY_OPS = frozenset({"copy_", "clone", "_to_copy", "cat", "stack", "constant_pad_nd"})
# Questions about tensors' metadata and the profiler's annotations: nothing
# read or computed (an honest file's check that two tensors have one size,
# or a torch.profiler.record_function around its launch, was refused).
METADATA_OPS = frozenset({"is_same_size", "is_pinned", "is_set_to", "can_cast", "_record_function_enter",
                          "_record_function_enter_new", "_record_function_exit"})
ALLOWED_OPS = ALLOCATION_OPS | FILL_OPS | VIEW_OPS | COPY_OPS | METADATA_OPS
TRANSFER_OPS = frozenset({"copy_", "_to_copy"})
# Where a challenge refuses torch's copies: the forms that copy (one under an
# allocation's name), and those that write into a tensor without moving data
# (any other form that writes into a tensor it is given moves data: aten's .out forms).
COPY_FORMS = COPY_OPS | {"lift_fresh_copy"}
WRITES_NO_DATA = ALLOCATION_OPS | FILL_OPS | IN_PLACE_VIEWS | {"record_stream", "set_"}
# What Triton's own launches dispatch (the interpreter's copies; the
# autotuner's benchmark buffers): never a compute operator.
TRITON_OPS = ALLOWED_OPS | {"set_", "_local_scalar_dense"}
HOST_METHODS = ("cpu", "numpy", "tolist", "item", "__array__", "__dlpack__", "untyped_storage", "storage",
                # a Python callable run on every element, on the host (CPU tensors only)
                "apply_", "map_", "map2_")
# The bit set in a tensor's or storage's address as the submission's own
# code reads it under the interpreter (judge.worker.gates.ADDRESSES): no
# mapped host address has it, so following it faults, as a GPU's would.
ADDRESS_TAG = 1 << 62
