"""What one grading costs, phase by phase (issue 11), on the GPU:

    python bench/cost.py --out DIR [--only TEXT] [--batch DIR/batch_gpu.json]

1. cold: every accepted example submission (the ones that run every case
   and the timing) graded by `judge submit --json` in a fresh process, as a
   student's first try is: the judge's own Triton cache and the baselines
   warm (one grading first, not counted), the submission never seen. Wall
   time from outside, and the grading's phase_seconds.
2. batch (`--batch`: a bench/batch_gpu.py result): per-file wall times and
   phases of the example submissions graded in one `judge batch`.

Writes DIR/cost.json and DIR/cost.md (the tables the README's cost
paragraph quotes).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge import goldens  # noqa: E402

# The phases shown, in a grading's order (phase_seconds has more: the timing
# request's steps, timing_*).
PHASES = ["setup", "worker_import", "worker_warmup", "load", "cases", "large_cases", "stop_workers",
          "timing_worker", "timing_checks", "baselines", "teardown"]
STEPS = ["timing_warm_up", "timing_window", "timing_buffers", "timing_unpack", "timing_compare",
         "timing_call_sums", "timing_clock_check"]


def submit(golden: goldens.Golden, seed: int, workers: int | None = None, gpu_lock: str = "auto") -> dict:
    started = time.monotonic()
    extra = (["--workers", str(workers)] if workers else []) + ["--gpu-lock", gpu_lock]
    proc = subprocess.run([sys.executable, "-m", "judge.cli", "submit", str(golden.path), "--challenge",
                           golden.challenge, "--json", "--seed", str(seed)] + extra,
                          capture_output=True, text=True, cwd=ROOT, check=False)
    wall = time.monotonic() - started
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"path": golden.relative(), "wall_s": round(wall, 2), "error": proc.stderr[-2000:]}
    return {"path": golden.relative(), "challenge": golden.challenge, "verdict": result["verdict"],
            "wall_s": round(wall, 2), "grading_s": result["duration_s"], "latency_ms": result["latency_ms"],
            "phases": result["phase_seconds"],
            "timing": {k: (result.get("timing") or {}).get(k) for k in ("reps", "median_ms", "median_ci_ms")}}


def table(rows: list[dict], keys: list[str]) -> list[str]:
    lines = ["| file | verdict | wall s | " + " | ".join(keys) + " |", "|---" * (3 + len(keys)) + "|"]
    for r in rows:
        phases = r.get("phases") or {}
        cells = [fmt(r.get("wall_s"), "{:.1f}")] + [fmt(phases.get(k)) for k in keys]
        lines.append(f"| {r['path']} | {r.get('verdict', 'error')} | " + " | ".join(cells) + " |")
    return lines


def fmt(value, pattern: str = "{:.2f}") -> str:
    return pattern.format(value) if isinstance(value, (int, float)) else "–"


def mean(values: list) -> float | None:
    values = [v for v in values if isinstance(v, (int, float))]
    return statistics.fmean(values) if values else None


def markdown(report: dict) -> str:
    lines = ["# Grading cost, phase by phase", "", f"- date: {report['date']}", f"- device: {report['device']}",
             f"- versions: {report['versions']}", ""]
    cold = report.get("cold") or []
    if cold:
        lines += ["## Cold: `judge submit` in a fresh process (judge's Triton cache and baselines warm)", "",
                  f"{len(cold)} accepted examples; wall per grading: mean {mean([r['wall_s'] for r in cold]):.1f} s, "
                  f"median {statistics.median(r['wall_s'] for r in cold):.1f} s, "
                  f"max {max(r['wall_s'] for r in cold):.1f} s (goal ≤ 10 s).", ""]
        lines += table(cold, PHASES) + ["", "The timing request's steps (seconds):", ""] + table(cold, STEPS) + [""]
    batch = report.get("batch")
    if batch:
        records = [r for b in batch["batches"] for r in b["records"]]
        accepted = [r for r in records if r["verdict"] == "accepted"]
        lines += ["## In a batch (`judge batch`, one GPU)", "",
                  f"{len(records)} example files in {batch['total_wall_s']:.0f} s "
                  f"({batch['total_wall_s'] / max(1, len(records)):.1f} s per file, every verdict included); "
                  f"the {len(accepted)} accepted ones (every case run, then timed): mean "
                  f"{mean([r['wall_s'] for r in accepted]):.1f} s, median "
                  f"{statistics.median(r['wall_s'] for r in accepted):.1f} s (goal ≤ 5 s).", ""]
        lines += table(accepted, PHASES) + [""]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default="", help="only files whose path contains this")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--workers", type=int, default=None, help="judge submit --workers (default: the judge's)")
    ap.add_argument("--gpu-lock", default="auto", help="judge submit --gpu-lock (default: auto)")
    ap.add_argument("--batch", type=Path, help="a batch_gpu.json to summarise as well")
    ap.add_argument("--one-per-challenge", action="store_true",
                    help="cold: every accepted matrix multiplication example, one of each other challenge")
    ap.add_argument("--from-cold", type=Path, help="a cost.json whose cold gradings to reuse (no grading now)")
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    if ns.from_cold:
        report = json.loads(ns.from_cold.read_text())
    else:
        import torch
        import triton
        report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU",
                  "versions": {"torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda},
                  "workers": ns.workers, "cold": []}
    chosen = [g for g in goldens.examples() if g.verdict == "accepted" and ns.only in g.relative()]
    if ns.one_per_challenge:
        seen: set = set()
        chosen = [g for g in chosen if g.challenge == "matrix_multiplication"
                  or (g.challenge not in seen and not seen.add(g.challenge))]
    if not ns.from_cold and chosen:
        warm = {}
        for golden in chosen:  # one grading per challenge first: the judge's cache, the baselines
            if golden.challenge not in warm:
                warm[golden.challenge] = submit(golden, ns.seed, ns.workers, ns.gpu_lock)
        for golden in chosen:
            report["cold"].append(submit(golden, ns.seed, ns.workers, ns.gpu_lock))
            r = report["cold"][-1]
            print(f"{r['path']:60s} {r.get('verdict')!s:12s} wall {r['wall_s']:.1f} s "
                  f"{ {k: (r.get('phases') or {}).get(k) for k in PHASES} } timing {r.get('timing')}", flush=True)
            (ns.out / "cost.json").write_text(json.dumps(report, indent=1))
    if ns.batch:
        report["batch"] = json.loads(ns.batch.read_text())
    (ns.out / "cost.json").write_text(json.dumps(report, indent=1))
    (ns.out / "cost.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
