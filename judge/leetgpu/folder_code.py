"""A folder's code (its challenge.py and the clone's core/ package) as text,
and the instance of its `Challenge` class made from that text.

Runs on both sides of the trust boundary: the trusted judge loads the folder
with it, and the untrusted worker runs it (through judge.leetgpu.generation)
on the bundle that comes inside a case's plan."""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import json
import sys
import threading
from typing import Any

# One re-entrant lock for this package's per-process caches: loading a
# folder (judge.leetgpu.loading) makes its instance while holding it.
lock = threading.RLock()


def bundle(folder: Path) -> dict:
    """The code a folder's challenge needs: its challenge.py and the clone's
    core/ package, as text (it goes to the worker inside the plan)."""
    core = folder.parent.parent / "core"
    sources = {"core": ("core/__init__.py", "")}
    for path in sorted(core.glob("*.py")):
        name = "core" if path.stem == "__init__" else f"core.{path.stem}"
        sources[name] = (str(path), path.read_text(encoding="utf-8"))
    path = folder / "challenge.py"
    data = {"challenge": (str(path), path.read_text(encoding="utf-8")), "core": sources}
    data["key"] = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    return data


class _CoreFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves `core` and `core.*` from a bundle while a challenge.py loads."""

    def __init__(self, sources: dict[str, list]):
        self.sources = sources

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.sources:
            return importlib.util.spec_from_loader(fullname, self, is_package=fullname == "core")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        filename, text = self.sources[module.__name__]
        module.__file__ = filename
        exec(_compile(text, filename), module.__dict__)


def _compile(text: str, filename: str):
    # optimize=1 drops the asserts: LeetGPU's code asserts CUDA tensors.
    return compile(text, filename, "exec", optimize=1, dont_inherit=True)


_instances: dict[str, Any] = {}


def instance(code: dict):
    """An instance of the bundle's `Challenge` class (one per process and bundle)."""
    with lock:
        if code["key"] in _instances:
            return _instances[code["key"]]
        saved = {n: m for n, m in sys.modules.items() if n == "core" or n.startswith("core.")}
        for name in saved:
            del sys.modules[name]
        finder = _CoreFinder(code["core"])
        sys.meta_path.insert(0, finder)
        try:
            filename, text = code["challenge"]
            module = type(sys)(f"_leetgpu_{code['key']}")
            module.__file__ = filename
            exec(_compile(text, filename), module.__dict__)
            cls = getattr(module, "Challenge", None)
            if cls is None:
                raise LookupError("challenge.py defines no class Challenge")
            made = cls()
        finally:
            sys.meta_path.remove(finder)
            for name in [n for n in sys.modules if n == "core" or n.startswith("core.")]:
                del sys.modules[name]
            sys.modules.update(saved)
        _instances[code["key"]] = made
        return made
