"""`judge check` on every example submission (issue 12): LeetGPU's answer
for the GPU chosen, and ours, next to the verdict each file's expected.toml
declares (under the challenge's default policy).

    python bench/check_examples.py --out DIR [--only TEXT...] [--gpus h100 t4] [--t4-only TEXT]

Each file is graded as `judge check` grades it (LeetGPU's policy, ours
alongside), without timing: the answers do not depend on it. `--gpus`: the
LeetGPU GPUs to answer for (t4: no TF32, so on a GPU a tl.dot left at its
default precision computes in IEEE float32; on CPU that is emulated); the
second GPU only for files whose path contains `--t4-only`. Writes
DIR/check_examples.json and .md after every file; exits 1 when our verdict
differs from expected.toml.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from judge import challenge as challenges  # noqa: E402
from judge import check as checking  # noqa: E402
from judge import goldens  # noqa: E402
from judge.grader import GradeOptions, grade, versions  # noqa: E402


def check_one(golden: goldens.Golden, gpu: str, seed: int) -> dict:
    challenge = challenges.load(golden.challenge)
    leet, ours = checking.policies(challenge)
    options = GradeOptions(challenge=golden.challenge, policy=leet, seed=seed, time=False,
                           also_policies=[ours] if ours != leet else [], emulate_tf32=gpu != "t4")
    started = time.monotonic()
    outcome = checking.answer(challenge, golden.path, grade(golden.path, options), gpu)
    # expected.toml declares the verdict on a TF32 GPU (or the CPU's default
    # emulation of one); a T4 answer has nothing declared to match.
    expected = golden.verdict if gpu != "t4" else None
    return {"path": golden.relative(), "challenge": golden.challenge, "gpu": gpu, "expected": expected,
            "leetgpu": outcome.leetgpu.verdict, "leetgpu_text": outcome.leetgpu.text,
            "ours": outcome.ours.verdict, "ours_matches": expected is None or outcome.ours.verdict == expected,
            "device": outcome.result.device, "device_name": outcome.result.device_name,
            "wall_s": round(time.monotonic() - started, 2)}


def markdown(report: dict) -> str:
    rows = report["rows"]
    lines = ["# `judge check` on every example", "", f"- date: {report['date']}",
             f"- device: {report['device']}", f"- versions: {report['versions']}", f"- seed: {report['seed']}",
             "", f"{len(rows)} checks; our verdict differs from expected.toml in "
                 f"{sum(not r['ours_matches'] for r in rows)}.", ""]
    by_file: dict[str, dict] = {}
    for r in rows:
        by_file.setdefault(r["path"], {})[r["gpu"]] = r
    differ = [p for p, g in by_file.items() if len(g) > 1 and len({r["leetgpu"] for r in g.values()}) > 1]
    lines += [f"LeetGPU's answer differs between the GPUs asked for in: {', '.join(differ) or 'none'}.", "",
              "| file | GPU | LeetGPU would say | ours | expected (ours) | match | wall s |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['path']} | {r['gpu']} | {r['leetgpu']} | {r['ours']} | {r['expected'] or '–'} | "
                     f"{'–' if r['expected'] is None else 'yes' if r['ours_matches'] else 'NO'} | {r['wall_s']:.1f} |")
    lines += ["", "LeetGPU's answer in full:", ""]
    lines += [f"- {r['path']} ({r['gpu']}): {r['leetgpu_text']}" for r in rows]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", nargs="*", default=[""], help="only files whose path contains one of these")
    ap.add_argument("--gpus", nargs="+", default=["h100", "t4"], choices=sorted(checking.GPUS))
    ap.add_argument("--t4-only", default="submissions/", help="the second GPU only for paths containing this")
    ap.add_argument("--seed", type=int, default=2026)
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "versions": versions(),
              "seed": ns.seed, "device": None, "rows": []}
    for golden in goldens.examples():
        if not any(part in golden.relative() for part in ns.only):
            continue
        for number, gpu in enumerate(ns.gpus):
            if number and ns.t4_only not in golden.relative():
                continue
            row = check_one(golden, gpu, ns.seed)
            report["rows"].append(row)
            report["device"] = report["device"] or row["device_name"]
            print(f"{row['path']:62s} {gpu:5s} leetgpu {row['leetgpu']:20s} ours {row['ours']:20s} "
                  f"{'ok' if row['ours_matches'] else 'MISMATCH'} {row['wall_s']} s", flush=True)
            (ns.out / "check_examples.json").write_text(json.dumps(report, indent=1))
            (ns.out / "check_examples.md").write_text(markdown(report))
    return 0 if all(r["ours_matches"] for r in report["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
