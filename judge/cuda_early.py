"""The CUDA context, created early: on a thread, through the driver, while
the process imports torch (both sides: the judge's process and a worker
before it knows its submission).

Creating a GPU's primary context takes 0.3-0.7 s on an H100, and torch
only starts it after its own import (seconds of Python). The driver call
releases the interpreter, so made on a thread it costs the import nothing;
torch then finds the primary context made and retains it too (measured on
the H100: torch's CUDA start 0.34-0.70 s after the import, 0.02-0.06 s with
this: bench/results/cost_early_h100.md). Nothing of a submission has run
when this is called, and nothing here decides anything: where the driver
is missing or fails, torch starts the context itself as before.
"""

from __future__ import annotations

import ctypes
import os
import threading

_started: threading.Thread | None = None


def _retain_primary_context() -> None:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        if lib.cuInit(0) != 0:
            return
        count = ctypes.c_int(0)
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
            return
        device = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(device), 0) != 0:
            return
        context = ctypes.c_void_p()
        # Retained for the life of the process: torch's own retain shares it.
        lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device)
    except (OSError, AttributeError):  # no driver here: torch decides, as before
        return


def start() -> None:
    """Begin creating the first visible GPU's primary context on a thread
    (once per process; nothing where no NVIDIA device node exists or
    CUDA_VISIBLE_DEVICES hides every GPU)."""
    global _started
    if _started is not None:
        return
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return
    if not (os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")):
        return
    _started = threading.Thread(target=_retain_primary_context, name="cuda-early", daemon=True)
    _started.start()


def wait(timeout_s: float = 30.0) -> None:
    """Until the context started by start() is made (or failed)."""
    if _started is not None:
        _started.join(timeout_s)
