"""Large buffers from a CUDA worker to the judge through CUDA IPC, both sides.

A performance-size case moves hundreds of megabytes: through the socket they
cost seconds (device to host in the worker, the socket, host to device in
the judge). On one GPU the judge can instead map the worker's buffers and
copy them into memory of its own, device to device, in milliseconds.

Trust. The worker owns the memory it exports and the judge only reads it:
mapping a worker's allocation gives the worker no access to the judge's
memory. What the worker sends (a driver handle, an offset, a size) is
checked before any byte is read: each range must lie inside the allocation
the handle really opens (asked of the driver, not of the worker), and the
total is capped like socket data. The judge copies the bytes out while the
worker is stopped (SIGSTOP: it cannot free the memory mid-copy), closes the
mapping, and from then on works on its own copy; the checks that follow
(sizes, guard bands, inputs unchanged, the comparison) are the same as for
bytes from the socket. A handle the driver will not open (a sandbox or a
driver without IPC, or a lie) is not a verdict: the judge asks for the
bytes through the socket instead (judge.isolation).

export() runs in the worker, fetch() in the judge. The worker binds the
driver before the submission is imported (bind(), called at start): the
audit hook then hides ctypes from the submission (judge.worker.audit).
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

from .errors import ProtocolError

HANDLE_BYTES = 64  # sizeof(CUipcMemHandle)
LAZY_ENABLE_PEER_ACCESS = 1  # CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS


class Unavailable(Exception):
    """CUDA IPC does not work here (or the handle was not one): use the socket."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * HANDLE_BYTES)]


_driver = None
_bind_lock = threading.Lock()
# One mapping at a time (a handle opened twice in a process is refused);
# also held by a grading that steps aside for a timing (judge.gpu_lock).
FETCH_LOCK = threading.Lock()


def bind():
    """The CUDA driver's IPC entry points (loaded once); raises Unavailable."""
    global _driver
    with _bind_lock:
        if _driver is not None:
            return _driver
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise Unavailable(f"no CUDA driver library: {exc}") from None

        def fn(*names, args):
            for name in names:  # cuda.h maps the plain names to their _v2 versions
                f = getattr(lib, name, None)
                if f is not None:
                    f.restype, f.argtypes = ctypes.c_int, args
                    return f
            raise Unavailable(f"the CUDA driver has no {names[0]}")

        ptr, size = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t)
        _driver = {
            "get_handle": fn("cuIpcGetMemHandle", args=[ctypes.POINTER(_Handle), ctypes.c_uint64]),
            "open": fn("cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle", args=[ptr, _Handle, ctypes.c_uint]),
            "close": fn("cuIpcCloseMemHandle", args=[ctypes.c_uint64]),
            "range": fn("cuMemGetAddressRange_v2", "cuMemGetAddressRange", args=[ptr, size, ctypes.c_uint64]),
            "copy": fn("cuMemcpyDtoD_v2", "cuMemcpyDtoD", args=[ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t]),
            "sync": fn("cuCtxSynchronize", args=[]),
            "current": fn("cuCtxGetCurrent", args=[ctypes.POINTER(ctypes.c_void_p)]),
            "set_current": fn("cuCtxSetCurrent", args=[ctypes.c_void_p]),
            "device": fn("cuDeviceGet", args=[ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
            "retain": fn("cuDevicePrimaryCtxRetain", args=[ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]),
        }
        return _driver


def _check(rc: int, what: str) -> None:
    if rc != 0:
        raise Unavailable(f"{what} failed (CUDA driver error {rc})")


def _allocation(drv, pointer: int) -> tuple[int, int]:
    """(base, size) of the device allocation holding `pointer`."""
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(drv["range"](ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pointer)), "cuMemGetAddressRange")
    return base.value, size.value


# --- the worker's side ----------------------------------------------------------


def export(tensors: list) -> list[dict]:
    """Descriptors of contiguous CUDA tensors for the judge: the handle of
    the allocation each lies in, its offset there and its size in bytes.
    The tensors must stay alive (and unchanged) until the judge has copied
    them; the caller synchronizes the device first."""
    drv = bind()
    handles: dict[int, str] = {}
    out = []
    for t in tensors:
        if not t.is_cuda or not t.is_contiguous():
            raise Unavailable("only contiguous CUDA tensors are shared")
        pointer = t.data_ptr()
        base, _ = _allocation(drv, pointer)
        if base not in handles:
            h = _Handle()
            _check(drv["get_handle"](ctypes.byref(h), ctypes.c_uint64(base)), "cuIpcGetMemHandle")
            handles[base] = bytes(h.reserved).hex()
        out.append({"handle": handles[base], "offset": pointer - base, "nbytes": t.numel() * t.element_size()})
    return out


# --- the judge's side -----------------------------------------------------------


def _parse(descriptors, max_bytes: int) -> list[tuple[bytes, int, int]]:
    """(handle, offset, nbytes) of each descriptor; ProtocolError on
    anything malformed or over the byte cap, before the driver is asked."""
    if not isinstance(descriptors, list):
        raise ProtocolError("shared buffers: not a list")
    parsed, total = [], 0
    for d in descriptors:
        if not isinstance(d, dict) or set(d) != {"handle", "offset", "nbytes"}:
            raise ProtocolError("shared buffers: malformed descriptor")
        handle, offset, nbytes = d["handle"], d["offset"], d["nbytes"]
        if not (isinstance(handle, str) and len(handle) == 2 * HANDLE_BYTES):
            raise ProtocolError("shared buffers: malformed handle")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (offset, nbytes)):
            raise ProtocolError("shared buffers: malformed offset or size")
        try:
            raw = bytes.fromhex(handle)
        except ValueError:
            raise ProtocolError("shared buffers: malformed handle") from None
        total += nbytes
        parsed.append((raw, offset, nbytes))
    if total > max_bytes:
        raise ProtocolError(f"{total} bytes of shared data exceed the {max_bytes}-byte limit")
    return parsed


def _make_current(drv, torch) -> None:
    """The runtime's primary context on this thread (a grading checks cases
    from several threads; the driver calls need a current context)."""
    ctx = ctypes.c_void_p()
    _check(drv["current"](ctypes.byref(ctx)), "cuCtxGetCurrent")
    if ctx.value:
        return
    dev = ctypes.c_int()
    _check(drv["device"](ctypes.byref(dev), torch.cuda.current_device()), "cuDeviceGet")
    _check(drv["retain"](ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    _check(drv["set_current"](ctx), "cuCtxSetCurrent")


def fetch(descriptors, max_bytes: int, paused=contextlib.nullcontext) -> list:
    """Copies, in the judge's own GPU memory (uint8 tensors), of the buffers
    a worker exported. `paused`: a context manager that stops the worker
    during the copy. Raises ProtocolError for descriptors no honest worker
    sends (a range outside its allocation, too many bytes), Unavailable
    when the driver will not open a handle."""
    import torch
    parsed = _parse(descriptors, max_bytes)
    drv = bind()
    with FETCH_LOCK:
        _make_current(drv, torch)
        mapped: dict[bytes, tuple[int, int]] = {}
        try:
            for raw, _, _ in parsed:
                if raw in mapped:
                    continue
                h = _Handle()
                ctypes.memmove(ctypes.byref(h), raw, HANDLE_BYTES)
                pointer = ctypes.c_uint64()
                _check(drv["open"](ctypes.byref(pointer), h, LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle")
                mapped[raw] = (pointer.value, 0)
                # The driver's word for the mapping's extent, not the worker's.
                base, size = _allocation(drv, pointer.value)
                mapped[raw] = (pointer.value, base + size - pointer.value)
            for raw, offset, nbytes in parsed:
                if offset + nbytes > mapped[raw][1]:
                    raise ProtocolError(f"shared buffers: {nbytes} bytes at offset {offset} lie outside "
                                        f"the {mapped[raw][1]}-byte allocation")
            copies = [torch.empty(nbytes, dtype=torch.uint8, device="cuda") for _, _, nbytes in parsed]
            torch.cuda.synchronize()  # the destinations are allocated before the legacy-stream copies
            with paused():
                for (raw, offset, nbytes), copy in zip(parsed, copies):
                    if nbytes:
                        _check(drv["copy"](ctypes.c_uint64(copy.data_ptr()),
                                           ctypes.c_uint64(mapped[raw][0] + offset), ctypes.c_size_t(nbytes)),
                               "cuMemcpyDtoD")
                _check(drv["sync"](), "cuCtxSynchronize")
            return copies
        finally:
            for pointer, _ in mapped.values():
                drv["close"](ctypes.c_uint64(pointer))
