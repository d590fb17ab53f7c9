"""What a batch shows while it runs: a rich live panel (done / total,
verdict counts so far, ETA, what each lane is grading) and a summary table,
or with --json one JSON object per finished submission (JSON lines). When
stderr is no terminal (`judge batch ... > run.log 2>&1`), plain lines
instead of the panel, which showed nothing there until the end."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.text import Text
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
    TimeRemainingColumn
from rich.table import Table

from .discover import printable

VERDICT_STYLE = {"accepted": "green", "wrong_answer": "red", "missing": "dim", "internal_error": "magenta"}


class Display:
    """The interface run.py talks to; the quiet base class shows nothing."""

    def __init__(self, total: int, lanes: list[str]):
        self.total = total
        self.counts: Counter = Counter()
        self.lanes = {name: "" for name in lanes}
        self.started = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def note(self, line: str) -> None:
        print(printable_lines(line), file=sys.stderr)  # (a student's file name may be in it)

    def start(self, lane: str, sid: str) -> None:
        self.lanes[lane] = sid

    def done(self, lane: str, sid: str, verdict: str, line: dict) -> None:
        self.lanes[lane] = ""
        self.counts[verdict] += 1


class JsonLines(Display):
    """One JSON object per finished submission on stdout; notes on stderr."""

    def done(self, lane: str, sid: str, verdict: str, line: dict) -> None:
        super().done(lane, sid, verdict, line)
        from .store import clean  # strict JSON: no NaN or lone surrogates (what the store keeps, too)
        sys.stdout.write(json.dumps(clean(line), allow_nan=False) + "\n")
        sys.stdout.flush()


class PlainLines(Display):
    """Progress for a log file: a line per finished submission ("[3/20]
    alice: accepted (12.3 s)"), and one every `heartbeat_s` while none
    finishes, saying what each lane is grading."""

    HEARTBEAT_S = 30.0

    def __init__(self, total: int, lanes: list[str], stream=None, heartbeat_s: float = HEARTBEAT_S):
        super().__init__(total, lanes)
        self.stream = stream
        self.heartbeat_s = heartbeat_s
        self.lock = threading.Lock()  # the heartbeat thread writes too
        self.last = time.monotonic()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def _write(self, line: str) -> None:
        stream = self.stream or sys.stderr  # looked up late: pytest and click swap sys.stderr
        with self.lock:
            stream.write(line + "\n")
            stream.flush()  # a log file is block-buffered: each line now, not at the end
            self.last = time.monotonic()

    def _done_count(self) -> str:
        return f"[{sum(self.counts.values())}/{self.total}]"

    def __enter__(self):
        self._write(f"grading {self.total} submission(s) in {len(self.lanes)} lane(s)")
        self.thread = threading.Thread(target=self._beat, name="batch-progress", daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        counts = ", ".join(f"{v} {n}" for v, n in sorted(self.counts.items())) or "no result"
        ended = "done" if exc[0] is None else "stopped"  # interrupted: what was recorded stays
        self._write(f"{self._done_count()} {ended} in {time.monotonic() - self.started:.0f} s: {counts}")
        return False

    def _beat(self) -> None:
        while not self.stopped.wait(max(0.05, self.last + self.heartbeat_s - time.monotonic())):
            if time.monotonic() - self.last >= self.heartbeat_s:
                self._write(self._waiting())

    def _waiting(self) -> str:
        busy = [f"{printable(sid)} ({lane})" for lane, sid in self.lanes.items() if sid]
        return (f"{self._done_count()} {time.monotonic() - self.started:.0f} s elapsed; "
                + (f"grading {', '.join(busy)}" if busy else "waiting for the lanes"))

    def note(self, line: str) -> None:
        self._write(printable_lines(line))

    def done(self, lane: str, sid: str, verdict: str, line: dict) -> None:
        super().done(lane, sid, verdict, line)
        wall = line.get("wall_s")
        took = f" ({wall:.1f} s)" if isinstance(wall, (int, float)) else ""
        self._write(f"{self._done_count()} {printable(sid)}: {printable(verdict)}{took}")


def printable_lines(text: str) -> str:
    """A note as it may be written to a log: each line printable (a file
    name in it is the student's)."""
    return "\n".join(printable(part) for part in str(text).split("\n"))


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


class LivePanel(Display):
    """The live panel on a terminal; on anything else (a log file, a pipe)
    LivePanel(...) gives PlainLines, since run.py and cli.py build the
    display from this class."""

    def __new__(cls, total: int, lanes: list[str], console: Console | None = None):
        if console is None and not _stderr_is_terminal():
            return PlainLines(total, lanes)
        return super().__new__(cls)

    def __init__(self, total: int, lanes: list[str], console: Console | None = None):
        super().__init__(total, lanes)
        self.console = console or Console(stderr=True)
        self.progress = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                 console=self.console)
        self.task = self.progress.add_task("batch", total=total)
        self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)

    def _render(self):
        counts = "  ".join(f"[{VERDICT_STYLE.get(v, 'yellow')}]{v}[/] {n}" for v, n in sorted(self.counts.items()))
        lanes = Table.grid(padding=(0, 2))
        for name, sid in self.lanes.items():
            lanes.add_row(Text.from_markup(f"[bold]{escape(name)}[/]"),
                          Text(printable(sid)) if sid else Text.from_markup("[dim]idle[/]"))
        return Group(self.progress, Text.from_markup(counts or "[dim]no result yet[/]"), lanes)

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc):
        self.live.update(self._render())
        return self.live.__exit__(*exc)

    def note(self, line: str) -> None:
        self.console.print(printable_lines(line), markup=False, highlight=False)

    def start(self, lane: str, sid: str) -> None:
        super().start(lane, sid)
        self.live.update(self._render())

    def done(self, lane: str, sid: str, verdict: str, line: dict) -> None:
        super().done(lane, sid, verdict, line)
        self.progress.advance(self.task)
        self.live.update(self._render())


def summary_table(rows: list[dict]) -> Table:
    table = Table(title="batch results", show_lines=False)
    for col in ("id", "verdict", "score", "latency ms", "cases", "first failing case"):
        table.add_column(col, overflow="fold")
    for row in rows:
        verdict = row.get("verdict") or row.get("status") or ""
        score = f"{row['score']:.1f}" if row.get("score") is not None else ""
        latency = f"{row['latency_ms']:.3f}" if row.get("latency_ms") is not None else ""
        cases = f"{row['cases_passed']}/{row['cases_run']}" if row.get("cases_run") is not None else ""
        # Ids come from file names: shown as text, never as markup or terminal control.
        table.add_row(escape(printable(str(row["id"]))), f"[{VERDICT_STYLE.get(verdict, 'yellow')}]{escape(verdict)}[/]",
                      score, latency, cases, escape(printable(str(row.get("first_failing_case") or ""))))
    return table
