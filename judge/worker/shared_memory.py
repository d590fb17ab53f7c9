"""On the CPU, how much shared memory a kernel's specialization needs on
the GPU the CPU mode describes, as that GPU's compiler counts it.

A GPU refuses to load a kernel that needs more shared memory per block
than the chip has (Triton's OutOfResources: a compile_error), and the
interpreter needs none: a matrix multiplication with 256×256×64 tiles in
four stages (384 KiB) was accepted on the CPU and refused on the H100.
Lowering to LLVM to learn the figure took 3.7 s for 64-wide tiles and
455 s for 256-wide ones; it is fixed earlier, by the shared memory
allocation pass on the TritonGPU IR. So this runs Triton's own passes as
the NVIDIA backend runs them (make_ttir, make_ttgir, then the first passes
of make_llir up to the allocation), for the GPU's compute capability, and
reads the `ttg.shared` the allocation wrote: ~0.1-0.3 s a specialization,
once per specialization (judge.worker.frontend keeps the result).

Where a pass fails here the figure is unknown and the kernel is not held
to it: the front end has already refused what is not Triton, and a GPU
compile fails on its own terms.
"""

from __future__ import annotations

import types

_state = types.MappingProxyType({})  # ptx_version, found before the file is imported; read-only (sealed)


def install(backend, target) -> None:
    """Find the PTX version the allocation pass is given (Triton asks
    ptxas), before the file is imported: no process starts later for it."""
    global _state
    try:
        from triton.backends.nvidia.compiler import get_ptx_version_from_options
        found = {"ptx_version": get_ptx_version_from_options(backend.parse_options({}), target.arch)}
    except Exception:  # noqa: BLE001 - no ptxas here: the figure stays unknown
        found = {}
    _state = types.MappingProxyType(found)


def needed(module, backend, options, capability: int) -> int | None:
    """Bytes of shared memory per block the GPU's compiler gives `module`
    (Triton IR as make_ir built it; lowered in place), or None where it
    cannot be known here."""
    ptx_version = _state.get("ptx_version")
    if ptx_version is None:
        return None
    try:
        from triton._C.libtriton import ir, nvidia, passes
        metadata: dict = {}
        module = backend.make_ttir(module, metadata, options, capability)
        module = backend.make_ttgir(module, metadata, options, capability)
        manager = ir.pass_manager(module.context)
        # make_llir's passes before and including the allocation, in its order.
        passes.ttgpuir.add_combine_tensor_select_and_if(manager)
        passes.ttgpuir.add_allocate_warp_groups(manager)
        passes.convert.add_scf_to_cf(manager)
        passes.gluon.add_inliner(manager)
        nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(manager, capability, ptx_version)
        manager.run(module, "judge_shared_memory")
        shared = module.get_int_attr("ttg.shared")
    except Exception:  # noqa: BLE001 - unknown here: the kernel is not held to it
        return None
    return shared if isinstance(shared, int) else None


def limit() -> int:
    """Shared memory per block the described GPU lets a kernel opt in to
    (what Triton's loader compares with: 227 KiB on the H100, 64 KiB on the T4)."""
    from judge.worker.cpu_cuda import GPU
    return int(GPU["shared_memory_per_block_optin"])


def config_fits(tuner, args: tuple, config, meta: dict) -> bool:
    """Whether this config's kernel fits the GPU's shared memory, found by
    compiling it ahead (a warm-up launch: the front end's check, nothing
    run). Only until one config of this choice fits: the first that does
    is the one chosen, as the others cost the same."""
    from triton.runtime.errors import OutOfResources
    if tuner.nargs is not None and getattr(tuner, "_judge_fitted", None) is tuner.nargs:
        return True
    try:
        tuner.fn.run(*args, **{**meta, **config.all_kwargs(), "warmup": True})
    except OutOfResources:
        return False
    except Exception:  # noqa: BLE001 - raised again when the config runs, as on a GPU
        pass
    tuner._judge_fitted = tuner.nargs
    return True
