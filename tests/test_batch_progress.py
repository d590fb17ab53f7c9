"""The batch's progress when stderr is no terminal (`judge batch ... >
run.log 2>&1`): plain lines as submissions finish and while they run,
where the live panel had shown nothing until the end."""

from __future__ import annotations

import io
import sys
import time

from judge.batch import progress
from judge.batch.progress import LivePanel, PlainLines


def test_live_panel_gives_plain_lines_off_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # no TTY, as a log file
    assert isinstance(LivePanel(3, ["gpu0"]), PlainLines)
    monkeypatch.setattr(progress, "_stderr_is_terminal", lambda: True)
    assert type(LivePanel(3, ["gpu0"])) is LivePanel


def test_a_line_per_finished_submission():
    out = io.StringIO()
    with PlainLines(20, ["gpu0", "gpu1"], stream=out) as display:
        display.start("gpu0", "alice")
        display.done("gpu0", "alice", "accepted", {"wall_s": 12.34})
        display.start("gpu1", "bob\x1b[2J")  # a name is the student's: never terminal control
        display.done("gpu1", "bob\x1b[2J", "wrong_answer", {"wall_s": None})
        display.note("warning: something\nsecond line")
    lines = out.getvalue().splitlines()
    assert lines[0] == "grading 20 submission(s) in 2 lane(s)"
    assert "[1/20] alice: accepted (12.3 s)" in lines and "[2/20] bob\ufffd[2J: wrong_answer" in lines
    assert "warning: something" in lines and "second line" in lines
    assert lines[-1].startswith("[2/20] done in ") and lines[-1].endswith("accepted 1, wrong_answer 1")
    assert "\x1b" not in out.getvalue()


def test_a_line_while_waiting():
    out = io.StringIO()
    with PlainLines(2, ["gpu0"], stream=out, heartbeat_s=0.05) as display:
        display.start("gpu0", "alice")
        time.sleep(0.4)
    waiting = [x for x in out.getvalue().splitlines() if "elapsed" in x]
    assert waiting and waiting[0].startswith("[0/2] ") and waiting[0].endswith("grading alice (gpu0)")
    assert len(waiting) < 12  # one per heartbeat, not a busy loop


def test_an_interrupted_batch_says_so():
    out = io.StringIO()
    try:
        with PlainLines(5, ["cpu0"], stream=out) as display:
            display.done("cpu0", "alice", "accepted", {"wall_s": 1.0})
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert out.getvalue().splitlines()[-1].startswith("[1/5] stopped in ")
