#!/usr/bin/env bash
# The timing checks to rerun on a GPU after a change to judge/timing.py (one
# device call): where a short kernel's latency comes from, the timer's GPU
# trust tests, repeat gradings of a short kernel (same file, fresh
# processes: their latencies should agree), and the fidelity against
# triton.testing.do_bench. Usage: bash bench/timing_checks.sh OUTDIR
# (PROBE=0 skips bench/host_overhead.py; REPEAT=n gradings of each short kernel, default 3)
set -u
out=${1:?usage: bench/timing_checks.sh OUTDIR}
mkdir -p "$out"
[ "${PROBE:-1}" = 0 ] || timeout 150 python3 bench/host_overhead.py --out "$out" --repeat 2 2>&1 | tail -20
timeout 240 python3 -m pytest -q -m gpu tests/test_trust.py tests/test_isolation.py -k "timecheck or side_stream" 2>&1 | tail -5
for f in challenges/reduction/examples/correct_atomic_chunks.py challenges/vector_addition/examples/correct_block1024.py; do
  c=$(basename "$(dirname "$(dirname "$f")")")
  for i in $(seq "${REPEAT:-3}"); do
    timeout 90 python3 -m judge.cli submit "$f" --challenge "$c" --json > "$out/submit_${c}_$i.json" 2>/dev/null
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d.get('timing') or {}; print(sys.argv[2], d['verdict'], d.get('latency_ms'), t.get('median_ci_ms'), t.get('head_start_s'), d.get('duration_s'), d.get('message', '')[:300])" "$out/submit_${c}_$i.json" "$c"
  done
done
timeout 200 python3 bench/fidelity_method.py --out "$out" 2>&1 | tail -8
