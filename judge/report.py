"""Rendering a grading result: a rich table for people, JSON for machines."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .export.text import visible
from .grader import CaseResult, GradeResult
from .verdicts import Verdict

_STATUS_STYLE = {"skipped": "dim", "not_run": "dim"}


def _status_text(status: str) -> Text:
    if status in _STATUS_STYLE:
        return Text(status.replace("_", " "), style=_STATUS_STYLE[status])
    v = Verdict(status)
    return Text(v.short, style=v.colour)


def _num(x: float | None, fmt: str = ".2e") -> str:
    return "–" if x is None else format(x, fmt)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _note(case: CaseResult) -> str:
    if case.status == "skipped":
        return "GPU only"
    if case.status == "accepted":
        return ""
    if case.status == "not_run":
        return "not run"
    return _shorten(visible(case.message), 60)


def case_table(result: GradeResult, notes: bool = True) -> Table:
    table = Table(title=f"{result.challenge} · policy {result.policy} · seed {result.seed}",
                  title_justify="left", expand=False, pad_edge=False, box=box.SIMPLE_HEAD)
    table.add_column("case", no_wrap=True, max_width=24, overflow="ellipsis")
    # The challenge's dimension names, in the order the shapes list them.
    dims = "×".join(result.cases[0].dims) if result.cases and result.cases[0].dims else "size"
    table.add_column(dims, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    table.add_column("max err", justify="right", no_wrap=True)
    table.add_column("err/bound", justify="right", no_wrap=True)
    table.add_column("bad", justify="right", no_wrap=True)
    if notes:
        table.add_column("note", overflow="fold")
    for case in result.cases:
        ratio = None if case.bound_ratio is None else max(case.bound_ratio, case.norm_ratio or 0.0)
        row = [case.name, case.shape, _status_text(case.status), _num(case.max_abs_err, ".1e"),
               _num(ratio, ".3g"), "–" if case.mismatches is None else str(case.mismatches)]
        table.add_row(*row, *([_note(case)] if notes else []))
    return table


def _failure_details(console: Console, case: CaseResult) -> None:
    console.print(f"[bold]First failing case: {case.name}[/] ({case.shape}) — {case.status}")
    console.print(f"  {visible(case.message)}", markup=False, highlight=False)
    if case.first_mismatches:
        console.print("  first mismatches (trial, index, got, expected):")
        for m in case.first_mismatches:
            console.print(f"    {m.trial}  {m.index}  {m.got!r}  {m.expected!r}", markup=False, highlight=False)
    if case.diagnosis:
        console.print(f"  [bold yellow]diagnosis:[/] {case.diagnosis}", highlight=False)


def render(result: GradeResult, console: Console | None = None) -> None:
    console = console or Console()
    console.print(f"[bold]{result.submission}[/] on {result.device_name}")
    console.print(f"[dim]sandbox: {result.sandbox}[/]")
    # Narrow terminals get the table without notes; the failing case's
    # details follow it in full either way.
    console.print(case_table(result, notes=console.width >= 110))
    failing = next((c for c in result.cases if c.status not in ("accepted", "skipped", "not_run")), None)
    if failing is not None:
        _failure_details(console, failing)
    console.print("[dim]err/bound: the worst error over the policy's bound (≤ 1 passes); "
                  "bad: elements out of bound. Verdicts: "
                  + " ".join(f"{v.short}={v.value}" for v in Verdict) + "[/]")
    skipped = sum(c.status == "skipped" for c in result.cases)
    if skipped:
        console.print(f"[dim]{skipped} case(s) skipped on CPU (too large for the interpreter); "
                      "grade on a GPU for the full set.[/]")
    for label, text in (("stdout", result.stdout), ("stderr", result.stderr)):
        if text.strip():
            console.print(f"[dim]submission {label} (shortened):[/]")
            # The file's own bytes: its escape sequences had cleared the table and drawn
            # a verdict of their own on the grader's terminal.
            console.print(_shorten_block(visible(text)), markup=False, highlight=False, style="dim")
    v = result.verdict
    line = Text("Verdict: ", style="bold")
    line.append(f"{v.value.upper().replace('_', ' ')}", style=f"bold {v.colour}")
    if result.message:
        line.append(f" — {visible(result.message)}")
    console.print(line)
    if result.timing:
        t = result.timing
        rates = []
        if t.tflops is not None:
            rates.append(f"[bold]{t.tflops:.1f} TFLOPS[/]")
        if t.gbps is not None:
            peak = f" ({t.percent_of_bandwidth:.0f}% of the GPU's bandwidth)" if t.percent_of_bandwidth else ""
            rates.append(f"[bold]{t.gbps:.0f} GB/s[/]{peak}")
        console.print(f"Latency: [bold]{t.median_ms:.3f} ms[/] median of {t.reps} calls over {t.sets} input sets "
                      f"(min {t.min_ms:.3f}, mean {t.mean_ms:.3f}"
                      + (f", median ±{t.median_ci_ms:.3f} at 95%" if t.median_ci_ms is not None else "")
                      + ")"
                      + "".join(f" · {r}" for r in rates))
        gpu = t.gpu_after
        if gpu.get("available"):
            console.print(f"[dim]GPU {gpu['name']}, driver {gpu['driver']}: SM {gpu['sm_clock_mhz']} MHz "
                          f"(max {gpu['max_sm_clock_mhz']}), memory {gpu['memory_clock_mhz']} MHz, "
                          f"{gpu['temperature_c']} °C, {gpu['power_w']:.0f} W[/]")
        if t.throttle_warning:
            console.print(f"[bold yellow]warning:[/] {t.throttle_warning}")
    elif result.timing_note:
        console.print(f"[dim]{result.timing_note}[/]")
    if result.performance:
        p = result.performance
        parts = [f"{p.percent_of[k]:.0f}% of {k} ({p.baselines_ms[k]:.3f} ms)" for k in sorted(p.baselines_ms)]
        console.print(f"Against baselines ({p.baselines_source}): " + ", ".join(parts))
    s = result.score
    perf = "–" if s.performance is None else f"{s.performance:.1f}"
    console.print(f"Score: [bold]{s.total:.1f}[/] / {s.maximum:g} (correctness {s.correctness:g}, "
                  f"performance {perf}) — {s.note}")
    phases = ", ".join(f"{name.replace('_', ' ')} {sec:.1f} s" for name, sec in result.phase_seconds.items())
    console.print(f"[dim]graded in {result.duration_s:.1f} s" + (f" ({phases})" if phases else "") + "[/]")
    shared = sum(result.phase_seconds.get(name, 0.0) for name in ("gpu_wait_cases", "gpu_wait_timing", "gpu_paused"))
    if shared >= 1:
        console.print(f"[dim]the GPU was shared: {shared:.1f} s of it went to waiting for other gradings or "
                      "stepping aside for their timings (--gpu-lock)[/]")


def render_check(outcome, console: Console | None = None) -> None:
    """`judge check`: the prechecks, the case table, then LeetGPU's answer and ours."""
    console = console or Console()
    result = outcome.result
    console.print(f"[bold]{result.submission}[/] — {result.challenge}, graded on {result.device_name}")
    for f in outcome.prechecks:
        colour = "red" if f["blocking"] else "yellow"
        where = f" (line {f['line']})" if f["line"] else ""
        console.print(f"[{colour}]rule[/] {f['problem']}{where} → {f['fix']}", highlight=False)
    console.print(case_table(result, notes=console.width >= 110))
    leet = outcome.leetgpu
    colour = "green" if leet.verdict == "accepted" else "red"
    console.print(f"[bold {colour}]{leet.text}[/]", highlight=False)
    ours = outcome.ours
    if ours.differs:
        console.print(f"[bold yellow]but[/] {ours.text}", highlight=False)
    else:
        console.print(f"[dim]{ours.text}[/]", highlight=False)
    if outcome.estimate:
        console.print(f"[dim]{outcome.estimate}[/]", highlight=False)


def _shorten_block(text: str, lines: int = 20, width: int = 200) -> str:
    rows = text.splitlines()
    cut = [r if len(r) <= width else r[:width] + "…" for r in rows[:lines]]
    if len(rows) > lines:
        cut.append(f"… [{len(rows) - lines} more lines]")
    return "\n".join(cut)


def to_json(result: GradeResult) -> str:
    return result.model_dump_json(indent=2)
