"""Native code in the worker (judge.worker.native_code): Triton's C builds
go through the judge's stand-in, which compiles from a pipe into a memfd and
loads only bytes it built or the judge's seed holds; extension modules load
from the install only. The audit hook's side is graded through fixtures
(tests/fixtures/native_*.py, tests/fixtures/gpu/native_launcher_planted_in_cache.py)."""

from __future__ import annotations

import os
import shutil

import pytest

from judge import warm_cache
from judge.worker import native_code

SOURCE = """
#include <Python.h>
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(%d); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "%s", NULL, -1, methods};
PyMODINIT_FUNC PyInit_%s(void) { return PyModule_Create(&module); }
"""

needs_cc = pytest.mark.skipif(native_code.BUILD_K[0]["cc"] is None or shutil.which("gcc") is None,
                              reason="no C compiler")


def _source(name: str, value: int) -> str:
    return SOURCE % (value, name, name)


def test_the_seed_variable_is_the_judges():
    assert native_code.SEED_ENV == warm_cache.NATIVE_SEED_ENV


@needs_cc
def test_a_build_loads_from_a_sealed_memfd_and_is_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    module = native_code.compile_module(_source("judge_probe_one", 41), "judge_probe_one")
    assert module.answer() == 41
    assert module.__file__.startswith("/proc/self/fd/")
    fd = int(module.__file__.rsplit("/", 1)[1])
    assert native_code.sealed_digest(module.__file__) is not None  # sealed: its bytes can no longer change
    import fcntl
    assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & native_code.SEALS == native_code.SEALS


@needs_cc
def test_bytes_planted_in_the_cache_are_never_loaded(tmp_path, monkeypatch):
    """A file may write the Triton cache: a cached shared object whose bytes
    the judge does not trust is built again, not loaded."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    src = _source("judge_probe_two", 7)
    native_code.compile_module(src, "judge_probe_two")
    planted = [p for p in tmp_path.rglob("judge_probe_two*.so")]
    assert planted, "the build leaves its bytes in the cache for the next one"
    other = native_code.compile_module(_source("judge_probe_three", 99), "judge_probe_three")
    assert other.answer() == 99
    built = next(tmp_path.rglob("judge_probe_three*.so")).read_bytes()
    planted[0].write_bytes(built)  # another module's real bytes, under this one's cache entry
    trusted_before = set(native_code._early)
    native_code._early.discard(native_code.hashlib.sha256(built).hexdigest())
    try:
        again = native_code.compile_module(src, "judge_probe_two")
    finally:
        native_code._early.update(trusted_before)
    assert again.answer() == 7  # built again from its source, not the planted bytes


def test_extension_modules_load_from_the_install_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # a worker's home is its scratch folder
    installed, writable = native_code.roots(cwd=str(tmp_path))
    import _json  # an extension module of Python's own
    if getattr(_json, "__file__", None):
        assert native_code.allowed_path(_json.__file__, installed, writable)
    assert not native_code.allowed_path(str(tmp_path / "planted.so"), installed, writable)
    assert not native_code.allowed_path("/proc/self/fd/3", installed, writable)
    assert not native_code.allowed_path("/dev/shm/planted.so", installed, writable)
    assert not native_code.allowed_path("/tmp/planted.so", installed, writable)
    link = tmp_path / "looks_installed.so"  # a link in the worker's folder: it may point elsewhere by the load
    link.symlink_to(_json.__file__ if getattr(_json, "__file__", None) else "/usr/lib/missing.so")
    assert not native_code.allowed_path(str(link), installed, writable)
    assert not native_code.program_allowed(str(tmp_path / "fake_ptxas"), installed, writable)
    assert native_code.program_allowed("gcc", installed, writable)
    import torch
    assert native_code.allowed_path(torch._C.__file__, installed, writable)  # wherever the install lies, /tmp too


def test_an_unsealed_memfd_has_no_digest():
    fd = os.memfd_create("judge-probe", os.MFD_ALLOW_SEALING)
    try:
        os.write(fd, b"bytes")
        assert native_code.sealed_digest(f"/proc/self/fd/{fd}") is None
    finally:
        os.close(fd)
