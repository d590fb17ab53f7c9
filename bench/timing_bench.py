"""How good is the judge's latency? One device call:

    python bench/timing_bench.py --out DIR

1. baselines: reference (tf32, ieee) against cuBLAS (TF32, FP32), measured
   by the judge's timing method, as ratios;
2. fidelity: the judge's latency for the reference kernel and two example
   submissions against triton.testing.do_bench on the same kernels, same run;
3. repeatability: five gradings of one submission (spread of the medians);
4. cost: wall time of one grading from a cold start (a fresh `judge submit`
   process, baselines not cached) and per submission in a run of several
   (the repeated gradings of step 3, after the first).
Writes DIR/timing_bench.json and DIR/timing_bench.md, and prints the table.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402

from judge import baselines  # noqa: E402
from judge.grader import GradeOptions, grade  # noqa: E402

SHAPE = (8192, 6144, 4096)
SUBMISSIONS = {"reference (ieee)": ROOT / "bench" / "ref_submission.py",
               "grid_2d": ROOT / "submissions" / "correct" / "grid_2d.py",
               "block_pointers": ROOT / "submissions" / "correct" / "block_pointers.py"}


def load_solve(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solve


def do_bench_median(fn, repeats: int = 3) -> float:
    return statistics.median(triton.testing.do_bench(fn, warmup=100, rep=500, return_mode="median")
                             for _ in range(repeats))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp()  # no cached baselines: measure them here
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 "device": torch.cuda.get_device_name(),
                 "versions": {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda}}
    M, N, K = SHAPE
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(M, N, device="cuda", generator=g) * 20 - 10
    b = torch.rand(N, K, device="cuda", generator=g) * 20 - 10
    c = torch.empty(M, K, device="cuda")
    flops = 2 * M * N * K

    # 1. baselines with the judge's method
    from reference.expected import matmul_baselines
    measured = baselines.measure_all(matmul_baselines({"a": a, "b": b}))
    ms = {k: v["median_ms"] for k, v in measured.items()}
    res["baselines_ms"] = ms
    res["reference_tf32_vs_cublas_tf32"] = ms["cublas_tf32"] / ms["reference_tf32"]
    res["reference_ieee_vs_cublas_fp32"] = ms["cublas_fp32"] / ms["reference_ieee"]
    print(json.dumps(res, indent=1), flush=True)

    # 2 and 3. the judge's latency against do_bench; five gradings of one file
    fidelity = {}
    for name, path in SUBMISSIONS.items():
        solve = load_solve(path)
        bench_ms = do_bench_median(lambda: solve(a, b, c, M, N, K))
        runs = 5 if name == "grid_2d" else 1
        judged, walls = [], []
        for _ in range(runs):
            t0 = time.monotonic()
            r = grade(path, GradeOptions(device="cuda", seed=11))
            walls.append(time.monotonic() - t0)
            assert r.verdict.value == "accepted", (name, r.message)
            judged.append(r.latency_ms)
        fidelity[name] = {"do_bench_ms": bench_ms, "judge_ms": judged[0],
                          "difference": judged[0] / bench_ms - 1, "judge_runs_ms": judged, "walls_s": walls}
        print(name, fidelity[name], flush=True)
        (ns.out / "timing_bench.json").write_text(json.dumps(dict(res, fidelity=fidelity), indent=1))
    res["fidelity"] = fidelity
    runs = fidelity["grid_2d"]["judge_runs_ms"]
    res["repeatability"] = {"runs_ms": runs, "spread": (max(runs) - min(runs)) / statistics.median(runs)}

    # 4. cost: a cold grading in a fresh process, then several in one process
    cold_cache = tempfile.mkdtemp()
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "judge.cli", "submit", str(SUBMISSIONS["grid_2d"]), "--json"],
                   env=dict(os.environ, XDG_CACHE_HOME=cold_cache), capture_output=True, check=False)
    cold = time.monotonic() - t0
    # Per submission in a run of several: the repeated gradings of grid_2d
    # above, after the first (which also measured the baselines).
    batch = fidelity["grid_2d"]["walls_s"][1:]
    per = statistics.fmean(batch)
    res["cost"] = {"cold_grading_s": cold, "per_submission_in_batch_s": per}

    rows = [f"| baselines | reference tf32 at {100 * res['reference_tf32_vs_cublas_tf32']:.0f}% of cuBLAS TF32, "
            f"reference ieee at {100 * res['reference_ieee_vs_cublas_fp32']:.0f}% of cuBLAS FP32 | ≥ 90% / ≥ 100% |"]
    for name, f in fidelity.items():
        rows.append(f"| fidelity {name} | judge {f['judge_ms']:.3f} ms vs do_bench {f['do_bench_ms']:.3f} ms "
                    f"({100 * f['difference']:+.1f}%) | within ±2% |")
    rows.append(f"| repeatability | 5 gradings of grid_2d spread {100 * res['repeatability']['spread']:.2f}% | ≤ 1% |")
    rows.append(f"| cost | cold grading {cold:.1f} s; {per:.1f} s per submission in a batch of {len(batch)} "
                f"| ≤ 10 s / ≤ 5 s |")
    md = ["# Timing benchmark", "", f"- date: {res['date']}", f"- device: {res['device']}",
          f"- versions: {res['versions']}", "- shape: 8192×6144×4096 (M×N×K), uniform(−10, 10)", "",
          "| baselines (judge's method) | ms | TFLOPS |", "|---|---|---|",
          *[f"| {k} | {v:.3f} | {flops / v / 1e9:.1f} |" for k, v in ms.items()], "",
          "| measure | result | goal |", "|---|---|---|", *rows]
    (ns.out / "timing_bench.json").write_text(json.dumps(res, indent=1))
    (ns.out / "timing_bench.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
