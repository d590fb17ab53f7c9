"""Where does a grading's wall time go? One device call:

    python bench/cost_probe.py --out DIR [--workers 1 4]

1. a fresh Python process that imports torch and triton, starts CUDA and
   compiles a small Triton kernel for two shapes with an empty Triton
   cache, each step timed (what every worker pays);
2. one grading of an example submission per worker count, with the
   grading's phases, each case's seconds, and a timeline of the requests
   to the workers and the judge's checks (thread, start, end);
3. the CPU quota of this machine's cgroup (parallel workers need cores).
Writes DIR/cost_probe.json and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STEPS = r'''
import json, time
t = {}
t0 = time.monotonic()
import torch
t["import_torch"] = time.monotonic() - t0; t0 = time.monotonic()
import triton, triton.language as tl
t["import_triton"] = time.monotonic() - t0; t0 = time.monotonic()
torch.cuda.init(); x = torch.ones(1, device="cuda"); torch.cuda.synchronize()
t["cuda_init"] = time.monotonic() - t0

@triton.jit
def add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

for label, n in (("first_compile", 1000), ("second_specialization", 1024), ("same_specialization", 2048)):
    t0 = time.monotonic()
    x = torch.zeros(n, device="cuda"); y = torch.empty_like(x)
    add[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128); torch.cuda.synchronize()
    t[label] = time.monotonic() - t0
print(json.dumps(t))
'''


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--submission", type=Path, default=ROOT / "submissions" / "correct" / "grid_2d.py")
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}

    for name in ("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"):
        try:
            res[f"cgroup {name}"] = Path(name).read_text().strip()
        except OSError:
            pass
    res["cpu_count"], res["affinity"] = os.cpu_count(), len(os.sched_getaffinity(0))
    print({k: v for k, v in res.items() if k != "date"}, flush=True)
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp())
    script = Path(tempfile.mkdtemp()) / "steps.py"  # @triton.jit needs a source file
    script.write_text(STEPS)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=False)
    res["fresh_process"] = dict(json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0
                                else {"error": proc.stderr[-2000:]}, wall_s=time.monotonic() - t0)
    print("fresh process", res["fresh_process"], flush=True)

    import threading

    from judge import grader, isolation
    timeline: list = []

    def traced(cls, name, label):
        original = getattr(cls, name)

        def wrapper(*args, **kwargs):
            start = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                timeline.append((threading.current_thread().name, label, round(start - t0, 3),
                                 round(time.monotonic() - t0, 3)))
        setattr(cls, name, wrapper)

    traced(isolation.WorkerProcess, "request", "request")
    traced(grader._Run, "unpack", "unpack")
    traced(grader._Run, "compare", "compare")
    res["gradings"] = []
    for workers in ns.workers:
        timeline.clear()
        t0 = time.monotonic()
        r = grader.grade(ns.submission, grader.GradeOptions(device="cuda", seed=12, workers=workers, time=False))
        record = {"workers": workers, "wall_s": time.monotonic() - t0, "verdict": r.verdict.value,
                  "phase_seconds": r.phase_seconds, "case_seconds": {c.name: c.seconds for c in r.cases},
                  "timeline": list(timeline)}
        res["gradings"].append(record)
        print(json.dumps({k: v for k, v in record.items() if k != "timeline"}), flush=True)
    (ns.out / "cost_probe.json").write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
