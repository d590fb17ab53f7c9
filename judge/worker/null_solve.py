"""The judge's own stand-in for a submission: a solve that launches one
empty Triton kernel and does nothing else. The judge times it in a worker
like any submission (judge.timecheck.harness_cost) to learn what the
timer's own work costs per call in a worker's conditions (the rules armed
around each call, the audit hook, Triton's launch path), with nothing of a
submission in the process."""

import triton


@triton.jit
def _nothing(flag):
    pass


def solve(*args):
    _nothing[(1,)](1)
