"""`judge batch`: grade a folder of submissions into a results store."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("batch")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--challenge", "challenge_name", default="matrix_multiplication", show_default=True,
              help="The challenge every file is graded against.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The results folder (its results.sqlite store is created or resumed).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None,
              help="Default: cuda when torch sees a GPU, else cpu (Triton's interpreter).")
@click.option("--gpus", default=None, help="all (default) or a list such as 0,2: one lane per GPU.")
@click.option("--lanes", type=click.IntRange(1, 64), default=1, show_default=True,
              help="CPU mode: submissions graded side by side (each grading uses --workers processes).")
@click.option("--lanes-per-gpu", type=click.IntRange(1, 8), default=None,
              help="GPU mode: submissions graded side by side on each GPU; their cases run together, each "
                   "timing alone (the others step aside). Default: one per 4 CPU cores of each GPU, 1 to "
                   "4, fewer where a case worker would be left under 4 GiB of the GPU.")
@click.option("--workers", type=click.IntRange(1, 16), default=None,
              help="Worker processes per grading, as in judge submit. Default: three quarters of the CPU "
                   "cores shared among the lanes, 1 to 4 each (one lane: as judge submit).")
@click.option("--policy", default=None, help="Tolerance policy (default: the challenge's).")
@click.option("--seed", type=click.IntRange(-(2**63), 2**63 - 1), default=None,
              help="Case data seed for the whole batch (default: one chosen at the first run and kept).")
@click.option("--scoring", "scoring_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A scoring policy file (TOML or JSON), as in judge submit.")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="CSV with id, name, email: names each row; who submitted nothing is 'missing'.")
@click.option("--regrade", multiple=True, help="Grade this id again even if recorded (repeatable), or 'all'.")
@click.option("--drift", default="auto", show_default=True,
              help="An honest file graded at the start and the end (GPU: timing drift); 'none' to skip; "
                   "auto: the challenge's first accepted example, on a GPU only.")
@click.option("--ray", default=None, metavar="auto|local|ADDRESS",
              help="Grade on a Ray cluster (one task per file, one GPU each): auto joins the running "
                   "cluster, local starts one here. Needs the ray extra.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per finished submission (JSON lines).")
def batch(folder, challenge_name, out, device, gpus, lanes, lanes_per_gpu, workers, policy, seed, scoring_file,
          roster, regrade, drift, ray, as_json):
    """Grade every submission in FOLDER, each exactly as `judge submit` does.

    FOLDER holds .py files (the id is the file name) or one folder per
    student (the id is the folder's name), or both. Results go to the
    SQLite store in --out as each finishes; rerun the same command to
    resume after an interruption: recorded results are kept, changed files
    are graded again. Then: judge export OUT --format csv|html|...

    Exit status: 0 when the batch ran (whatever the verdicts), 2 usage error
    (another batch writing to the same --out among them), 1 when interrupted
    (what was recorded stays: run the same command again)."""
    from .progress import JsonLines, LivePanel, summary_table
    from .run import BatchInterrupted, BatchOptions, run_batch
    from .store import Store

    opts = BatchOptions(folder=folder, out=out, challenge=challenge_name, device=device, gpus=gpus, lanes=lanes,
                        lanes_per_gpu=lanes_per_gpu, workers=workers, policy=policy, seed=seed,
                        scoring=scoring_file, roster=roster, regrade=list(regrade), ray=ray, drift=drift)
    try:
        outcome = run_batch(opts, JsonLines if as_json else LivePanel)
    except BatchInterrupted as exc:
        click.secho(str(exc), fg="yellow", err=True)
        sys.exit(1)
    except KeyboardInterrupt:  # outside the grading (nothing staged yet, or all recorded)
        click.secho("interrupted; what was recorded is kept: run the same command again to resume", fg="yellow",
                    err=True)
        sys.exit(1)
    if as_json:
        return
    from rich.console import Console
    from rich.markup import escape
    console = Console()
    store = Store.open_existing(out)
    try:
        rows = store.rows()
    finally:
        store.close()
    console.print(summary_table(rows))
    console.print(f"{len(outcome.discovery.entries)} submission(s) found ({outcome.discovery.layout} layout), "
                  f"{outcome.graded} graded now, {outcome.kept} kept from before, "
                  f"{len(outcome.discovery.missing)} missing, {len(outcome.discovery.skipped)} submitted but not "
                  f"gradable; store: {Path(out) / 'results.sqlite'}")
    if outcome.drift:
        d = outcome.drift
        console.print(f"drift check ({d['file']}): start {d['start']['latency_ms']} ms, end {d['end']['latency_ms']} "
                      f"ms, change {d['change_percent']} %")
    for line in outcome.discovery.problems:
        console.print(f"[yellow]{escape(line)}[/]", markup=True, highlight=False)  # file names: never markup
    sys.stdout.flush()
