"""How long the timing's warm-up must be (issue 11: "keep the settle phase
only as long as the clocks need"): for each kernel at 8192×6144×4096,

1. a settle trace: after `--idle` seconds of an idle GPU, calls back to back
   (with the timer's L2 flush between them) for `--trace-s` seconds, each
   timed by CUDA events, with NVML's SM clock and board power every 5 ms;
   printed as the mean per-call time and clock in 50 ms windows, and the
   time after which every window stays within 0.5% of the trace's last
   quarter;
2. the judge's method as a grading runs it (judge.timing.measure over three
   buffer sets, fresh inputs and check sums between calls) with each
   warm-up length of `--warmups`, each after `--idle` seconds idle, the
   lengths alternating `--rounds` times, against do_bench(warmup=100,
   rep=500) in the same rounds.

    python bench/warmup_settle.py --out DIR [--kernels grid_2d,grouped_1d]

Writes DIR/warmup_settle.json and DIR/warmup_settle.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
import triton  # noqa: E402

from fidelity_power import KERNELS, M, N, K, Sampler, load  # noqa: E402
from judge import cases, timing  # noqa: E402
from judge import challenge as challenges  # noqa: E402


def trace(call, flush, sampler: Sampler, seconds: float) -> dict:
    """Per-call GPU time and NVML samples from an idle GPU, calls back to back."""
    events = []
    began = time.monotonic()
    with sampler:
        while time.monotonic() - began < seconds:
            for _ in range(4):  # a few calls queued at a time, as the warm-up's rounds do
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                events.append((start, end))
            torch.cuda.synchronize()
    wall = time.monotonic() - began
    times = [s.elapsed_time(e) for s, e in events]
    at = [events[0][0].elapsed_time(s) / 1000 for s, _ in events]  # GPU-side start of each call, from the first
    step = wall / max(1, len(sampler.samples))  # NVML samples, spread evenly over the trace's wall time
    windows = []
    for w in range(int(max(at) / 0.05) + 1):
        inside = [t for t, a in zip(times, at) if w * 0.05 <= a < (w + 1) * 0.05]
        clocks = [c for i, (c, _) in enumerate(sampler.samples) if w * 0.05 <= i * step < (w + 1) * 0.05]
        if inside:
            windows.append({"from_s": round(w * 0.05, 2), "ms": round(statistics.fmean(inside), 4),
                            "sm_mhz": round(statistics.fmean(clocks)) if clocks else None})
    final = statistics.median(times[len(times) * 3 // 4:])
    settled = 0.0
    for w in windows:
        if abs(w["ms"] / final - 1) > 0.005:
            settled = w["from_s"] + 0.05
    return {"final_ms": final, "settled_s": round(settled, 2), "calls": len(times), "windows": windows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--kernels", default="grid_2d,grouped_1d,block_pointers")
    ap.add_argument("--warmups", default="0.1,0.2,0.3,0.5")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle", type=float, default=2.0, help="seconds of idle GPU before each run")
    ap.add_argument("--trace-s", type=float, default=1.5)
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    warmups = [float(w) for w in ns.warmups.split(",")]
    mm = challenges.load("matrix_multiplication")
    plan = cases.input_plan(mm, mm.performance)
    g = torch.Generator(device="cuda").manual_seed(0)
    sets = [(torch.rand(M, N, device="cuda", generator=g) * 20 - 10, torch.rand(N, K, device="cuda", generator=g) * 20 - 10,
             torch.empty(M, K, device="cuda")) for _ in range(3)]
    views = [{"a": s[0], "b": s[1]} for s in sets]
    flush = timing.l2_flush_buffer()
    sampler = Sampler()
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": torch.cuda.get_device_name(),
              "versions": {"torch": torch.__version__, "triton": triton.__version__}, "shape": [M, N, K],
              "idle_s": ns.idle, "kernels": {}}
    for name in [k.strip() for k in ns.kernels.split(",") if k.strip()]:
        solve = load(KERNELS[name])
        a, b, c = sets[0]
        call = lambda solve=solve: solve(a, b, c, M, N, K)  # noqa: E731
        grading_calls = [lambda s=s, solve=solve: solve(s[0], s[1], s[2], M, N, K) for s in sets]

        def refill(r: int, i: int):
            cases.refill_inputs(plan, cases.call_seed(7, r), "cuda", views[i])

        for one in grading_calls:
            one()
        torch.cuda.synchronize()
        time.sleep(ns.idle)
        settle = trace(call, flush, sampler, ns.trace_s)
        print(name, "settle trace:", {k: settle[k] for k in ("final_ms", "settled_s", "calls")},
              [(w["from_s"], w["ms"], w["sm_mhz"]) for w in settle["windows"]], flush=True)
        runs: dict[str, list] = {f"warmup {w}s": [] for w in warmups} | {"do_bench": []}
        for _ in range(ns.rounds):
            for w in warmups:
                time.sleep(ns.idle)
                with sampler:
                    got = timing.measure(grading_calls, outputs=[[s[2]] for s in sets], refill=refill, warmup_s=w)
                runs[f"warmup {w}s"].append(dict(ms=got["median_ms"], reps=got["reps"],
                                                 warmup_wall_s=got["warmup_wall_s"], **sampler.summary()))
            time.sleep(ns.idle)
            with sampler:
                ms = triton.testing.do_bench(call, warmup=100, rep=500, return_mode="median")
            runs["do_bench"].append(dict(ms=ms, **sampler.summary()))
        report["kernels"][name] = {"settle": settle, "runs": runs}
        base = statistics.median(r["ms"] for r in runs["do_bench"])
        print(name, {m: f"{statistics.median(r['ms'] for r in rs):.3f} ms "
                        f"({100 * (statistics.median(r['ms'] for r in rs) / base - 1):+.2f}%)"
                     for m, rs in runs.items()}, flush=True)
        (ns.out / "warmup_settle.json").write_text(json.dumps(report, indent=1))
    lines = [f"# Warm-up length against the median ({report['device']}, {report['date']})", "",
             f"versions: {report['versions']}; shape {M}×{N}×{K}; {ns.idle} s idle before each run; medians over "
             f"{ns.rounds} alternating rounds; difference against do_bench(warmup=100, rep=500)", "",
             "| kernel | settled after (s) | method | ms (median of rounds) | rounds | vs do_bench | SM MHz | power W |",
             "|---|---|---|---|---|---|---|---|"]
    for name, got in report["kernels"].items():
        base = statistics.median(r["ms"] for r in got["runs"]["do_bench"])
        for method, rs in got["runs"].items():
            ms = statistics.median(r["ms"] for r in rs)
            lines.append(f"| {name} | {got['settle']['settled_s']} | {method} | {ms:.3f} | "
                         f"{', '.join('%.3f' % r['ms'] for r in rs)} | {100 * (ms / base - 1):+.2f}% | "
                         f"{statistics.median(r['sm_mhz'] for r in rs):.0f} | "
                         f"{statistics.median(r['power_w'] for r in rs):.0f} |")
    (ns.out / "warmup_settle.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
