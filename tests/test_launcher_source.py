"""Triton's launcher sources (judge.worker.launcher_source): the hook's copy
of the installed generator writes the same text as Triton for honest
signatures, keeps doing so whatever the file does to the driver's tables,
and approves only what it wrote. The worker's side is graded through
fixtures (tests/fixtures/launcher_*.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from judge.worker import launcher_source
from tests.helpers import ROOT

driver = pytest.importorskip("triton.backends.nvidia.driver")

SIGNATURES = [
    ({}, {0: "*fp32", 1: "*fp32", 2: "*fp32", 3: "i32", 4: "constexpr"}, None),
    ({}, {0: "*fp16", 1: "fp32", 2: "i64", 3: "bf16", 4: "fp64", 5: "u8", 6: "i1"}, None),
    ({}, {0: ("*fp32", "*fp32"), 1: "i32"}, None),
]


@pytest.mark.parametrize("constants,signature,meta", SIGNATURES)
def test_the_hooks_copy_writes_what_triton_writes(constants, signature, meta):
    write, written = launcher_source.hook_side()
    text = write((constants, signature, meta), {})
    assert text == launcher_source.fenced(driver.make_launcher(constants, signature, meta))
    assert written(text)


@pytest.mark.parametrize("constants,signature,meta", SIGNATURES)
def test_every_launcher_tells_the_hook_its_stream_right_before_it_launches(constants, signature, meta):
    """The fence (judge.worker.launches.stream_fence) is asked from the C
    text, after the file's launch hook, the last thing before the launch:
    a kernel launched with stream= on a side stream, or by the launcher
    object called directly, ran in the timer's head start otherwise."""
    write, _ = launcher_source.hook_side()
    text = write((constants, signature, meta), {})
    launch = text.index("static PyObject* launch(")
    fence = text.index('PySys_Audit("tritonjudge.kernel_launch"', launch)
    assert text.index("launch_enter_hook != Py_None", launch) < fence < text.index("  _launch(gridX", launch)
    assert text.count("tritonjudge.kernel_launch") == 1


def test_a_text_without_the_launch_is_refused():
    with pytest.raises(RuntimeError, match="fence"):
        launcher_source.fenced("static PyObject* launch(PyObject* self, PyObject* args) { return NULL; }")
    with pytest.raises(RuntimeError):
        launcher_source.fenced(None)


def test_only_texts_it_wrote_are_approved():
    write, written = launcher_source.hook_side()
    text = write(SIGNATURES[0], {})
    anchor = text.index("_launch(gridX")
    assert not written(text[:anchor] + "  cuMemcpyDtoD(0, 0, 4);\n" + text[anchor:])
    assert not written(None) and not written(b"bytes")
    with open(f"{driver.dirname}/driver.c", encoding="utf-8") as fh:
        assert written(fh.read())  # the driver's own C helpers, as installed


def test_the_copy_ignores_tables_written_after_it_was_made(monkeypatch):
    write, _ = launcher_source.hook_side()
    honest = write(SIGNATURES[1], {})
    monkeypatch.setitem(driver.FLOAT_PACK_FUNCTION, "fp32", "pack_fp32(_arg1); exit(0); (void)")
    monkeypatch.setattr(driver, "ty_to_cpp", lambda ty: "int x; exit(0); int")
    assert write(SIGNATURES[1], {}) == honest


class _Sly(str):
    def __eq__(self, other):  # pragma: no cover - never called: plain() copies by exact type only
        raise AssertionError("the file's method ran in the hook")

    __hash__ = str.__hash__


def test_a_signature_of_the_files_objects_gets_no_text():
    write, _ = launcher_source.hook_side()
    assert write(({}, {0: _Sly("*fp32")}, None), {}) is None  # None in its place: the generator refuses it
    plain = launcher_source.plainer()
    assert plain({0: ("*fp32", ["i32", None, 1.5, True])}) == {0: ("*fp32", ["i32", None, 1.5, True])}
    assert plain([_Sly("x")]) is launcher_source.NOT_PLAIN
    assert plain({_Sly("k"): 1}) is launcher_source.NOT_PLAIN


def test_install_makes_the_tables_read_only_and_asks_for_the_text():
    """In a process of its own: install changes the driver module."""
    code = (
        "from judge.worker import launcher_source\n"
        "from triton.backends.nvidia import driver\n"
        "before = driver.make_launcher({}, {0: '*fp32', 1: 'fp32'}, None)\n"
        "launcher_source.install()\n"
        "assert driver.make_launcher is launcher_source.source\n"
        "try:\n"
        "    driver.FLOAT_PACK_FUNCTION['fp32'] = 'x'\n"
        "    raise SystemExit('the table took a write')\n"
        "except TypeError:\n"
        "    pass\n"
        "# no hook: the installed generator's text, fenced\n"
        "assert driver.make_launcher({}, {0: '*fp32', 1: 'fp32'}, None) == launcher_source.fenced(before)\n"
        "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_the_seal_covers_the_generators_names():
    names = {name for owner, name in launcher_source.seal_pairs()}
    assert {"make_launcher", "ty_to_cpp", "FLOAT_STORAGE_TYPE", "FLOAT_PACK_FUNCTION"} <= names
    assert "PyCUtensorMap" not in names  # Triton sets it itself when it builds its helpers


def test_constants_holding_objects_give_triton_s_own_text():
    """A kernel's constants hold its constexpr arguments: a @jit function
    passed as one is not plain data. The generator never reads it, and the
    hook's text must still be Triton's (an honest launch was refused on the
    H100 when the object made the copy give none)."""
    write, written = launcher_source.hook_side()
    signature = {0: "*fp32", 1: "*fp32", 2: "i32", 3: "constexpr", 4: "constexpr"}
    constants = {(3,): object(), (4,): 1024}
    text = write((constants, signature, None), {})
    assert text is not None and written(text)
    assert text == launcher_source.fenced(driver.make_launcher(constants, signature, None))


def test_a_namedtuple_in_the_signature_is_read_as_a_tuple():
    """A NamedTuple argument's signature entry (a @jit function and a
    pointer): the hook's text is Triton's (refused on the H100 when the
    NamedTuple made the copy give none)."""
    import collections
    Pair = collections.namedtuple("Pair", "fn ptr")
    write, written = launcher_source.hook_side()
    signature = {0: Pair("constexpr", "*fp32"), 1: "*fp32", 2: "i32"}
    constants = {(0, 0): object()}
    text = write((constants, signature, None), {})
    assert text is not None and written(text)
    assert text == launcher_source.fenced(driver.make_launcher(constants, signature, None))
