"""Facts about the GPU the judge relies on, measured in one device call.

    python bench/device_probe.py [--json out.json]

1. versions and device properties (L2 size, SM count);
2. whether tl.dot on float64 tiles compiles and is exact, and how fast it is;
3. how the tensor cores round float32 inputs for tl.dot's default (TF32):
   truncation or round-to-nearest (the interpreter emulation follows this);
4. whether RLIMIT_AS / RLIMIT_DATA can bound a CUDA worker's host memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _dot_kernel(a_ptr, b_ptr, c_ptr, M, N, K, PREC: tl.constexpr, F64: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pk = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rk = pk * BK + tl.arange(0, BK)
    acc = tl.zeros((BM, BK), dtype=tl.float64 if F64 else tl.float32)
    for n0 in range(0, N, BN):
        rn = n0 + tl.arange(0, BN)
        a = tl.load(a_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N), other=0.0)
        b = tl.load(b_ptr + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
        if F64:
            acc += tl.dot(a.to(tl.float64), b.to(tl.float64))
        else:
            acc += tl.dot(a, b, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * K + rk[None, :], acc, mask=(rm[:, None] < M) & (rk[None, :] < K))


def dot(a, b, prec="ieee", f64=False, blocks=(64, 32, 64)):
    M, N = a.shape
    K = b.shape[1]
    c = torch.empty(M, K, device=a.device, dtype=torch.float64 if f64 else torch.float32)
    BM, BN, BK = blocks
    _dot_kernel[(triton.cdiv(M, BM), triton.cdiv(K, BK))](a, b, c, M, N, K, PREC=prec, F64=f64,
                                                          BM=BM, BN=BN, BK=BK, num_warps=4)
    return c


def tf32_round(x, mode):
    bits = x.view(torch.int32)
    if mode == "rne":
        lsb = (bits >> 13) & 1
        bits = bits + 0xFFF + lsb
    return (bits & -8192).view(torch.float32)


def check_rlimit(kind: str, limit: int) -> dict:
    code = textwrap.dedent(f"""
        import resource, torch
        resource.setrlimit(resource.RLIMIT_{kind}, ({limit}, {limit}))
        try:
            torch.cuda.init(); x = torch.ones(1 << 28, device="cuda"); torch.cuda.synchronize()
            print("cuda ok")
        except BaseException as e:
            print("cuda failed:", type(e).__name__, str(e)[:200]); raise SystemExit(0)
        try:
            y = torch.ones(1 << 32)  # 16 GiB on the host
            print("host alloc ok")
        except BaseException as e:
            print("host alloc failed:", type(e).__name__, str(e)[:120])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return {"stdout": out.stdout.strip(), "stderr": out.stderr.strip()[-300:], "rc": out.returncode}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ns = ap.parse_args()
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    props = torch.cuda.get_device_properties(0)
    res["device"] = {"name": props.name, "sms": props.multi_processor_count,
                     "l2_bytes": getattr(props, "L2_cache_size", None), "memory": props.total_memory,
                     "capability": list(torch.cuda.get_device_capability())}
    res["versions"] = {"torch": torch.__version__, "triton": triton.__version__,
                       "cuda": torch.version.cuda, "python": sys.version.split()[0]}
    print(json.dumps(res, indent=1), flush=True)

    # float64 tl.dot: exact, and its speed at the performance shape.
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(300, 500, device="cuda", generator=g) * 2 - 1
    b = torch.rand(500, 200, device="cuda", generator=g) * 2 - 1
    try:
        got = dot(a, b, f64=True, blocks=(32, 16, 32))
        ref = a.double() @ b.double()
        res["f64_dot"] = {"ok": True, "max_rel": float(((got - ref).abs() / (a.double().abs() @ b.double().abs())).max())}
        A = torch.rand(8192, 6144, device="cuda") * 20 - 10
        B = torch.rand(6144, 4096, device="cuda") * 20 - 10
        for blocks in [(32, 16, 32), (64, 16, 64), (64, 32, 64)]:
            dot(A, B, f64=True, blocks=blocks)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            dot(A, B, f64=True, blocks=blocks)
            torch.cuda.synchronize()
            res["f64_dot"][f"perf_case_s_{blocks}"] = time.perf_counter() - t0
        t0 = time.perf_counter(); A.double() @ B.double(); torch.cuda.synchronize()
        res["torch_f64_perf_case_s"] = time.perf_counter() - t0
        del A, B
    except Exception as exc:  # noqa: BLE001
        res["f64_dot"] = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:400]}"}
    print(json.dumps(res.get("f64_dot")), res.get("torch_f64_perf_case_s"), flush=True)

    # TF32 rounding: compare the default dot with both emulations.
    a = torch.randn(64, 512, device="cuda", generator=g)
    b = torch.randn(512, 64, device="cuda", generator=g)
    got = dot(a, b, prec="tf32").double()
    res["tf32_rounding"] = {}
    for mode in ("trunc", "rne"):
        emu = tf32_round(a.clone(), mode).double() @ tf32_round(b.clone(), mode).double()
        res["tf32_rounding"][mode] = float((got - emu).norm() / emu.norm())
    res["tf32_rounding"]["vs_exact"] = float((got - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm())
    print(json.dumps(res["tf32_rounding"]), flush=True)

    res["rlimit_as_8g"] = check_rlimit("AS", 8 << 30)
    res["rlimit_data_8g"] = check_rlimit("DATA", 8 << 30)
    print(json.dumps({k: res[k] for k in ("rlimit_as_8g", "rlimit_data_8g")}, indent=1), flush=True)
    if ns.json:
        with open(ns.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
