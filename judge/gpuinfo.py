"""The state of the GPU around a measurement, read through NVML by the judge
(not the worker): clocks, temperature, power, throttle reasons, driver."""

from __future__ import annotations

from . import cuda_visible

# Throttle reasons that slow a measurement down (idle and application-clock
# settings are not a slowdown of work in flight).
_SLOWDOWNS = {
    "sw_power_cap": 0x4, "hw_slowdown": 0x8, "sync_boost": 0x10, "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40, "hw_power_brake_slowdown": 0x80,
}


def snapshot(index: int | None = None) -> dict:
    """A reading of the GPU's state (NVML's `index`, else the GPU this
    process grades on); {"available": False, ...} without NVML."""
    try:
        import pynvml as nv
        nv.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no NVML, no reading
        return {"available": False, "reason": f"NVML unavailable: {type(exc).__name__}"}
    try:
        h = _handle(nv, index)
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = int(reasons_fn(h))
        name = nv.nvmlDeviceGetName(h)
        driver = nv.nvmlSystemGetDriverVersion()
        return {
            "available": True,
            "name": name.decode() if isinstance(name, bytes) else name,
            "driver": driver.decode() if isinstance(driver, bytes) else driver,
            "sm_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
            "memory_clock_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
            "max_sm_clock_mhz": nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
            "temperature_c": nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
            "power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "throttle_reasons": [k for k, bit in _SLOWDOWNS.items() if mask & bit],
        }
    except Exception as exc:  # noqa: BLE001
        return {"available": False, "reason": f"NVML query failed: {type(exc).__name__}: {exc}"}
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def throttle_warning(before: dict, after: dict) -> str | None:
    reasons = sorted(set(before.get("throttle_reasons", [])) | set(after.get("throttle_reasons", [])))
    if reasons:
        return f"the GPU throttled during timing ({', '.join(reasons)}): latencies may be inflated"
    return None


def peak_bandwidth_gbps(index: int | None = None) -> float | None:
    """The GPU's peak memory bandwidth in GB/s, from NVML: two transfers per
    memory clock over the bus width (3352 GB/s on an H100 SXM); None without NVML."""
    try:
        import pynvml as nv
        nv.nvmlInit()
    except Exception:  # noqa: BLE001
        return None
    try:
        h = _handle(nv, index)
        clock_mhz = nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)
        bus_bits = nv.nvmlDeviceGetMemoryBusWidth(h)
        return 2 * clock_mhz * 1e6 * bus_bits / 8 / 1e9
    except Exception:  # noqa: BLE001
        return None
    finally:
        try:
            nv.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _handle(nv, index: int | None):
    """NVML's handle of GPU `index` (NVML's numbering), else of the GPU this
    process grades on: torch's device 0, found by its UUID, since NVML
    numbers every GPU of the host whatever CUDA_VISIBLE_DEVICES hides
    (a lane pinned to GPU 3 must not read GPU 0's clocks)."""
    if index is not None:
        return nv.nvmlDeviceGetHandleByIndex(index)
    try:
        import torch
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            uuid = str(torch.cuda.get_device_properties(0).uuid)
            return nv.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}")
    except Exception:  # noqa: BLE001 - an older torch, a MIG slice: the environment says
        pass
    first = cuda_visible.entry(0) or "0"
    if first.startswith(("GPU-", "MIG-")):
        return nv.nvmlDeviceGetHandleByUUID(first)
    return nv.nvmlDeviceGetHandleByIndex(int(first) if first.isdigit() else 0)
