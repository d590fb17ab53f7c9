"""Triton's version key computed by the judge once and handed to workers
(judge.triton_key, judge.worker.tritonkey)."""

import json
import os
import subprocess
import sys

import pytest

from judge import triton_key

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    triton_key._known.clear()
    yield tmp_path
    triton_key._known.clear()


def test_the_key_is_tritons_own_and_kept_on_disk(cache_home):
    from triton.runtime.cache import triton_key as real
    assert triton_key.value() == real()
    saved = json.loads((cache_home / "tritonjudge" / "triton-key.json").read_text())
    assert saved == {"stamp": triton_key.stamp(), "key": real()}


def test_a_stored_key_is_used_only_under_its_stamp(cache_home, monkeypatch):
    store = cache_home / "tritonjudge" / "triton-key.json"
    store.parent.mkdir(parents=True)
    store.write_text(json.dumps({"stamp": triton_key.stamp(), "key": "from-disk"}))
    assert triton_key.value() == "from-disk"
    triton_key._known.clear()
    store.write_text(json.dumps({"stamp": "another installation", "key": "stale"}))
    from triton.runtime.cache import triton_key as real
    assert triton_key.value() == real()


def test_only_gpu_workers_get_it(cache_home):
    assert triton_key.worker_env("cpu") == {}
    assert triton_key.worker_env("cuda") == {triton_key.ENV: triton_key.value()}


def _in_worker(env_value: str | None) -> dict:
    """What judge.worker.tritonkey.install does in a fresh process."""
    code = ("import json, os, triton; from judge.worker import tritonkey; ok = tritonkey.install(); "
            "from triton.runtime import cache, autotuner; "
            "print(json.dumps({'installed': ok, 'left': os.environ.get('JUDGE_TRITON_KEY'), "
            "'cache': cache.triton_key() if ok else None, 'autotuner': autotuner.triton_key() if ok else None}))")
    env = {k: v for k, v in os.environ.items() if k != triton_key.ENV}
    if env_value is not None:
        env[triton_key.ENV] = env_value
    env["PYTHONPATH"] = ROOT
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_the_worker_uses_the_judges_key_and_drops_the_variable():
    import triton
    key = triton.__version__ + "-judge-computed"
    assert _in_worker(key) == {"installed": True, "left": None, "cache": key, "autotuner": key}


def test_the_worker_ignores_a_key_of_another_triton_or_none():
    assert _in_worker("0.0.0-other")["installed"] is False
    assert _in_worker(None)["installed"] is False
