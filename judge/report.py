"""Rendering a grading result: a rich table for people, JSON for machines."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .grader import CaseResult, GradeResult
from .verdicts import Verdict

_STATUS_STYLE = {"skipped": "dim", "not_run": "dim"}


def _status_text(status: str) -> Text:
    if status in _STATUS_STYLE:
        return Text(status.replace("_", " "), style=_STATUS_STYLE[status])
    v = Verdict(status)
    return Text(f"{v.short} {v.value}", style=v.colour)


def _num(x: float | None, fmt: str = ".2e") -> str:
    return "–" if x is None else format(x, fmt)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def case_table(result: GradeResult) -> Table:
    table = Table(title=f"{result.challenge} · policy {result.policy} · seed {result.seed}",
                  title_justify="left", expand=False)
    table.add_column("case")
    table.add_column("shape (M×N×K)", justify="right")
    table.add_column("status")
    table.add_column("max abs err", justify="right")
    table.add_column("max rel err", justify="right")
    table.add_column("vs bound", justify="right")
    table.add_column("mismatches", justify="right")
    table.add_column("note", overflow="fold", max_width=60)
    for case in result.cases:
        ratio = case.bound_ratio if case.norm_ratio is None else max(case.bound_ratio or 0, case.norm_ratio)
        note = case.message if case.status not in ("accepted",) else ""
        table.add_row(case.name, case.shape, _status_text(case.status), _num(case.max_abs_err),
                      _num(case.max_rel_err), _num(ratio, ".2f") if case.bound_ratio is not None else "–",
                      "–" if case.mismatches is None else str(case.mismatches), _shorten(note, 180))
    return table


def _failure_details(console: Console, case: CaseResult) -> None:
    console.print(f"[bold]First failing case: {case.name}[/] ({case.shape}) — {case.status}")
    console.print(f"  {case.message}", markup=False, highlight=False)
    if case.first_mismatches:
        console.print("  first mismatches (trial, index, got, expected):")
        for m in case.first_mismatches:
            console.print(f"    {m.trial}  {m.index}  {m.got!r}  {m.expected!r}", markup=False, highlight=False)
    if case.diagnosis:
        console.print(f"  [bold yellow]diagnosis:[/] {case.diagnosis}", highlight=False)


def render(result: GradeResult, console: Console | None = None) -> None:
    console = console or Console()
    console.print(f"[bold]{result.submission}[/] on {result.device_name}")
    console.print(case_table(result))
    failing = next((c for c in result.cases if c.status not in ("accepted", "skipped", "not_run")), None)
    if failing is not None:
        _failure_details(console, failing)
    skipped = sum(c.status == "skipped" for c in result.cases)
    if skipped:
        console.print(f"[dim]{skipped} case(s) skipped on CPU (too large for the interpreter); "
                      "grade on a GPU for the full set.[/]")
    for label, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text.strip():
            console.print(f"[dim]submission {label} (shortened):[/]")
            console.print(_shorten_block(text), markup=False, highlight=False, style="dim")
    v = result.verdict
    line = Text("Verdict: ", style="bold")
    line.append(f"{v.value.upper().replace('_', ' ')}", style=f"bold {v.colour}")
    line.append(f" — {result.message}" if v is not Verdict.ACCEPTED or not result.message else f" — {result.message}")
    console.print(line)
    if result.timing:
        t = result.timing
        console.print(f"Latency: [bold]{t.median_ms:.3f} ms[/] median of {t.reps} "
                      f"(min {t.min_ms:.3f}, mean {t.mean_ms:.3f}, ±{t.sem_ms:.3f} s.e.) · "
                      f"{t.tflops:.1f} TFLOPS")
    elif result.timing_note:
        console.print(f"[dim]{result.timing_note}[/]")


def _shorten_block(text: str, lines: int = 20, width: int = 200) -> str:
    rows = text.splitlines()
    cut = [r if len(r) <= width else r[:width] + "…" for r in rows[:lines]]
    if len(rows) > lines:
        cut.append(f"… [{len(rows) - lines} more lines]")
    return "\n".join(cut)


def to_json(result: GradeResult) -> str:
    return result.model_dump_json(indent=2)
