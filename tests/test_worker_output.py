"""What the workers printed, joined for the result (judge.worker_output): a file's
import-time output, printed alike by every worker that imports it, is kept
once (the HTML report had shown it once per worker)."""

from __future__ import annotations

from judge.worker_output import join_capped as _join_capped


def test_what_every_worker_printed_at_import_is_kept_once():
    assert _join_capped(["HELLO\n", "HELLO\n", "HELLO\n"], 1000) == "HELLO"
    assert _join_capped(["HELLO\ncase a\n", "HELLO\ncase b\n", ""], 1000) == "HELLO\ncase a\ncase b"


def test_different_outputs_are_all_kept_and_capped():
    assert _join_capped(["x\n", "y\n"], 1000) == "x\n\ny\n"
    joined = _join_capped(["a" * 900, "b" * 900], 1000)
    assert joined.count("more characters dropped]") == 2 and len(joined) < 1200
