"""Speed of the reference kernels against cuBLAS on the performance case.

    python bench/reference_speed.py --out DIR [--rounds 5] [--rep 200]

At M=8192, N=6144, K=4096 (A: M x N, B: N x K, C = A @ B: M x K; uniform(-10, 10)
float32 inputs, one preallocated C) this times, in one process and on the same
inputs:

    cuBLAS TF32      torch.matmul with torch.backends.cuda.matmul.allow_tf32 = True
    cuBLAS FP32      the same with allow_tf32 = False
    reference tf32   reference.matmul.matmul(a, b, mode="tf32", out=c)
    reference ieee   reference.matmul.matmul(a, b, mode="ieee", out=c)

Each is timed by triton.testing.do_bench (return_mode="median") in `rounds`
rounds that take the four in turn; the reported time is the median of a
call's round medians. Percentages compare each reference mode with the cuBLAS
mode of the same arithmetic (tf32 with TF32, ieee with FP32). The first call of
each (compilation, configuration choice) is timed separately, and each result's
relative Frobenius error against a float64 product is recorded.

Writes DIR/reference_speed.json and DIR/reference_speed.md and prints the table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
import triton
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import reference.matmul as rm  # noqa: E402
import reference.matmul_hopper as hopper  # noqa: E402
from judge.challenge import load  # noqa: E402

cublas_call = load("matrix_multiplication")._resolve("reference.py:cublas_call")

M, N, K = 8192, 6144, 4096
FLOP = 2.0 * M * N * K


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for reference_speed.json and .md")
    ap.add_argument("--rounds", type=int, default=5, help="do_bench calls per variant")
    ap.add_argument("--rep", type=int, default=200, help="do_bench rep (ms) per call")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device")

    g = torch.Generator(device="cuda").manual_seed(2026)
    a = torch.rand((M, N), generator=g, device="cuda").mul_(20).sub_(10)
    b = torch.rand((N, K), generator=g, device="cuda").mul_(20).sub_(10)
    c = torch.empty((M, K), device="cuda")
    ref = a.double() @ b.double()
    ref_norm = torch.linalg.norm(ref).item()

    variants = {
        "cuBLAS TF32": (cublas_call(a, b, c, tf32=True), None),
        "cuBLAS FP32": (cublas_call(a, b, c, tf32=False), None),
        "reference tf32": (lambda: rm.matmul(a, b, mode="tf32", out=c), "cuBLAS TF32"),
        "reference ieee": (lambda: rm.matmul(a, b, mode="ieee", out=c), "cuBLAS FP32"),
    }
    first_call_s, rel_err = {}, {}
    for name, (fn, _) in variants.items():
        c.fill_(float("nan"))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        first_call_s[name] = time.perf_counter() - t0
        rel_err[name] = (torch.linalg.norm(c.double() - ref) / ref_norm).item()
    del ref

    times = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (fn, _) in variants.items():
            times[name].append(do_bench(fn, warmup=25, rep=args.rep, return_mode="median"))

    rows = []
    for name, (fn, base) in variants.items():
        ms = statistics.median(times[name])
        row = dict(name=name, ms=ms, tflops=FLOP / ms * 1e-9, round_ms=times[name],
                   first_call_s=first_call_s[name], rel_err_vs_fp64=rel_err[name])
        if base is not None:
            row["baseline"] = base
            row["pct_of_baseline"] = 100.0 * statistics.median(times[base]) / ms
        rows.append(row)

    props = torch.cuda.get_device_properties(0)
    fast = {mode: hopper.fast_path(a, b, mode) for mode in ("tf32", "ieee")}
    chosen = {mode: cfg for (_, mode, *_), cfg in hopper.FAST_CHOICE.items()}
    result = dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        device=dict(name=torch.cuda.get_device_name(0), capability=list(torch.cuda.get_device_capability(0)),
                    sms=props.multi_processor_count),
        versions=dict(python=platform.python_version(), torch=torch.__version__, triton=triton.__version__,
                      cuda=torch.version.cuda),
        shape=dict(M=M, N=N, K=K, flop=FLOP, inputs="uniform(-10, 10) float32, row-major"),
        method=f"triton.testing.do_bench(warmup=25, rep={args.rep}, return_mode='median'), "
               f"{args.rounds} rounds over the four calls; median of the round medians",
        fast_path=fast, configs=chosen, rows=rows,
    )

    head = "| call | ms | TFLOPS | % of matching cuBLAS | rel. error vs fp64 | first call s |"
    lines = [head, "|---|---|---|---|---|---|"]
    for r in rows:
        pct = f"{r['pct_of_baseline']:.1f}% of {r['baseline']}" if "baseline" in r else "(baseline)"
        lines.append(f"| {r['name']} | {r['ms']:.3f} | {r['tflops']:.1f} | {pct} | {r['rel_err_vs_fp64']:.2e} "
                     f"| {r['first_call_s']:.1f} |")
    table = "\n".join(lines)
    print(f"{result['device']['name']}  torch {torch.__version__}  triton {triton.__version__}  "
          f"CUDA {torch.version.cuda}  {result['date']}")
    print(f"M={M} N={N} K={K}; {result['method']}")
    print(table)
    print("fast path:", fast)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reference_speed.json").write_text(json.dumps(result, indent=1) + "\n")
    md = [
        "# Reference kernels vs cuBLAS",
        "",
        f"- date: {result['date']}",
        f"- device: {result['device']['name']} ({props.multi_processor_count} SMs)",
        f"- versions: torch {torch.__version__}, triton {triton.__version__}, CUDA {torch.version.cuda}",
        f"- case: M={M}, N={N}, K={K} (A is M x N, B is N x K), {result['shape']['inputs']}",
        f"- timing: {result['method']}",
        f"- fast (TMA, persistent) path taken: {fast}",
        "",
        table,
        "",
    ]
    (out / "reference_speed.md").write_text("\n".join(md))


if __name__ == "__main__":
    main()
