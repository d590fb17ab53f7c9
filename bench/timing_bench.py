"""How good is the judge's latency? One device call:

    python bench/timing_bench.py --out DIR

1. baselines: reference (tf32, ieee) against cuBLAS (TF32, FP32), measured
   by the judge's timing method, as ratios;
2. fidelity: the judge's latency for the reference kernel and two example
   submissions against triton.testing.do_bench on the same kernels, same run;
3. repeatability: five gradings of one submission (spread of the medians);
4. cost: wall time of one grading from a cold start (a fresh `judge submit`
   process, baselines not cached; once with the judge's own Triton cache
   warm, as after its first run, once with it empty too) and per submission
   in a run of several different submissions (the correct examples, graded
   one after another in one process, baselines cached), with where the time
   went (the result's phase_seconds).
During each fidelity measurement the SM clock and power are sampled through
NVML, so a gap between the two methods can be told from a change of clocks.
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402

from judge import baselines, gpuinfo  # noqa: E402
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


BATCH = sorted((ROOT / "submissions" / "correct").glob("*.py"))


def do_bench_median(fn, repeats: int = 3) -> float:
    return statistics.median(triton.testing.do_bench(fn, warmup=100, rep=500, return_mode="median")
                             for _ in range(repeats))


class ClockSampler:
    """NVML readings every 20 ms while in use: mean SM clock and power."""

    def __init__(self):
        self.samples: list[dict] = []
        self._stop = threading.Event()

    def __enter__(self):
        def loop():
            while not self._stop.wait(0.02):
                reading = gpuinfo.snapshot()
                if reading.get("available"):
                    self.samples.append(reading)
        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        busy = [s for s in self.samples if s["power_w"] > 200] or self.samples
        if not busy:
            return {}
        return {"sm_clock_mhz": statistics.fmean(s["sm_clock_mhz"] for s in busy),
                "power_w": statistics.fmean(s["power_w"] for s in busy),
                "temperature_c": max(s["temperature_c"] for s in busy), "samples": len(busy)}


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
    from judge.challenge import load
    matmul_baselines = load("matrix_multiplication").baselines_fn()
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
        with ClockSampler() as clocks_before:
            bench_before = do_bench_median(lambda: solve(a, b, c, M, N, K))
        runs = 5 if name == "grid_2d" else 1
        judged, walls, clocks_judge = [], [], []
        for _ in range(runs):
            t0 = time.monotonic()
            with ClockSampler() as clocks:
                r = grade(path, GradeOptions(device="cuda", seed=11))
            walls.append(time.monotonic() - t0)
            assert r.verdict.value == "accepted", (name, r.message)
            judged.append(r.latency_ms)
            clocks_judge.append(clocks.summary())
        with ClockSampler() as clocks_after:
            bench_after = do_bench_median(lambda: solve(a, b, c, M, N, K))
        bench_ms = statistics.fmean([bench_before, bench_after])
        fidelity[name] = {"do_bench_ms": bench_ms, "do_bench_before_ms": bench_before,
                          "do_bench_after_ms": bench_after, "judge_ms": judged[0],
                          "difference": judged[0] / bench_ms - 1, "judge_runs_ms": judged, "walls_s": walls,
                          "clocks_do_bench": [clocks_before.summary(), clocks_after.summary()],
                          "clocks_judge": clocks_judge, "judge_reps": r.timing.reps,
                          "judge_warmup_calls": r.timing.warmup_calls}
        print(name, fidelity[name], flush=True)
        (ns.out / "timing_bench.json").write_text(json.dumps(dict(res, fidelity=fidelity), indent=1))
    res["fidelity"] = fidelity
    runs = fidelity["grid_2d"]["judge_runs_ms"]
    res["repeatability"] = {"runs_ms": runs, "spread": (max(runs) - min(runs)) / statistics.median(runs)}

    # 4. cost: a cold grading in a fresh process (its own baselines cache;
    # the judge's Triton cache warm, then empty too), then several different
    # submissions one after another in this process (baselines cached).
    cold = {}
    for label, extra in (("judge_triton_cache_warm", {}), ("all_caches_empty", {"TRITON_CACHE_DIR": tempfile.mkdtemp()})):
        env = dict(os.environ, XDG_CACHE_HOME=tempfile.mkdtemp(), **extra)
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "judge.cli", "submit", str(SUBMISSIONS["grid_2d"]), "--json"],
                              env=env, capture_output=True, text=True, check=False)
        wall = time.monotonic() - t0
        try:
            out = json.loads(proc.stdout)
            cold[label] = {"wall_s": wall, "verdict": out["verdict"], "duration_s": out["duration_s"],
                           "phase_seconds": out.get("phase_seconds", {})}
        except (json.JSONDecodeError, KeyError):
            cold[label] = {"wall_s": wall, "error": proc.stderr[-2000:]}
        print("cold", label, cold[label], flush=True)
    batch = []
    for path in BATCH:
        t0 = time.monotonic()
        r = grade(path, GradeOptions(device="cuda", seed=12))
        batch.append({"submission": path.name, "wall_s": time.monotonic() - t0, "verdict": r.verdict.value,
                      "phase_seconds": r.phase_seconds, "case_seconds": {x.name: x.seconds for x in r.cases}})
        print("batch", batch[-1]["submission"], batch[-1]["wall_s"], r.phase_seconds, flush=True)
    per = statistics.fmean(b["wall_s"] for b in batch)
    res["cost"] = {"cold": cold, "batch": batch, "per_submission_in_batch_s": per}
    cold_s = cold["judge_triton_cache_warm"]["wall_s"]

    rows = [f"| baselines | reference tf32 at {100 * res['reference_tf32_vs_cublas_tf32']:.0f}% of cuBLAS TF32, "
            f"reference ieee at {100 * res['reference_ieee_vs_cublas_fp32']:.0f}% of cuBLAS FP32 | ≥ 90% / ≥ 100% |"]
    for name, f in fidelity.items():
        rows.append(f"| fidelity {name} | judge {f['judge_ms']:.3f} ms vs do_bench {f['do_bench_ms']:.3f} ms "
                    f"(before {f['do_bench_before_ms']:.3f}, after {f['do_bench_after_ms']:.3f}): "
                    f"{100 * f['difference']:+.1f}% | within ±2% |")
    rows.append(f"| repeatability | 5 gradings of grid_2d spread {100 * res['repeatability']['spread']:.2f}% | ≤ 1% |")
    rows.append(f"| cost | cold grading {cold_s:.1f} s ({cold['all_caches_empty']['wall_s']:.1f} s with the "
                f"judge's Triton cache empty too); {per:.1f} s per submission in a run of {len(batch)} different ones "
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
