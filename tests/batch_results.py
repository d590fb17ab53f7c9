"""Result JSONs shaped as `judge submit --json` prints them, for the store
and export tests (no grading needed): an accepted GPU result with timing,
a wrong answer, a compile error."""

from __future__ import annotations

import copy

BASELINES = {"reference_tf32": 4.0, "reference_ieee": 9.0, "cublas_tf32": 2.0, "cublas_fp32": 7.0}


def case(name, status="accepted", message="", shape="2×2×2"):
    return {"name": name, "kind": "functional", "shape": shape, "dims": {}, "status": status, "trials": 1,
            "message": message, "seconds": 0.5, "first_mismatches": [], "also": {}}


def accepted(latency_ms=3.0, path="x.py"):
    tflops = 412.3 / latency_ms
    return {
        "verdict": "accepted", "message": "all cases passed", "challenge": "matrix_multiplication",
        "submission": path, "policy": "fp32", "seed": 7, "device": "cuda", "device_name": "NVIDIA H100",
        "versions": {}, "latency_ms": latency_ms, "timing_note": None,
        "timing": {"median_ms": latency_ms, "tflops": tflops},
        "performance": {"baselines_ms": dict(BASELINES), "baselines_source": "measured",
                        "percent_of": {k: 100 * v / latency_ms for k, v in BASELINES.items()},
                        "speedup_over": {}},
        "score": {"total": 70.0, "maximum": 100.0, "correctness": 40.0, "performance": 30.0,
                  "performance_fraction": 0.5, "latency_ms": latency_ms, "floor": "reference_tf32",
                  "floor_ms": 4.0, "target": "cublas_tf32", "target_ms": 2.0, "note": "performance: log scale"},
        "cases": [case("example"), case("odd_sizes", shape="3×5×7"), case("performance", shape="8192×6144×4096")],
        "sandbox": "bwrap", "stdout": "", "stderr": "", "started_at": "2026-01-01T00:00:00+00:00",
        "duration_s": 12.5, "phase_seconds": {"load": 2.0},
    }


def wrong_answer(message="=cmd|' /C calc'!A0 is what the student printed"):
    result = copy.deepcopy(accepted())
    result.update(verdict="wrong_answer", message=message, latency_ms=None, timing=None, performance=None)
    result["score"].update(total=0.0, correctness=0.0, performance=None, performance_fraction=None,
                           note="not accepted: no points")
    result["cases"][1] = case("odd_sizes", "wrong_answer", "3 elements out of tolerance", "3×5×7")
    result["cases"][2] = case("performance", "not_run", "not run", "8192×6144×4096")
    return result


def compile_error():
    result = wrong_answer("SyntaxError: expected ':'")
    result["verdict"] = "compile_error"
    result["cases"] = [case("example", "compile_error", "SyntaxError: expected ':'"),
                       case("odd_sizes", "not_run", "not run"), case("performance", "not_run", "not run")]
    return result
