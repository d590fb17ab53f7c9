"""Grade every example submission, and the GPU-only boundary fixtures, on the
GPU and record the results.

    python bench/gpu_examples.py --out DIR [--only PATTERN ...] [--fixtures] [--parallel N] [--no-time]

--fixtures adds the boundary fixtures the CPU suite grades (tests/fixtures/*.py):
CPU and GPU verdicts must agree, so each must get the same verdict here.
--parallel N grades N files at once (verdicts only: use it with --no-time,
since gradings sharing a GPU disturb each other's latency).

Writes DIR/gpu_examples.json (verdicts, per-case statuses, latency, device,
versions) and DIR/gpu_examples.md (a table), and compares each verdict with
the expected.toml files (judge.goldens) and tests/fixtures/gpu/expected.toml; exits 1 if
any differs. Paths in the results are relative to the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge import goldens  # noqa: E402
from judge.grader import GradeOptions, grade  # noqa: E402
from judge.isolation import Limits  # noqa: E402


def _row(record: dict) -> str:
    lat = f"{record['latency_ms']:.3f}" if record.get("latency_ms") else "–"
    timing = record.get("timing") or {}
    tflops = f"{timing['tflops']:.1f}" if timing.get("tflops") else "–"
    gbps = f"{timing['gbps']:.0f}" if timing.get("gbps") else "–"
    where = " ".join(record.get("first_failing", "").split()).replace("|", "/")
    return (f"| {record['path']} | {record['expected']} | {record['verdict']} | "
            f"{'yes' if record['matches'] else 'NO'} | {lat} | {tflops} | {gbps} | {record['wall_s']:.1f} | {where} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", nargs="*", default=[""], help="grade only paths containing one of these")
    ap.add_argument("--exclude", default=None, help="skip paths containing this")
    ap.add_argument("--merge", type=Path, nargs="*", default=[],
                    help="earlier gpu_examples.json files whose records come first in the output")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--fixtures", action="store_true", help="also the CPU suite's fixtures (tests/fixtures/*.py)")
    ap.add_argument("--parallel", type=int, default=1, help="files graded at once")
    ap.add_argument("--no-time", dest="time", action="store_false", help="verdicts only, no timing")
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    # Example submissions, then the GPU-only fixtures of the boundary tests.
    expected = {g.relative(): g for g in goldens.examples() + goldens.read(ROOT / "tests" / "fixtures" / "gpu")}
    rows, records, mismatched = [], [], 0
    for earlier in ns.merge:
        for record in json.loads(earlier.read_text()):
            records.append(record)
            rows.append(_row(record))
    if ns.fixtures:
        expected.update({g.relative(): g for g in goldens.read(ROOT / "tests" / "fixtures")})
    chosen = [(path, golden) for path, golden in expected.items()
              if any(o in path for o in ns.only) and not (ns.exclude and ns.exclude in path)]

    def one(item):
        path, golden = item
        t0 = time.monotonic()
        # The hanging fixtures get a short case limit; the examples, the defaults.
        words = Path(path).stem.split("_")  # (by word: honest_float_exchange is no hang)
        limits = Limits(case_timeout_s=10) if "hang" in words or "infinite" in words else Limits()
        result = grade(ROOT / path, GradeOptions(challenge=golden.challenge, device="cuda", seed=ns.seed,
                                                 limits=limits, time=ns.time))
        return path, golden.on_gpu, result, time.monotonic() - t0

    with ThreadPoolExecutor(max_workers=max(1, ns.parallel)) as pool:
        for path, wanted, result, wall in pool.map(one, chosen):
            ok = result.verdict.value == wanted
            mismatched += not ok
            first = next((c for c in result.cases if c.status not in ("accepted", "skipped", "not_run")), None)
            record = json.loads(result.model_dump_json())
            record.update(expected=wanted, matches=ok, wall_s=round(wall, 2), stdout=record["stdout"][:2000],
                          stderr=record["stderr"][:2000])
            records.append(record)
            record.update(path=path, first_failing=f"{first.name}: {first.message[:80]}" if first else "")
            rows.append(_row(record))
            lat = f"{result.latency_ms:.3f}" if result.latency_ms else "–"
            print(f"{path:40s} expected {wanted:22s} got {result.verdict.value:22s} latency {lat:>8s} ms "
                  f"wall {wall:5.1f} s {'' if ok else '  <-- MISMATCH'}", flush=True)
            (ns.out / "gpu_examples.json").write_text(json.dumps(records, indent=1))
    head = records[0] if records else {}
    md = ["# Example submissions graded on the GPU", "",
          f"- date: {head.get('started_at')}", f"- device: {head.get('device_name')}",
          f"- versions: {head.get('versions')}", f"- seed: {ns.seed}, each challenge's default policy",
          f"- sandbox: {head.get('sandbox')}", "",
          "| file | expected | verdict | match | latency ms | TFLOPS | GB/s | wall s | first failing case |",
          "|---|---|---|---|---|---|---|---|---|", *rows]
    (ns.out / "gpu_examples.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 1 if mismatched or not all(r["matches"] for r in records) else 0


if __name__ == "__main__":
    raise SystemExit(main())
