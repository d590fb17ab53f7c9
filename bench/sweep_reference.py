"""Sweep of launch configurations for the reference kernels' Hopper path.

    python bench/sweep_reference.py [--out DIR] [--only tf32|ieee] [--budget SECONDS]

At M=8192, N=6144, K=4096 (A: M x N, B: N x K, uniform(-10, 10) float32) it
times cuBLAS (TF32 on and off), the B transpose (torch and _transpose_kernel
tiles), then each configuration of reference.matmul_hopper.tma_matmul_kernel below
(TF32 twice: with the B^T copy, and "[no copy]" on a B whose transpose is
already TMA-ready) and the generic kernel, with triton.testing.do_bench
(median); checks each result against cuBLAS FP32 (relative Frobenius error)
and prints a table; DIR/sweep.json gets the rows. A configuration that fails
to compile or launch is reported and skipped.

Seen on an H100 (2026-11-22, torch 2.11, triton 3.6; cuBLAS TF32 1.11-1.15 ms,
FP32 8.04-8.16 ms; timings move by ~2% between runs):
  tf32, B read as it is (Triton re-stores each tile transposed): 4.98 ms.
  tf32, C^T = B^T A^T with B^T fed to wgmma from registers: 1.19 ms at
    256x128x32, but wrong results (errors up to 2e-2 instead of 8e-4) from a
    register race in Triton 3.6's pipelining; removed.
  tf32, B^T copy (0.073 ms, 2.7 TB/s) + 128x256x32 w8 s3: 1.176 ms (95%);
    256x128: 1.28; 128x128 w8 s4: 1.35; 128x128 w4 x2 per SM: 1.63;
    FLATTEN, GROUP_M 4/16, 4 stages: no better. Hopper warp specialization
    (tl.range(warp_specialize=True)) did not take effect in Triton 3.6.
  ieee: 64x128x32 or 128x64x32 w4, 3 per SM: 9.28 ms (88%); 128x128x32 w8:
    9.42; generic pointer kernel 128x128x32 w8: 9.44; 128x128x16 w4 x2: 9.65
    to 10.1; 128x256/256x128 (128 accumulators a thread): 10.0-10.8; 64x64 w2
    x6: 10.26; register caps of 128 spill. The inner loop is ~90% FFMA.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import triton
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import reference.matmul as rm  # noqa: E402
import reference.matmul_hopper as hopper  # noqa: E402

M, N, K = 8192, 6144, 4096
FLOP = 2.0 * M * N * K

BASE = dict(GROUP_M=8, EPI_SPLIT=2, FLATTEN=False, ctas_per_sm=1, maxnreg=None)


def cfg(b_transposed, bm, bk, bn, warps, stages, **kw):
    c = dict(BASE, B_TRANSPOSED=b_transposed, BLOCK_M=bm, BLOCK_K=bk, BLOCK_N=bn, num_warps=warps,
             num_stages=stages)
    c.update(kw)
    return c


TF32 = [
    cfg(True, 128, 256, 32, 8, 3),
    cfg(True, 128, 256, 32, 8, 4, EPI_SPLIT=4),
    cfg(True, 128, 256, 32, 8, 3, GROUP_M=4),
    cfg(True, 128, 256, 32, 8, 3, GROUP_M=16),
    cfg(True, 128, 256, 32, 8, 3, FLATTEN=True),
    cfg(True, 128, 256, 32, 8, 3, EPI_SPLIT=4),
    cfg(True, 256, 128, 32, 8, 3),
    cfg(True, 128, 128, 32, 4, 2, ctas_per_sm=2),
    cfg(True, 128, 128, 32, 8, 4),
]

IEEE = [
    cfg(False, 128, 128, 32, 8, 3),
    cfg(False, 128, 128, 32, 8, 4),
    cfg(False, 128, 128, 32, 8, 3, GROUP_M=16),
    cfg(False, 128, 128, 64, 8, 2),
    cfg(False, 128, 64, 32, 4, 3, ctas_per_sm=3),
    cfg(False, 64, 128, 32, 4, 3, ctas_per_sm=3),
    cfg(False, 64, 64, 32, 2, 3, ctas_per_sm=6),
    cfg(False, 128, 256, 32, 8, 3, maxnreg=255),
    cfg(False, 128, 128, 16, 4, 3, ctas_per_sm=2, EPI_SPLIT=1),
]

TRANSPOSE = [
    dict(BLOCK_R=64, BLOCK_C=64, num_warps=4),
    dict(BLOCK_R=64, BLOCK_C=64, num_warps=8),
    dict(BLOCK_R=128, BLOCK_C=64, num_warps=8),
    dict(BLOCK_R=64, BLOCK_C=128, num_warps=8),
    dict(BLOCK_R=32, BLOCK_C=128, num_warps=4),
    dict(BLOCK_R=128, BLOCK_C=128, num_warps=8),
]

# The generic (pointer, non-persistent) kernel, for comparison.
GENERIC_IEEE = [
    dict(BLOCK_M=128, BLOCK_K=128, BLOCK_N=32, GROUP_M=8, num_warps=8, num_stages=3),  # today's
]


def label(c):
    s = f"{'bt' if c['B_TRANSPOSED'] else 'b'} {c['BLOCK_M']}x{c['BLOCK_K']}x{c['BLOCK_N']} w{c['num_warps']} s{c['num_stages']} c{c['ctas_per_sm']}"
    extras = [f"{k}={c[k]}" for k in ("GROUP_M", "EPI_SPLIT", "FLATTEN", "maxnreg") if c[k] != BASE[k]]
    return s + (" " + " ".join(extras) if extras else "")


def bench(fn, rep=200):
    return do_bench(fn, warmup=25, rep=rep, return_mode="median")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--budget", type=float, default=330.0)
    args = ap.parse_args()
    t_start = time.time()
    dev = torch.cuda.get_device_name()
    print(f"{dev}  torch {torch.__version__}  triton {triton.__version__}  cuda {torch.version.cuda}", flush=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand((M, N), generator=g, device="cuda").mul_(20).sub_(10)
    b = torch.rand((N, K), generator=g, device="cuda").mul_(20).sub_(10)
    c = torch.empty((M, K), device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = torch.matmul(a, b)
    ref_norm = torch.linalg.norm(ref).item()
    rows = []

    def record(kind, name, fn, check=True, rep=200, base=None):
        if time.time() - t_start > args.budget:
            print(f"{kind:5s} {name:58s} skipped (time budget)", flush=True)
            return
        try:
            t0 = time.time()
            c.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            first = time.time() - t0
            err = (torch.linalg.norm(c - ref) / ref_norm).item() if check else float("nan")
            ms = bench(fn, rep)
            row = dict(kind=kind, name=name, ms=ms, tflops=FLOP / ms * 1e-9, rel_err=err, first_call_s=first)
            if base:
                row["pct"] = 100.0 * base / ms
            rows.append(row)
            print(f"{kind:5s} {name:58s} {ms:8.3f} ms {row['tflops']:7.1f} TF/s {row.get('pct', 0):6.1f}%  err {err:.2e}  first {first:5.1f}s", flush=True)
        except Exception as e:  # noqa: BLE001
            msg = str(e).strip().splitlines()
            print(f"{kind:5s} {name:58s} FAILED {type(e).__name__}: {msg[-1][:200] if msg else ''}", flush=True)
            rows.append(dict(kind=kind, name=name, error=f"{type(e).__name__}: {msg[-1][:300] if msg else ''}"))

    def cublas(tf32):
        def f():
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.matmul(a, b, out=c)
        return f

    record("cub", "cuBLAS TF32", cublas(True))
    record("cub", "cuBLAS FP32", cublas(False))
    tf32_base = min(r["ms"] for r in rows if r["name"] == "cuBLAS TF32")
    fp32_base = min(r["ms"] for r in rows if r["name"] == "cuBLAS FP32")
    bt = torch.empty((K, N), device="cuda")
    record("misc", "B transpose copy (torch)", lambda: bt.copy_(b.t()), check=False)
    bw = 2 * 4 * N * K  # bytes read + written
    for tc in TRANSPOSE:
        grid = (triton.cdiv(N, tc["BLOCK_R"]), triton.cdiv(K, tc["BLOCK_C"]))

        def tr(tc=tc, grid=grid):
            hopper.transpose_kernel[grid](b, bt, N, K, b.stride(0), b.stride(1), bt.stride(0), **tc)
        record("misc", "transpose {BLOCK_R}x{BLOCK_C} w{num_warps}".format(**tc), tr, check=False)
        if "ms" in rows[-1]:
            rows[-1]["TBps"] = bw / rows[-1]["ms"] * 1e-9
            print(f"      {rows[-1]['TBps']:.2f} TB/s; exact: {torch.equal(bt, b.t())}")
    b_kmajor = b.t().contiguous().t()  # same values; its transpose is TMA-ready, so no copy

    if args.only in (None, "tf32"):
        for cf in TF32:
            record("tf32", label(cf), lambda cf=cf: hopper.launch(a, b, c, "tf32", cf), base=tf32_base)
            record("tf32", label(cf) + " [no copy]", lambda cf=cf: hopper.launch(a, b_kmajor, c, "tf32", cf),
                   base=tf32_base)
    if args.only in (None, "ieee"):
        for cf in IEEE:
            record("ieee", label(cf), lambda cf=cf: hopper.launch(a, b, c, "ieee", cf), base=fp32_base, rep=300)
        for gc in GENERIC_IEEE:
            grid = (triton.cdiv(M, gc["BLOCK_M"]) * triton.cdiv(K, gc["BLOCK_K"]),)

            def gen(gc=gc, grid=grid):
                rm._matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                        c.stride(0), c.stride(1), PRECISION="ieee", EXACT=False,
                                        F64_USE_DOT=True, **gc)
            name = "generic {BLOCK_M}x{BLOCK_K}x{BLOCK_N} w{num_warps} s{num_stages}".format(**gc)
            record("ieee", name, gen, base=fp32_base, rep=300)
    record("cub", "cuBLAS TF32 (again)", cublas(True))
    record("cub", "cuBLAS FP32 (again)", cublas(False))

    print("\nbest per kind (pct vs the first cuBLAS timing of the matching mode):")
    for kind in ("tf32", "ieee"):
        ok = [r for r in rows if r["kind"] == kind and "ms" in r]
        for r in sorted(ok, key=lambda r: r["ms"])[:4]:
            print(f"  {kind} {r['name']:58s} {r['ms']:.3f} ms  {r['pct']:.1f}%")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, "sweep.json").write_text(json.dumps(dict(device=dev, rows=rows), indent=1))
    print(f"total {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
