"""What a batch shows while it runs: a rich live panel (done / total,
verdict counts so far, ETA, what each lane is grading) and a summary table,
or with --json one JSON object per finished submission (JSON lines)."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
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
        print(line, file=sys.stderr)

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


class LivePanel(Display):
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
            lanes.add_row(f"[bold]{escape(name)}[/]", escape(printable(sid)) if sid else "[dim]idle[/]")
        return Group(self.progress, counts or "[dim]no result yet[/]", lanes)

    def __enter__(self):
        self.live.__enter__()
        return self

    def __exit__(self, *exc):
        self.live.update(self._render())
        return self.live.__exit__(*exc)

    def note(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False)

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
