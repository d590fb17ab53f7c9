"""Why the judge's timing and triton.testing.do_bench can differ on one
kernel (issue 11): each method's median with the SM clock and board power
NVML reads while it runs, in the same thermal state.

    python bench/fidelity_power.py --out DIR [--rounds 3]

For each kernel at 8192×6144×4096, the methods alternate `--rounds` times:
- do_bench: do_bench(warmup=100, rep=500), back-to-back calls, L2 cleared
  between them;
- do_bench_long: the same with rep=2000 (does a longer run read slower?);
- measure: judge.timing.measure as bench/fidelity_method.py calls it
  (flush between calls, stop on the median's precision);
- measure_3s: the same, made to run its full 3 s budget;
- measure_grading: the same with what a grading adds between calls, as
  the worker does it now (fresh inputs drawn into the buffers by
  judge.cases.refill_inputs, the output poisoned and summed by
  judge.check_sums);
- measure_grading_before: the same with the between-call work as it was
  before (inputs drawn by several torch operators and copied in, the sums
  through float64 copies and a weights tensor), to show what that work
  does to a power-limited kernel's clock.
- sets_only, sets_refill, sets_sums (not run unless asked): the three
  buffer sets rotated with nothing between calls, with the fresh inputs
  only, with the poison and sums only: which part of the work matters.
`--methods` picks some; `--kernels` some kernels (names as below).
Also the timer's own work per call, old and new, in GPU milliseconds.

A kernel at the board's power limit reads up to 7% apart from one round to
the next with the GPU's power and thermal history (do_bench's first round
from idle read 9.63 ms, its next two 10.27 and 10.18 ms, on one H100). So
each kernel first runs back to back for `--preheat` seconds, the rounds
alternate the methods' order (forward, then backward), and each method is
compared with do_bench round by round (the two adjacent in time): the
median of those paired differences is the fidelity figure.
Writes DIR/fidelity_power.json and DIR/fidelity_power.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402

from judge import cases, timing  # noqa: E402
from judge import challenge as challenges  # noqa: E402

KERNELS = {"reference (ieee)": ROOT / "bench" / "ref_submission.py",
           "grid_2d": ROOT / "submissions" / "correct" / "grid_2d.py",
           "grouped_1d": ROOT / "submissions" / "correct" / "grouped_1d.py",
           "block_pointers": ROOT / "submissions" / "correct" / "block_pointers.py"}
M, N, K = 8192, 6144, 4096


class Sampler:
    """SM clock (MHz) and board power (W) every 5 ms while a method runs."""

    def __init__(self):
        import pynvml as nv
        nv.nvmlInit()
        self.nv, self.handle = nv, nv.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()

    def __enter__(self):
        self.samples, self._stop = [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self):
        nv, h = self.nv, self.handle
        while not self._stop.wait(0.005):
            self.samples.append((nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                                 nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                                 nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)))

    def __exit__(self, *exc):
        self._stop.set()
        self.thread.join()

    def summary(self) -> dict:
        if not self.samples:
            return {"sm_mhz": None, "power_w": None, "temp_c": None}
        return {"sm_mhz": round(statistics.fmean(s[0] for s in self.samples)),
                "power_w": round(statistics.fmean(s[1] for s in self.samples), 1),
                "temp_c": round(statistics.fmean(s[2] for s in self.samples), 1)}


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solve


def old_draw(plan: dict, seed: int, views: dict) -> None:
    """Fresh inputs as the worker drew them before: torch.rand, a scale and
    a shift (new tensors), then a copy into the buffer."""
    for name, view in views.items():
        dist = plan["inputs"][name]["distribution"]
        gen = torch.Generator(device="cuda").manual_seed(cases._arg_seed(seed, name))
        u = torch.rand(view.shape, generator=gen, device="cuda", dtype=torch.float32)
        view.copy_((u * (dist["high"] - dist["low"]) + dist["low"]).to(torch.float32))


def old_sums(out: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The two check sums as the timer took them before: float64 copies."""
    flat = torch.cat([out.reshape(-1).to(torch.float64)])
    weighted = torch.cat([out.reshape(-1).to(torch.float64) * weights])
    return torch.stack([flat.sum(), weighted.sum()])


def between_call_ms(plan: dict, views: dict, out: torch.Tensor, reps: int = 20) -> dict:
    """GPU milliseconds of the timer's own work per call, before and now."""
    from judge.check_sums import sums
    weights = cases.check_weights(out.numel(), "cuda")
    steps = {"draw_before": lambda r: old_draw(plan, r, views),
             "draw_now": lambda r: cases.refill_inputs(plan, r, "cuda", views),
             "sums_before": lambda r: old_sums(out, weights),
             "sums_now": lambda r: sums([out])}
    result = {}
    for name, step in steps.items():
        step(0)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for r in range(reps):
            step(r)
        end.record()
        end.synchronize()
        result[name] = round(start.elapsed_time(end) / reps, 3)
    return result


def preheat(call, seconds: float, sampler: Sampler) -> dict:
    """Run `call` back to back for `seconds`, so that the rounds start in the
    power and thermal state a long run reaches; its last second's NVML readings."""
    if seconds <= 0:
        return {}
    end = time.monotonic() + seconds
    while time.monotonic() < end - 1.0:
        for _ in range(10):
            call()
        torch.cuda.synchronize()
    with sampler:
        while time.monotonic() < end:
            for _ in range(10):
                call()
            torch.cuda.synchronize()
    return dict(seconds=seconds, **sampler.summary())


def paired(runs: dict, method: str) -> float:
    """The median over rounds of `method`'s difference (%) against do_bench
    in the same round; NaN without do_bench."""
    if "do_bench" not in runs:
        return float("nan")
    return statistics.median(100 * (mine["ms"] / theirs["ms"] - 1)
                             for mine, theirs in zip(runs[method], runs["do_bench"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--preheat", type=float, default=3.0,
                    help="seconds each kernel runs back to back before its rounds (0: none)")
    ap.add_argument("--methods", default="do_bench,measure,measure_grading,measure_grading_before",
                    help="comma-separated: do_bench, do_bench_long, measure, measure_3s, measure_grading, "
                         "measure_grading_before, sets_only, sets_refill, sets_sums")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="comma-separated, of: " + ", ".join(KERNELS))
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    chosen = [m.strip() for m in ns.methods.split(",") if m.strip()]
    plan = cases.input_plan(challenges.load("matrix_multiplication"),
                            challenges.load("matrix_multiplication").performance)
    g = torch.Generator(device="cuda").manual_seed(0)
    sets = [(torch.rand(M, N, device="cuda", generator=g) * 20 - 10, torch.rand(N, K, device="cuda", generator=g) * 20 - 10,
             torch.empty(M, K, device="cuda")) for _ in range(3)]
    a, b, c = sets[0]
    views = [{"a": s[0], "b": s[1]} for s in sets]
    weights = cases.check_weights(M * K, "cuda")
    sampler = Sampler()
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": torch.cuda.get_device_name(),
              "versions": {"torch": torch.__version__, "triton": triton.__version__}, "shape": [M, N, K],
              "between_call_ms": between_call_ms(plan, views[0], c), "kernels": {}}
    print("the timer's own work per call, GPU ms:", report["between_call_ms"], flush=True)
    for name in [k.strip() for k in ns.kernels.split(",") if k.strip()]:
        solve = load(KERNELS[name])

        def call(solve=solve):
            solve(a, b, c, M, N, K)

        grading_calls = [lambda s=s, solve=solve: solve(s[0], s[1], s[2], M, N, K) for s in sets]

        def refill(r: int, i: int):  # what a grading writes before each timed call: fresh inputs
            cases.refill_inputs(plan, cases.call_seed(7, r), "cuda", views[i])

        def refill_before(r: int, i: int):  # the same work as before: the sums of the last call too
            old_sums(sets[(i - 1) % 3][2], weights)
            old_draw(plan, cases.call_seed(7, r), views[i])

        methods = {
            "do_bench": lambda: triton.testing.do_bench(call, warmup=100, rep=500, return_mode="median"),
            "do_bench_long": lambda: triton.testing.do_bench(call, warmup=100, rep=2000, return_mode="median"),
            "measure": lambda: timing.measure([call])["median_ms"],
            "measure_3s": lambda: timing.measure([call], target=0.0)["median_ms"],
            "measure_grading": lambda: timing.measure(grading_calls, outputs=[[s[2]] for s in sets],
                                                      refill=refill)["median_ms"],
            "measure_grading_before": lambda: timing.measure(grading_calls, refill=refill_before)["median_ms"],
            # What part of a grading's between-call work moves the latency:
            "sets_only": lambda: timing.measure(grading_calls)["median_ms"],
            "sets_refill": lambda: timing.measure(grading_calls, refill=refill)["median_ms"],
            "sets_sums": lambda: timing.measure(grading_calls, outputs=[[s[2]] for s in sets])["median_ms"],
        }
        methods = {m: methods[m] for m in chosen}
        call()
        torch.cuda.synchronize()
        heated = preheat(call, ns.preheat, sampler)
        runs: dict[str, list] = {m: [] for m in methods}
        for round_ in range(ns.rounds):
            order = list(methods) if round_ % 2 == 0 else list(reversed(methods))
            for method in order:
                with sampler:
                    ms = methods[method]()
                runs[method].append(dict(ms=ms, **sampler.summary()))
        report["kernels"][name] = runs
        report.setdefault("preheat", {})[name] = heated
        med = {m: statistics.median(r["ms"] for r in rs) for m, rs in runs.items()}
        print(name, "preheat", heated, {m: f"{v:.3f} ms (paired {paired(runs, m):+.1f}%)" for m, v in med.items()},
              {m: (statistics.median(r["sm_mhz"] for r in rs), statistics.median(r["power_w"] for r in rs))
               for m, rs in runs.items()}, flush=True)
        (ns.out / "fidelity_power.json").write_text(json.dumps(report, indent=1))
    lines = [f"# Timing methods, SM clock and power ({report['device']}, {report['date']})", "",
             f"versions: {report['versions']}; shape {M}×{N}×{K}; {ns.rounds} rounds, the methods' order "
             f"alternating; each kernel first run back to back for {ns.preheat:g} s; 'paired': the median over "
             "rounds of each round's difference against do_bench(rep=500) in the same round; 'medians': the "
             "difference of the medians over rounds", "",
             f"the timer's own work per call (GPU ms): {report['between_call_ms']}", "",
             "| kernel | method | ms (median) | paired vs do_bench | medians vs do_bench | spread of rounds | "
             "SM MHz | power W | °C |", "|---|---|---|---|---|---|---|---|---|"]
    for name, runs in report["kernels"].items():
        base = statistics.median(r["ms"] for r in runs["do_bench"]) if "do_bench" in runs else None
        for method, rs in runs.items():
            ms = statistics.median(r["ms"] for r in rs)
            spread = 100 * (max(r["ms"] for r in rs) / min(r["ms"] for r in rs) - 1)
            lines.append(f"| {name} | {method} | {ms:.3f} | {paired(runs, method):+.1f}% | "
                         f"{100 * (ms / base - 1) if base else float('nan'):+.1f}% | {spread:.1f}% | "
                         f"{statistics.median(r['sm_mhz'] for r in rs):.0f} | "
                         f"{statistics.median(r['power_w'] for r in rs):.0f} | "
                         f"{statistics.median(r['temp_c'] for r in rs):.0f} |")
    (ns.out / "fidelity_power.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
