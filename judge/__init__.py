"""tritonjudge: grade Triton kernel submissions against hidden cases.

The public surface: `grade(path, GradeOptions(...)) -> GradeResult` and
`prestart` (judge.grader), `judge.challenge.load/available`, the verdicts
(judge.verdicts.Verdict), the errors (judge.errors), and the `judge`
command (judge.cli). The package is a set of small modules, each owning one
job. Trusted side (the judge's own process):

    verdicts      the verdict vocabulary and how case verdicts combine
    challenge     challenge definitions loaded from challenges/<name>/;  challenge_spec: the toml's parts
    distributions input distributions a case may name;  expr: arithmetic over dimensions
    compare       what the judge knows of an output, comparisons, policies
    checkers/     the comparison plug-ins: allclose, exact, fp32_bound, tf32_bound
    casework      a grading's state, a case's request and the checks of what comes back
    slots         the workers of a grading and how cases are spread over them
    timed         timing the performance case, checking the timed calls, baselines
    timecheck     the judge's own clock against the reported latency
    grader        the entry point: grade() and prestart()
    results       the result models (what `judge submit --json` prints)
    isolation     spawning, sandboxing, policing and killing workers;  reaper: orphans;
                  worker_exit: a worker's capped output and how it ended;
                  worker_output: the workers' outputs joined for the result
    gpu_lock      gradings sharing a GPU: cases side by side, each timing alone
    gpu_pause     pausing a grading's processes (the driver's checkpoint lock, SIGSTOP)
    cpu_share     the CPUs a timing keeps while gradings that stepped aside compile on
    procfs        processes as /proc shows them (states, parents, sessions)
    clock         the clock deadlines run on: time paused for another's timing does not count
    progress      whether a GPU worker that has not answered is still compiling (a hang ends sooner)
    check, precheck   `judge check`: LeetGPU's rules from the source, its answer first
    source_scan   what the source says about a verdict (the GPU's broadcast-sum rewrite)
    goldens       example files and the verdicts they must get
    leetgpu/      a LeetGPU clone's challenge folders, loaded at run time
    batch/        `judge batch`: discovery, the results store, lanes, progress, Ray
    export/       gradebook CSV, Gradescope, JUnit, HTML report, similarity
    scoring, baselines, gpuinfo, report, cli

Both sides: protocol (framed messages), cases (seeds and input generation),
cuda_early (the GPU context made on a thread while torch imports),
timing (the measurement loop), check_sums (a timed call's output sums in one
Triton pass, run by the worker, checked by the judge). Untrusted side, running in the worker with
the submission: worker/ (request loop, the courier that alone touches the
judge's socket, launch counting, operator guard, audit hook,
interpreter patches, the CUDA a GPU file names answered on the CPU, tensors
printed by shape, the judge's stand-in submissions timed for the clock check).

The error tree is drawn in judge.errors' docstring.
"""

__version__ = "0.1.0"

_LAZY = {"grade": "grader", "prestart": "grader", "GradeOptions": "grader", "GradeResult": "results",
         "Verdict": "verdicts", "JudgeError": "errors", "UsageError": "errors"}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    # Imported on first use: the worker imports this package too, and needs none of it.
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'judge' has no attribute {name!r}")
