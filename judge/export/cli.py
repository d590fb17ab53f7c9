"""`judge export` (a results folder to one file per format) and `judge
gradescope` (the body of Gradescope's run_autograder)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from .write import FORMATS


@click.command("export")
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), required=True,
              help="csv: gradebook; gradescope: results.json per id; junit: xunit2 XML; html: the class "
                   "report; json: JSON lines; similarity: similar pairs CSV.")
@click.option("--to", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Output file, or - for stdout (default: FOLDER/" + ", FOLDER/".join(sorted(FORMATS.values()))
                   + ").")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="Similarity at or above which a pair is reported (default 0.5).")
def export_command(folder, fmt, to, threshold):
    """Write one export of the results store in FOLDER (made by judge batch)."""
    from .write import export, export_text
    if to is not None and str(to) == "-":
        # Every format is one file, so each can go to stdout (a file named "-" was written before).
        text = export_text(folder, fmt, threshold)
        sys.stdout.flush()
        stream = getattr(sys.stdout, "buffer", None)  # UTF-8, as the files are, whatever the locale
        if stream is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            stream.write(text.encode("utf-8"))
            stream.flush()
        return
    target = export(folder, fmt, to, threshold)
    click.echo(str(target))


@click.command("gradescope")
@click.option("--challenge", "challenge_name", default=None,
              help="Default: matrix_multiplication (or the challenge whose folder holds the file).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None)
@click.option("--submission", "submission_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/autograder/submission"), show_default=True)
@click.option("--results", "results_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/autograder/results"), show_default=True)
@click.option("--policy", default=None)
@click.option("--seed", type=int, default=None)
@click.option("--workers", type=click.IntRange(1, 16), default=None)
@click.option("--visibility", type=click.Choice(["visible", "hidden", "after_due_date", "after_published"]),
              default="visible", show_default=True, help="Of the tests and the output.")
def gradescope_command(challenge_name, device, submission_dir, results_dir, policy, seed, workers, visibility):
    """Grade the one submission in Gradescope's folder and write
    results.json (the body of run_autograder; see deploy/gradescope/).

    A results.json is written whatever happens (no .py file, a usage error):
    Gradescope shows its output to the student."""
    from .. import challenge as challenges
    from ..batch.discover import _pick
    from ..errors import UsageError
    from ..grader import GradeOptions, grade, scoring_for
    from .gradescope import results_json

    started = time.monotonic()
    results_dir.mkdir(parents=True, exist_ok=True)
    target = results_dir / "results.json"
    problems: list[str] = []
    try:
        path = _pick(submission_dir, problems) if submission_dir.is_dir() else None
        if path is None:
            raise UsageError("; ".join(problems) or f"no submission folder {submission_dir}")
        name = challenge_name or challenges.for_file(path) or "matrix_multiplication"
        challenge = challenges.load(name)
        scale = scoring_for(challenge)
        result = grade(path, GradeOptions(challenge=name, device=device, policy=policy, seed=seed, workers=workers))
        doc = results_json(result.model_dump(mode="json"), scale.correctness_points, scale.performance_points,
                           time.monotonic() - started, visibility,
                           case_list=[(c.name, challenge.shape_label(c)) for c in challenge.all_cases()])
        if problems:
            doc["output"] += "\n" + "\n".join(problems)
        status = 0
    except UsageError as exc:
        doc = {"score": 0.0, "execution_time": time.monotonic() - started, "visibility": visibility,
               "output": f"The autograder could not grade this submission: {exc}", "tests": []}
        status = 2
    target.write_text(json.dumps(doc, indent=1))
    click.echo(f"{doc.get('output', '').splitlines()[0] if doc.get('output') else ''}\nscore {doc['score']:.1f}; "
               f"wrote {target}")
    sys.exit(status)
