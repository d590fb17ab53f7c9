"""Batch every example submission on the GPU(s) through `judge batch`'s
own code, one batch per challenge (each file against its own challenge),
and record per-submission and whole-batch wall times.

    python bench/batch_gpu.py --out DIR [--gpus all|0,1] [--device cuda] [--only TEXT ...] [--ray local] [--copies N]

The files: submissions/**/*.py and every challenge's examples/*.py, with
the verdicts their expected.toml declare (judge.goldens). Each challenge's
files are copied into DIR/work/<challenge>/class/ and graded into
DIR/work/<challenge>/results/ (a results store; `judge export` works on it).
Writes DIR/batch_gpu.json and DIR/batch_gpu.md; exits 1 when a verdict
differs from the expected one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge import goldens  # noqa: E402
from judge.batch.progress import Display  # noqa: E402
from judge.batch.run import BatchOptions, run_batch  # noqa: E402
from judge.batch.store import Store  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from proc_profile import ProcProfile  # noqa: E402


def file_id(golden: goldens.Golden) -> str:
    return golden.relative().replace("/", "__").removesuffix(".py")


def cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


class Busy:
    """How busy the GPUs are while a batch runs: NVML's utilization (the
    share of time a kernel was running) of every GPU, every 0.2 s; and the
    host's CPUs over the whole batch (/proc/stat), to tell a batch bound by
    compiling and imports from one bound by the GPU."""

    def __init__(self):
        self.samples: list[int] = []
        self.cpu_from = self.cpu_to = None
        self._stop = threading.Event()
        self.thread = None
        try:
            import pynvml as nv
            nv.nvmlInit()
            self.nv, self.handles = nv, [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
        except Exception:  # noqa: BLE001 - no NVML (CPU runs): nothing sampled
            self.handles = []

    def __enter__(self):
        self.cpu_from = cpu_ticks()
        if self.handles:
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.2):
            self.samples += [self.nv.nvmlDeviceGetUtilizationRates(h).gpu for h in self.handles]

    def __exit__(self, *exc):
        self.cpu_to = cpu_ticks()
        self._stop.set()
        if self.thread:
            self.thread.join()

    def summary(self) -> dict | None:
        out = {}
        if self.cpu_from and self.cpu_to and self.cpu_to[1] > self.cpu_from[1]:
            out["cpu_busy_percent"] = round(100 * (self.cpu_to[0] - self.cpu_from[0])
                                            / (self.cpu_to[1] - self.cpu_from[1]), 1)
        if self.samples:
            out.update({"mean_utilization_percent": round(statistics.fmean(self.samples), 1),
                        "share_of_samples_busy": round(sum(v > 0 for v in self.samples) / len(self.samples), 3),
                        "samples": len(self.samples)})
        return out or None


def one_challenge(name: str, files: list, ns, work: Path) -> dict:
    folder, out = work / name / "class", work / name / "results"
    shutil.rmtree(work / name, ignore_errors=True)
    folder.mkdir(parents=True)
    expected = {}
    for golden in files:
        for k in range(ns.copies):  # copies: a class most of whose files pass (each is compiled and timed anew)
            key = file_id(golden) if ns.copies == 1 else f"{file_id(golden)}__copy{k}"
            shutil.copyfile(golden.path, folder / f"{key}.py")
            expected[key] = golden
    opts = BatchOptions(folder=folder, out=out, challenge=name, device=ns.device, gpus=ns.gpus, lanes=ns.lanes,
                        lanes_per_gpu=ns.lanes_per_gpu, workers=ns.workers, seed=ns.seed, drift=ns.drift, ray=ns.ray)
    started = time.monotonic()
    with Busy() as busy, (ProcProfile() if ns.profile else contextlib.nullcontext()) as prof:
        outcome = run_batch(opts, Display)
    wall = time.monotonic() - started
    store = Store.open_existing(out)
    rows, runs = store.rows(), store.runs()
    store.close()
    records = []
    for row in rows:
        golden = expected[row["id"]]
        records.append({"path": golden.relative(), "challenge": name, "expected": golden.on_gpu,
                        "verdict": row.get("verdict"), "matches": row.get("verdict") == golden.on_gpu,
                        "lane": row.get("lane"), "wall_s": row.get("wall_s"), "latency_ms": row.get("latency_ms"),
                        "tflops": row.get("tflops"), "score": row.get("score"),
                        "grading_s": (row.get("result") or {}).get("duration_s"),
                        "phases": (row.get("result") or {}).get("phase_seconds")})
    return {"challenge": name, "files": len(files) * ns.copies, "batch_wall_s": round(wall, 2), "drift": outcome.drift,
            "gpu_busy": busy.summary(),
            "lanes": sorted({r["lane"] for r in records if r.get("lane")}), "device": runs[-1].get("device") if runs else None,
            "device_name": next(((r.get("result") or {}).get("device_name") for r in rows if r.get("result")), None),
            "records": records, **({"profile": prof.summary()} if prof is not None else {})}


def markdown(report: dict) -> str:
    lines = [f"# Batch of every example submission: {report['device_name']}, lanes {report['lanes']}", "",
             f"{report['files']} files, {len(report['batches'])} challenge(s), whole batch "
             f"{report['total_wall_s']:.1f} s wall (sum of the per-challenge batches); "
             f"{report['mismatches']} verdict(s) differ from expected.toml.", "",
             "| challenge | files | batch wall s | s per file | lanes | GPU utilization % (NVML mean) "
             "| CPUs busy % | drift (start → end ms, change) |",
             "|---|---|---|---|---|---|---|---|"]
    for b in report["batches"]:
        d = b.get("drift") or {}
        drift = (f"{(d.get('start') or {}).get('latency_ms')} → {(d.get('end') or {}).get('latency_ms')} "
                 f"({d.get('change_percent')} %)") if d else "–"
        lines.append(f"| {b['challenge']} | {b['files']} | {b['batch_wall_s']:.1f} | "
                     f"{b['batch_wall_s'] / max(1, b['files']):.1f} | {', '.join(b['lanes'] or [])} | "
                     f"{(b.get('gpu_busy') or {}).get('mean_utilization_percent', '–')} | "
                     f"{(b.get('gpu_busy') or {}).get('cpu_busy_percent', '–')} | {drift} |")
    for b in report["batches"]:
        prof = b.get("profile")
        if prof:
            spent = ", ".join(f"{kind} {s:.0f}" for kind, s in prof["cpu_seconds"].items())
            lines.append(f"\n{b['challenge']}: CPU seconds by process ({spent}; {prof['mean_cores_busy']} cores busy "
                         f"on average); workers by state on average {prof['mean_workers_by_state']}")
    lines += ["", "| file | expected | verdict | ok | lane | wall s | grading s | latency ms | TFLOPS |",
              "|---|---|---|---|---|---|---|---|---|"]
    for b in report["batches"]:
        for r in b["records"]:
            def f(v, fmt="{:.3f}"):
                return fmt.format(v) if isinstance(v, (int, float)) else "–"
            lines.append(f"| {r['path']} | {r['expected']} | {r['verdict']} | {'yes' if r['matches'] else 'NO'} | "
                         f"{r['lane']} | {f(r['wall_s'], '{:.1f}')} | {f(r['grading_s'], '{:.1f}')} | "
                         f"{f(r['latency_ms'])} | {f(r['tflops'], '{:.1f}')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--gpus", default="all", help="all or a list such as 0,1: one lane per GPU")
    ap.add_argument("--device", default=None, choices=["cpu", "cuda"])
    ap.add_argument("--lanes", type=int, default=1, help="CPU lanes (CPU mode only)")
    ap.add_argument("--lanes-per-gpu", type=int, default=None, help="gradings sharing each GPU (default: auto)")
    ap.add_argument("--workers", type=int, default=None, help="case workers per grading (default: the judge's)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--drift", default="auto", help="auto (GPU: the first accepted example), none or a file")
    ap.add_argument("--only", nargs="*", default=[], help="only files whose path contains one of these")
    ap.add_argument("--ray", default=None, help="grade through the Ray backend: local, auto or an address")
    ap.add_argument("--copies", type=int, default=1,
                    help="grade each file this many times, as that many files (--only correct --copies 4: a class "
                         "whose files all pass, so that every one is timed)")
    ap.add_argument("--fixtures", action="store_true",
                    help="the test fixtures too (tests/fixtures and tests/fixtures/gpu), each graded and timed as "
                         "a class's file is: the timing exploits then go through the lanes' shared-GPU path")
    ap.add_argument("--profile", action="store_true",
                    help="sample /proc: the CPU time of the judge, its workers and their compilers, and the "
                         "workers' states, into each batch's record (bench/proc_profile.py)")
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    by_challenge = defaultdict(list)
    root = Path(__file__).resolve().parent.parent
    fixtures = goldens.read(root / "tests" / "fixtures") + goldens.read(root / "tests" / "fixtures" / "gpu") \
        if ns.fixtures else []
    for golden in goldens.examples() + fixtures:
        if not ns.only or any(part in golden.relative() for part in ns.only):
            by_challenge[golden.challenge].append(golden)
    started = time.monotonic()
    batches = []
    for name, files in sorted(by_challenge.items()):
        batches.append(one_challenge(name, files, ns, ns.out / "work"))
        for r in batches[-1]["records"]:  # a line per file as each challenge ends, for a log that survives a cut
            print(f"{r['path']:70s} {r['expected']:22s} {r['verdict']!s:22s} {'ok' if r['matches'] else 'MISMATCH'} "
                  f"wall {r['wall_s']} s, latency {r['latency_ms']} ms", flush=True)
        report = {"total_wall_s": round(time.monotonic() - started, 2), "files": sum(b["files"] for b in batches),
                  "mismatches": sum(not r["matches"] for b in batches for r in b["records"]),
                  "device_name": next((b["device_name"] for b in batches if b["device_name"]), None),
                  "lanes": batches[0]["lanes"] if batches else None, "workers": ns.workers, "batches": batches}
        # Written after every challenge: a run cut short still leaves what it finished.
        (ns.out / "batch_gpu.json").write_text(json.dumps(report, indent=1))
        (ns.out / "batch_gpu.md").write_text(markdown(report))
    print(markdown(report))
    return 1 if report["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
