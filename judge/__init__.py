"""tritonjudge: grade Triton kernel submissions against hidden cases.

The package is a set of small modules, each owning one job:

    verdicts   the verdict vocabulary and how case verdicts combine
    challenge  challenge definitions (pydantic) loaded from challenges/<name>/
    cases      seeds, the secret, and input generation from a case spec
    compare    error statistics, tolerance policies and precision diagnosis
    protocol   the framed messages that cross the process boundary (both sides)
    isolation  the trusted side of the boundary: spawning and policing the worker
    worker/    the untrusted side, a package: runs inside the child with the
               submission (request loop, operator guard, interpreter patches)
    timing     latency measurement (the worker times solve with it, the judge its baselines)
    grader     orchestration: cases -> worker -> comparison -> result
    report     rendering a result for people (rich) and machines (JSON)
    cli        the `judge` command
"""

__version__ = "0.1.0"
