"""The worker gives up root (untrusted side; runs before any submission).

A judge run as root starts its workers as root, with every capability: a
file could then open the judge's own memory (/proc/<pid>/mem), write
through /proc/<pid>/root past its read-only jail, or signal the judge and
other gradings' workers. Where the judge is root and the probe says it
works (judge.sandbox), each grading gets a user of its own, an unused
number with no name, and its workers switch to it right after the jail is
built and before Python imports anything of torch: no capability is left,
the judge's processes (root) are out of reach, and other gradings' workers
(other users) too. Its scratch folder and its grading's Triton cache are
given to that user by the judge (judge.isolation).
"""

from __future__ import annotations

import os

PR_CAPBSET_DROP = 24


def drop_capabilities() -> bool:
    """Every capability given up, for this process and whatever it runs
    (the bounding set too): where the worker stays root (no user of its own
    here), it can no longer trace another process (the judge is not
    dumpable: judge.hardening), nor do anything else root's
    capabilities allow. Best effort: False when the kernel refused."""
    import ctypes

    from judge.worker.jail import keep_capabilities
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:  # EINVAL: no such cap
            break
    return keep_capabilities(libc, 0)


def drop(uid: int) -> None:
    """Become user and group `uid` for good (no supplementary groups);
    raises OSError when any step fails or root could be taken back."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)  # from root to another user: the kernel clears every capability
    if (os.getuid(), os.geteuid(), os.getgid(), os.getegid()) != (uid, uid, uid, uid):
        raise OSError(f"the worker is still {os.getuid()}/{os.geteuid()} after switching to {uid}")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise OSError("root could be taken back after switching users")


def usable_as(uid: int) -> bool:
    """Switch to `uid` for good, then import what a worker needs (Python's,
    torch's, Triton's and the judge's files must be readable to that user):
    True when all of it worked. For the probes only (judge.sandbox)."""
    try:
        drop(uid)
        import torch  # noqa: F401  pyflakes: ignore
        import triton  # noqa: F401  pyflakes: ignore
        import judge.worker.server  # noqa: F401  pyflakes: ignore
    except Exception:  # noqa: BLE001 - any failure: not this way here
        return False
    return True


def _probe(uid: int, cuda: bool) -> int:
    """`python -m judge.worker.privileges --probe UID [--cuda]`, where no jail
    is built (judge.worker.jail probes the jailed case): 0 when a worker
    could switch to UID here and still import and run what it needs."""
    if not usable_as(uid):
        return 6
    try:
        with open("ok", "w") as fh:  # its scratch folder, given to that user
            fh.write("ok")
    except OSError:
        return 6
    if cuda:
        from judge.worker.jail import _cuda_runs
        if not _cuda_runs():
            return 5
    return 0


if __name__ == "__main__":
    import sys
    if len(sys.argv) >= 3 and sys.argv[1] == "--probe":
        sys.exit(_probe(int(sys.argv[2]), "--cuda" in sys.argv))
