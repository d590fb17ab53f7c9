"""CPU mode: when a case the file's own launches made too slow for Triton's
interpreter is only not run, and when it leaves the file not judged.

A case the interpreter cannot finish in its budget is skipped, not failed:
a correct kernel with small blocks is slow there (one program per element
ran at ~1 ms a program here), and the CPU mode must not turn that into a
verdict. But the file chooses its grid and its programs' work, so slowness
is also a way to pick which cases are checked: a file that spun on every
case but the example, or computed a - b only where the interpreter gave
up, was accepted on the rest (a GPU runs those cases and finds them
wrong). Such a case leaves the file not judged (never `accepted`:
judge.verdicts.submission_verdict) when its slowness is not the
interpreter's:

- a small case (Challenge.large_for_cpu) that would need far longer than
  its budget;
- any case whose launches asked for more programs than its work could give
  them;
- any case whose launch would need more seconds per unit of work than a
  correct kernel takes (programs that only spin), whatever its size;
- any case far slower per unit of work than a case of comparable size
  that ran (recheck: the file is fast where it chooses to be).
"""

from __future__ import annotations

from .verdicts import NOT_JUDGED_ON_CPU, TOO_SLOW_ON_CPU

STALL_FACTOR = 10  # a small case the interpreter would need this many budgets for: stalled
# A correct kernel gives each program at least one unit of work (one
# element, one product): more programs than this per unit (and a few
# thousand more) is an idle grid.
PROGRAMS_PER_WORK, SPARE_PROGRAMS = 4, 4096
SECONDS_PER_WORK = 0.01  # ten times the slowest correct kernel's (one program per element, ~1 ms each)
# Plus a launch's fixed cost, which no work measure shows: a one-element
# case's honest launch took 0.1 s on a loaded machine, whose case ran out of
# budget, and the file was left not judged. Short spins repeated until the
# budget is spent meet recheck instead (a comparable case ran far faster).
LAUNCH_ALLOWANCE_S = 1.0
# A skipped case slower per unit of work than this many times a case that
# ran, of at least 1/COMPARABLE of its work (a tiny case's rate is mostly
# the launch's fixed cost, which a larger case spreads thinner).
RELATIVE_FACTOR, COMPARABLE = 20, 16


def stalled(reply: dict, work: int, budget: float, large: bool) -> str | None:
    """Why this too-slow case shows the file's choice rather than the
    interpreter's speed (None: it does not). `reply`: the worker's, with the
    stopped launch's `estimate_s` and `programs`; `large`: the challenge
    calls the case large for the interpreter."""
    estimate = reply.get("estimate_s")
    estimate = float(estimate) if isinstance(estimate, (int, float)) else float("inf")
    programs = reply.get("programs")
    if isinstance(programs, int) and programs > PROGRAMS_PER_WORK * work + SPARE_PROGRAMS:
        return f"its launches asked for {programs:,} programs, for a case whose work measure is {work:,}"
    if estimate > SECONDS_PER_WORK * max(work, 1) + LAUNCH_ALLOWANCE_S:
        return f"its launch would have needed ~{estimate:,.0f} s, for a case whose work measure is {work:,}"
    if estimate > STALL_FACTOR * budget and not large:
        return f"its launch would have needed ~{estimate:,.0f} s, {estimate / budget:.0f} times the budget of a case this small"
    return None


def recheck(results: list, slow: dict, ran: dict) -> None:
    """Relabel, in place, each case only not run for its slowness that was
    far slower per unit of work than a comparable case that ran.
    `slow`: case name -> (estimate_s, work) of the skipped ones; `ran`: case
    name -> (seconds, work) of the ones run and passed."""
    for result in results:
        if result is None or result.status != "skipped" or not result.message.startswith(TOO_SLOW_ON_CPU):
            continue
        if result.name not in slow:
            continue
        estimate, work = slow[result.name]
        rates = [(seconds / w, name) for name, (seconds, w) in ran.items()
                 if w > 0 and COMPARABLE * w >= work and seconds > 0]
        if not rates or work <= 0:
            continue
        rate, name = max(rates)
        if estimate / work > RELATIVE_FACTOR * rate:
            why = (f"its launch would have needed ~{estimate:,.0f} s ({1e6 * estimate / work:,.0f} µs per unit of "
                   f"work), over {RELATIVE_FACTOR} times the {1e6 * rate:,.1f} µs of case {name}, which ran")
            said = result.message[len(TOO_SLOW_ON_CPU):].lstrip(" :")
            result.message = f"{NOT_JUDGED_ON_CPU}: {why}: {said}"[:4000]
