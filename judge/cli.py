"""The `judge` command."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from pydantic import ValidationError

from . import challenge as challenges
from .errors import JudgeError, UsageError


class _Group(click.Group):
    """Turns the judge's own usage errors into one red line and exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UsageError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(2)
        except JudgeError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            sys.exit(2)
        except KeyboardInterrupt:  # Ctrl-C: the shell's code for it, not 1 ("another verdict")
            click.secho("interrupted: nothing graded", fg="yellow", err=True)
            sys.exit(130)


# --gpu-lock, for submit and check: gradings that share a GPU take turns to time.
_GPU_LOCK_HELP = ("On a GPU, how this grading shares it with other gradings. auto (default): gradings of "
                  "yours on this machine take turns to time, and none runs cases beside another's timing "
                  "(lock files in ~/.cache/tritonjudge/gpu-locks/HOST, or $JUDGE_GPU_LOCKS); a folder: the lock "
                  "files there, for the gradings that name it; off: no lock, for a GPU that is yours alone "
                  "(gradings run side by side can then disturb each other's timing).")


def _gpu_lock_spec(value: str, device: str | None) -> str | None:
    """--gpu-lock as GradeOptions.gpu_lock (None where no GPU will be used)."""
    from . import gpu_lock
    from .slots import guess_device
    if value == "off" or (device or guess_device()) == "cpu":
        return None
    if value == "auto":
        spec = gpu_lock.default_spec()
        if spec is None:
            click.secho("warning: no folder for GPU lock files could be made; grading without "
                        "(set JUDGE_GPU_LOCKS to a folder of yours)", fg="yellow", err=True)
        return spec
    spec = gpu_lock.default_spec(Path(value).expanduser())
    if spec is None:
        raise UsageError(f"--gpu-lock {value}: not a folder of yours that can be written to")
    return spec


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tritonjudge", prog_name="judge")
@click.option("--leetgpu-repo", type=click.Path(file_okay=False, path_type=Path), envvar="JUDGE_LEETGPU_REPO",
              help="A clone of LeetGPU's public challenges repository: its challenges are listed and "
                   "graded too, as leetgpu/<name>, loaded from the clone at run time (docs/leetgpu.md). "
                   "Default: $JUDGE_LEETGPU_REPO.")
def main(leetgpu_repo):
    """Grade Triton kernel submissions against hidden test cases.

    \b
    Quick start:
      judge challenges                        list the challenges
      judge show matrix_multiplication        read the problem statement
      judge init matrix_multiplication mine.py  write a starter file
      judge submit mine.py                    grade it (GPU if present, else CPU)
      judge submit mine.py --json             one JSON object on stdout
      judge submit -h                         --seed, --device, --policy and more
      judge check mine.py --gpu t4            would LeetGPU accept it? (its terms first)
      judge batch class/ --out results/       grade a whole class (then: judge export)

    Without a GPU, kernels run under Triton's interpreter on small cases only,
    with the TF32 rounding of an Ampere-or-newer GPU emulated, and no timing.
    """
    from .hardening import protect_judge
    protect_judge()  # before any worker exists (judge.hardening)
    if leetgpu_repo is not None:
        import os
        os.environ["JUDGE_LEETGPU_REPO"] = str(leetgpu_repo.resolve())


@main.command("challenges")
def list_challenges():
    """List the available challenges."""
    names = challenges.available()
    if not names:
        raise UsageError(f"no challenges found in {challenges.challenges_dir()}")
    for name in names:
        try:
            ch = challenges.load(name)
        except UsageError as exc:  # one broken folder must not hide the others
            click.secho(f"{name:28s} cannot be loaded: {exc}", fg="red")
            continue
        dims = f"{'×'.join(ch.performance.dims)} = {ch.shape_label(ch.performance)}"
        click.echo(f"{name:28s} {ch.difficulty:7s} {ch.title}  "
                   f"({len(ch.functional)} functional cases, performance at {dims}; {ch.call_signature()})")


@main.command()
@click.argument("name")
def show(name):
    """Print the statement of challenge NAME, its signature and tolerance policies."""
    ch = challenges.load(name)
    click.echo(ch.statement().rstrip())
    click.echo(f"\n---\nsignature: {ch.call_signature()}")
    for arg in ch.signature:
        if arg.is_tensor:
            click.echo(f"  {arg.name:12s} {arg.role:6s} {arg.dtype} [{' × '.join(map(str, arg.shape))}]")
    click.echo("policies (--policy):")
    for pname, spec in ch.tolerance.policies.items():
        mark = " (default)" if pname == ch.tolerance.default_policy else ""
        click.echo(f"  {pname}{mark}: {spec.summary or ', '.join(c['kind'] for c in spec.checkers)}")
    dims = ", ".join(f"{d}={v:,}" for d, v in ch.performance.dims.items())
    click.echo(f"cases: 1 example, {len(ch.functional)} functional; performance at {dims}")


@main.command()
@click.argument("name")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
def init(name, path):
    """Write the starter file of challenge NAME to PATH (default: solution.py).

    Refuses to overwrite an existing file."""
    ch = challenges.load(name)
    path = path or Path("solution.py")
    if path.exists():
        raise UsageError(f"{path} already exists; not overwriting it")
    # Its first line names the challenge: `judge submit` then grades it as this one.
    try:
        path.write_text(f"# challenge: {ch.name}\n" + ch.starter())
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    click.echo(f"wrote {path}; grade it with: judge submit {path}  (its first line names the challenge, {ch.name})")


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--challenge", "challenge_name", default=None,
              help="Challenge to grade against (see `judge challenges`). Default: the challenge whose "
                   "folder holds PATH (its examples), else the one its '# challenge: NAME' line names "
                   "(judge init writes it), else matrix_multiplication.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--seed", type=click.IntRange(-(2**63), 2**63 - 1), help="Run seed: the same seed reproduces the same case data on this install.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]),
              help="Where kernels run. Default: cuda if available, else cpu (Triton interpreter).")
@click.option("--policy",
              help="Tolerance policy, one of the challenge's (`judge show NAME` lists them). For "
                   "matrix_multiplication: fp32 (default), float32 accuracy in any summation order; "
                   "leetgpu, LeetGPU's 1e-4 rule against torch's float32 product; tf32, also accepts TF32. "
                   "The other challenges default to leetgpu, LeetGPU's own tolerance.")
@click.option("--stop-on-wrong-answer", is_flag=True, help="Stop at the first wrong case instead of running all.")
@click.option("--no-timing", is_flag=True, help="Skip the latency measurement on GPU.")
@click.option("--scoring", "scoring_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Scoring policy (TOML or JSON): correctness_points, performance_points, floor, target, "
                   "floor_multiple, target_multiple; missing fields come from the challenge. Default: 40 + 60 "
                   "points, log scale between two baselines the challenge names (matrix_multiplication: the "
                   "reference's TF32 latency to cuBLAS TF32's).")
@click.option("--refresh-baselines", is_flag=True,
              help="Re-measure the cuBLAS and reference baselines instead of using the cached ones.")
@click.option("--workers", type=click.IntRange(1, 16), default=None,
              help="Worker processes running the small cases side by side (each Triton specialization "
                   "compiles in one of them). Default: on a GPU half the CPU cores, 4 to 8 (fewer only "
                   "with fewer cores); under the interpreter one per core, 1 to 4. Large cases and timing "
                   "always run alone.")
@click.option("--case-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds per case, compiling included (default 60).")
@click.option("--idle-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="On a GPU, seconds a case may go without a sign of progress (no answer, no kernel "
                   "compiling) before it ends in time_limit_exceeded (default 20).")
@click.option("--total-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds for the whole submission (default 900).")
@click.option("--gpu-lock", default="auto", show_default=True, metavar="auto|off|FOLDER", help=_GPU_LOCK_HELP)
def submit(path, challenge_name, as_json, seed, device, policy, stop_on_wrong_answer, no_timing,
           scoring_file, refresh_baselines, workers, case_timeout, idle_timeout, total_timeout, gpu_lock):
    """Grade the submission file PATH.

    Exit status: 0 accepted, 1 any other verdict, 2 usage error."""
    from .grader import GradeOptions, grade, scoring_for
    from .isolation import Limits
    from .scoring import load_policy

    challenge_name, defaulted = _challenge_of(path, challenge_name)
    challenge = challenges.load(challenge_name)
    if policy is not None and policy not in challenge.tolerance.policies:
        raise UsageError(f"--policy {policy!r} is not defined for {challenge_name} "
                         f"(defined: {', '.join(challenge.tolerance.policies)})")
    limits = {}
    if case_timeout is not None:
        limits["case_timeout_s"] = case_timeout
    if idle_timeout is not None:
        limits["idle_timeout_s"] = idle_timeout
    if total_timeout is not None:
        limits["total_timeout_s"] = total_timeout
    try:
        options = GradeOptions(challenge=challenge_name, device=device, policy=policy, seed=seed,
                               stop_on_wrong_answer=stop_on_wrong_answer, time=not no_timing,
                               refresh_baselines=refresh_baselines, workers=workers, scoring=load_policy(scoring_file, scoring_for(challenge, policy)),
                               limits=Limits(**limits), gpu_lock=_gpu_lock_spec(gpu_lock, device))
    except ValidationError as exc:
        raise UsageError("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    if as_json:
        result = grade(path, options)
        from .report import to_json
        click.echo(to_json(result))
    else:
        from rich.console import Console
        from rich.markup import escape
        from .report import render
        console = Console()
        with console.status(escape(f"grading {path} …")) as status:
            result = grade(path, options, progress=_status_line(status, f"grading {path}"))
        render(result, console)
        _defaulted_hint(result, path, defaulted)
    _finish(0 if result.verdict.value == "accepted" else 1)


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--challenge", "challenge_name", default=None,
              help="Challenge (default: the one whose folder holds PATH, else the one its '# challenge: NAME' "
                   "line names, which judge init writes, else matrix_multiplication).")
@click.option("--gpu", type=click.Choice(["t4", "a100", "h100", "h200", "b200"]), default="h100", show_default=True,
              help="The LeetGPU GPU to answer for. t4 has no TF32, so a default tl.dot computes in float32 "
                   "there and in TF32 on the others; on CPU that is what is emulated.")
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON object on stdout.")
@click.option("--seed", type=click.IntRange(-(2**63), 2**63 - 1), help="Run seed, to reproduce a run's case data.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), help="Default: cuda if available, else cpu.")
@click.option("--workers", type=click.IntRange(1, 16), default=None, help="Worker processes (as for submit).")
@click.option("--gpu-lock", default="auto", show_default=True, metavar="auto|off|FOLDER", help=_GPU_LOCK_HELP)
def check(path, challenge_name, gpu, as_json, seed, device, workers, gpu_lock):
    """Self-check PATH before posting it to LeetGPU.

    \b
    Answers in LeetGPU's terms first ("LeetGPU (H100) would most likely say:
    Accepted / Wrong Answer on case X / ..."), from LeetGPU's own tolerance
    on its published cases, then our stricter judgement where it differs,
    and why. LeetGPU's rules are read from the file before anything runs:
    solve's exact signature, Triton and torch's native features only, no
    torch compute doing the job, one self-contained file.

    Exit status: 0 when LeetGPU would accept it, 1 otherwise, 2 usage error."""
    from . import check as checking
    from .grader import GradeOptions, grade

    challenge_name, defaulted = _challenge_of(path, challenge_name)
    challenge = challenges.load(challenge_name)
    leet_policy, our_policy = checking.policies(challenge)
    options = GradeOptions(challenge=challenge_name, device=device, policy=leet_policy, seed=seed, workers=workers,
                           # every other policy too: a case LeetGPU's tolerance fails where an
                           # error bound passes it is said as the data's chance, not a verdict
                           also_policies=[name for name in challenge.tolerance.policies if name != leet_policy],
                           emulate_tf32=gpu != "t4", gpu_lock=_gpu_lock_spec(gpu_lock, device))
    if as_json:
        outcome = checking.answer(challenge, path, grade(path, options), gpu)
        click.echo(outcome.model_dump_json(indent=1))
    else:
        from rich.console import Console
        from rich.markup import escape
        from .report import render_check
        console = Console()
        doing = f"checking {path} as LeetGPU's {gpu.upper()} would"
        with console.status(escape(f"{doing} …")) as status:
            result = grade(path, options, progress=_status_line(status, doing))
            outcome = checking.answer(challenge, path, result, gpu)
        render_check(outcome, console)
        _defaulted_hint(result, path, defaulted)
    _finish(0 if outcome.leetgpu.verdict == "accepted" else 1)


# Class grading (judge/batch, judge/export): judge batch, judge export, judge gradescope.
from .batch.cli import batch as _batch  # noqa: E402
from .export.cli import export_command as _export, gradescope_command as _gradescope  # noqa: E402

main.add_command(_batch)
main.add_command(_export)
main.add_command(_gradescope)

_quick_exit = [False]


def _challenge_of(path: Path, given: str | None) -> tuple[str, bool]:
    """The file checked, and its challenge: --challenge, else the one whose
    folder holds it or that its `# challenge:` line names, else matrix
    multiplication (True: that default was taken)."""
    if not path.exists():
        raise UsageError(f"no such file: {path}")
    if path.is_dir():
        raise UsageError(f"{path} is a folder, not a submission file (judge batch grades a folder of them)")
    if not path.is_file():
        raise UsageError(f"{path} is not a regular file")
    named = given or challenges.for_file(path)
    return (named, False) if named else ("matrix_multiplication", True)


def _defaulted_hint(result, path: Path, defaulted: bool) -> None:
    """A file graded as matrix multiplication only because nothing named
    its challenge, whose solve did not fit: say how to name it."""
    if defaulted and result.verdict.value == "invalid_submission":
        click.echo(f"note: {path} was graded as matrix_multiplication, since no --challenge was given; for "
                   f"another challenge: judge submit {path} --challenge NAME (judge challenges lists them)", err=True)


def _status_line(status, doing: str):
    """A grading's progress on a rich status line: what it does, then
    what it does now (the cases run, waiting for the GPU, timing)."""
    from rich.markup import escape
    return lambda now: status.update(escape(f"{doing}: {now} …"))


def _finish(code: int) -> None:
    """End a command whose result is printed and nothing is left to write:
    the console script then exits without tearing down the judge's CUDA
    context and Triton's state (seconds, on a GPU)."""
    _quick_exit[0] = True
    sys.exit(code)


def entry() -> None:
    """The `judge` console script: main(), ending quickly where _finish said so."""
    try:
        main()
    except SystemExit as exc:
        if not _quick_exit[0]:
            raise
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exc.code if isinstance(exc.code, int) else 1)


if __name__ == "__main__":
    entry()
