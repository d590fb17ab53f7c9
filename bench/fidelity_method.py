"""The timing method alone against triton.testing.do_bench, in the same
thermal state: for each kernel, the judge's `timing.measure` and do_bench
(warmup 100 ms, rep 500 ms) alternate three times on the same inputs, so
both see the GPU equally warm. (bench/timing_bench.py compares whole
gradings, which leave the GPU cooler than a benchmark running flat out.)

    python bench/fidelity_method.py --out DIR

Writes DIR/fidelity_method.json and prints a table.
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

import torch  # noqa: E402
import triton  # noqa: E402

from judge import timing  # noqa: E402

KERNELS = {"reference (ieee)": ROOT / "bench" / "ref_submission.py",
           "grid_2d": ROOT / "submissions" / "correct" / "grid_2d.py",
           "block_pointers": ROOT / "submissions" / "correct" / "block_pointers.py"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    M, N, K = 8192, 6144, 4096
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(M, N, device="cuda", generator=g) * 20 - 10
    b = torch.rand(N, K, device="cuda", generator=g) * 20 - 10
    c = torch.empty(M, K, device="cuda")
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": torch.cuda.get_device_name(),
           "versions": {"torch": torch.__version__, "triton": triton.__version__}, "kernels": {}}
    rows = []
    for name, path in KERNELS.items():
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)

        def call(solve=module.solve):
            solve(a, b, c, M, N, K)
        call()
        judge_ms, bench_ms = [], []
        for _ in range(3):
            judge_ms.append(timing.measure([call])["median_ms"])
            bench_ms.append(triton.testing.do_bench(call, warmup=100, rep=500, return_mode="median"))
        j, d = statistics.median(judge_ms), statistics.median(bench_ms)
        res["kernels"][name] = {"judge_ms": judge_ms, "do_bench_ms": bench_ms, "difference": j / d - 1}
        rows.append(f"| {name} | {j:.3f} | {d:.3f} | {100 * (j / d - 1):+.1f}% |")
        print(rows[-1], flush=True)
    (ns.out / "fidelity_method.json").write_text(json.dumps(res, indent=1))
    print("| kernel | timing.measure ms | do_bench ms | difference |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
