"""Grade every example submission, and the GPU-only boundary fixtures, on the
GPU and record the results.

    python bench/gpu_examples.py --out DIR [--only PATTERN]

Writes DIR/gpu_examples.json (verdicts, per-case statuses, latency, device,
versions) and DIR/gpu_examples.md (a table), and compares each verdict with
submissions/expected.toml and tests/fixtures/gpu/expected.toml; exits 1 if
any differs. Paths in the results are relative to the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge.grader import GradeOptions, grade  # noqa: E402
from judge.isolation import Limits  # noqa: E402


def _row(record: dict) -> str:
    lat = f"{record['latency_ms']:.3f}" if record.get("latency_ms") else "–"
    tflops = f"{record['timing']['tflops']:.1f}" if record.get("timing") else "–"
    where = " ".join(record.get("first_failing", "").split()).replace("|", "/")
    return (f"| {record['path']} | {record['expected']} | {record['verdict']} | "
            f"{'yes' if record['matches'] else 'NO'} | {lat} | {tflops} | {record['wall_s']:.1f} | {where} |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default="", help="grade only paths containing this")
    ap.add_argument("--exclude", default=None, help="skip paths containing this")
    ap.add_argument("--merge", type=Path, nargs="*", default=[],
                    help="earlier gpu_examples.json files whose records come first in the output")
    ap.add_argument("--seed", type=int, default=2026)
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    # Example submissions, then the GPU-only fixtures of the boundary tests.
    expected = {}
    for folder in (ROOT / "submissions", ROOT / "tests" / "fixtures" / "gpu"):
        with (folder / "expected.toml").open("rb") as fh:
            expected.update({(folder / k).relative_to(ROOT).as_posix(): v["verdict"]
                             for k, v in tomllib.load(fh).items()})
    rows, records, mismatched = [], [], 0
    for earlier in ns.merge:
        for record in json.loads(earlier.read_text()):
            records.append(record)
            rows.append(_row(record))
    for path, wanted in expected.items():
        if ns.only not in path or (ns.exclude and ns.exclude in path):
            continue
        t0 = time.monotonic()
        # The hanging fixtures get a short case limit; the examples, the defaults.
        limits = Limits(case_timeout_s=10) if "hang" in path or "infinite" in path else Limits()
        result = grade(ROOT / path, GradeOptions(device="cuda", seed=ns.seed, limits=limits))
        wall = time.monotonic() - t0
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
          f"- versions: {head.get('versions')}", f"- seed: {ns.seed}, policy fp32",
          f"- sandbox: {head.get('sandbox')}", "",
          "| file | expected | verdict | match | latency ms | TFLOPS | wall s | first failing case |",
          "|---|---|---|---|---|---|---|---|", *rows]
    (ns.out / "gpu_examples.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 1 if mismatched or not all(r["matches"] for r in records) else 0


if __name__ == "__main__":
    raise SystemExit(main())
