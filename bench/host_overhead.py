"""Where a short kernel's measured latency comes from (GPU only): the host
path of one call of solve under the worker's conditions, step by step, next
to the latency the timer reports.

    python bench/host_overhead.py --out DIR [--file F --challenge C] [--repeat 3]

The timer records its start event after the L2 flush and the refill are
queued, so the GPU has a head start; when the host path of a call (arming
the rules, the dispatch guard, Triton's launch) outlasts it, the GPU waits
for the host and the wait is measured. Steps, each adding to the previous:
bare (no hook), Triton's launch hooks, the rules armed around each call,
the audit hook. For each, without and with timing's head start: the host
microseconds of a call (with and without arming) and timing.measure's
median; and triton.testing.do_bench's median, bare. Writes DIR/host_overhead.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def host_us(call, around, reps: int = 300) -> tuple[float, float]:
    """Median host microseconds of (arming + call + disarming) and of the call alone."""
    import torch
    whole, inner = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        with around():
            t1 = time.perf_counter()
            call()
            t2 = time.perf_counter()
        t3 = time.perf_counter()
        whole.append((t3 - t0) * 1e6)
        inner.append((t2 - t1) * 1e6)
        torch.cuda.synchronize()
    return statistics.median(whole), statistics.median(inner)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--file", default="challenges/reduction/examples/correct_atomic_chunks.py")
    ap.add_argument("--challenge", default="reduction")
    ap.add_argument("--repeat", type=int, default=3)
    ns = ap.parse_args()
    import contextlib

    import torch

    from judge import cases as case_data
    from judge import challenge as challenges
    from judge import timing
    from judge.worker import launches
    from judge.worker import rules
    from judge.worker.rules import Guard

    challenge = challenges.load(ns.challenge)
    plan = case_data.input_plan(challenge, challenge.performance)
    path = str((ROOT / ns.file).resolve())
    spec = importlib.util.spec_from_file_location("submission", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sets = []
    for s in range(3):
        made = case_data.make_inputs(plan, 1000 + s, "cuda")
        args = []
        for item in plan["call"]:
            if item["role"] == "dim":
                args.append(int(item["value"]))
            elif item["name"] in made:
                args.append(made[item["name"]])
            else:
                spec_ = plan["outputs"][item["name"]]
                args.append(torch.empty(spec_["shape"], dtype=getattr(torch, spec_.get("dtype", "float32")),
                                        device="cuda"))
        sets.append(args)
    calls = [lambda args=args: module.solve(*args) for args in sets]
    outs = [[a for a, item in zip(args, plan["call"]) if item["role"] in ("out", "inout")] for args in sets]

    rows = []
    default_head_start = timing.HEAD_START_S

    def step(name: str, around) -> None:
        for head_start in (0.0, default_head_start):
            timing.HEAD_START_S = head_start
            one_step(f"{name}, head start {head_start * 1e6:.0f} µs", around)

    def one_step(name: str, around) -> None:
        for r in range(ns.repeat):
            whole, inner = host_us(calls[0], around)
            timed = timing.measure(calls, outputs=outs, around_call=around, streams=launches.take_streams,
                                   fence=rules.fence, min_reps=50, max_reps=500, budget_s=3.0)
            rows.append({"step": name, "repeat": r, "host_us_armed": round(whole, 1), "host_us_call": round(inner, 1),
                         "median_ms": timed["median_ms"], "min_ms": timed["min_ms"], "reps": timed["reps"]})
            print(json.dumps(rows[-1]), flush=True)

    for call in calls:
        call()
    torch.cuda.synchronize()
    import triton.testing
    for r in range(ns.repeat):
        rows.append({"step": "do_bench (bare)", "repeat": r,
                     "median_ms": triton.testing.do_bench(calls[0], warmup=100, rep=500, return_mode="median")})
        print(json.dumps(rows[-1]), flush=True)
    step("bare", contextlib.nullcontext)
    trusted, sealed = launches.hook_triton(cuda=True)
    step("launch hooks", contextlib.nullcontext)
    guard = Guard(submission=path, trusted=trusted)
    guard.bind(module.__dict__, launches.__dict__)
    step("rules armed", guard.armed)
    from judge.worker import arming
    arming.arm(path, guard, trusted, sealed, 2)
    step("audit hook", guard.armed)
    ns.out.mkdir(parents=True, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": torch.cuda.get_device_name(),
              "torch": torch.__version__, "file": ns.file, "rows": rows}
    (ns.out / "host_overhead.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
