"""The timer's own cost kept on disk between gradings (judge.harness_store):
used only where workers cannot write the judge's cache folder, per GPU,
versions and plan, for a limited time."""

from __future__ import annotations

import json

from judge import harness_store, timecheck
from judge.sandbox import Sandbox

COST = {"per_call_s": 0.0004, "sync_s": 0.0, "reps": 60, "head_start_s": 0.0002}


def _read_only(monkeypatch, tmp_path, filesystem="read-only, private /tmp"):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("JUDGE_NO_HARNESS_STORE", raising=False)
    monkeypatch.setattr("judge.sandbox.sandbox_for",
                        lambda device: Sandbox(tool="unshare", network="cut", filesystem=filesystem))
    monkeypatch.setattr("judge.gpuinfo.snapshot", lambda index=0: {"name": "Test GPU", "driver": "1.0"})


def test_a_stored_cost_is_used_within_its_age(monkeypatch, tmp_path):
    _read_only(monkeypatch, tmp_path)
    harness_store.put("plan A", "cuda", COST)
    assert harness_store.get("plan A", "cuda", 3600) == COST
    assert harness_store.get("plan B", "cuda", 3600) is None  # another plan
    assert harness_store.get("plan A", "cuda", 0) is None  # too old
    monkeypatch.setattr("judge.gpuinfo.snapshot", lambda index=0: {"name": "Other GPU", "driver": "1.0"})
    assert harness_store.get("plan A", "cuda", 3600) is None  # another GPU


def test_no_store_where_workers_could_write_it(monkeypatch, tmp_path):
    _read_only(monkeypatch, tmp_path, filesystem="shared")
    harness_store.put("plan A", "cuda", COST)
    assert not (tmp_path / "tritonjudge" / "harness.json").exists()
    assert harness_store.get("plan A", "cuda", 3600) is None
    assert not harness_store.usable("cpu")


def test_a_damaged_store_is_ignored(monkeypatch, tmp_path):
    _read_only(monkeypatch, tmp_path)
    harness_store.put("plan A", "cuda", COST)
    path = tmp_path / "tritonjudge" / "harness.json"
    known = json.loads(path.read_text())
    for entry in known.values():
        entry["cost"]["per_call_s"] = "lots"
    path.write_text(json.dumps(known))
    assert harness_store.get("plan A", "cuda", 3600) is None
    path.write_text("{not json")
    assert harness_store.get("plan A", "cuda", 3600) is None
    harness_store.put("plan A", "cuda", COST)  # rewritten whole
    assert harness_store.get("plan A", "cuda", 3600) == COST


def test_harness_cost_takes_the_stored_cost_without_a_worker(monkeypatch, tmp_path):
    _read_only(monkeypatch, tmp_path)
    plan, seeds = {"call": [], "fake": 1}, [1, 2, 3]
    harness_store.put(timecheck._key(plan, len(seeds), "cuda"), "cuda", COST)
    timecheck._cache.clear()
    assert timecheck.is_cached(plan, len(seeds), "cuda")

    class Unused:
        closed = False

        def close(self):
            Unused.closed = True

        def request(self, *a, **k):
            raise AssertionError("the stand-in must not run")

    assert timecheck.harness_cost(plan, seeds, worker=Unused()) == COST
    assert Unused.closed
    timecheck._cache.clear()
