"""Which sandbox confines a worker here, and the command prefix that builds it
(trusted side; judge.isolation starts the workers).

Detected once per machine and version set, by trying each tool for real:
bubblewrap (read-only root, private /tmp, network and PID namespaces);
else unshare (network, a PID namespace where the CUDA driver starts in
one, and a mount namespace in which the worker builds its own read-only
file system: judge.worker.jail); else nothing. The probes start processes
(a CUDA one among them, about a second on an H100), so their answer is
kept in the judge's cache folder for a day, per machine, user, Python,
tool and kernel; a worker cannot write there when the sandbox is
read-only, and where it is not, it could already write anywhere.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from .cachedir import cache_dir, read_json, write_json

JUDGE_ROOT = Path(__file__).resolve().parent.parent
CACHE_S = 24 * 3600.0

class Sandbox(BaseModel):
    """What confines a worker beyond its scratch folder, as detected here."""

    tool: str | None  # "bwrap", "unshare" or None
    network: Literal["cut", "open"]
    filesystem: Literal["read-only, private /tmp", "shared"]
    # Its own PID namespace (every descendant dies with it), or not (then the
    # judge, as child subreaper, kills the orphans when the worker closes).
    pid_namespace: bool = False
    # A judge run as root: each grading's workers switch to a user of their
    # own, without capabilities (judge.worker.privileges).
    own_user: bool = False

    def describe(self) -> str:
        if self.tool is None:
            return "no sandbox tool (bubblewrap or unshare) usable here: network and files are open"
        text = f"{self.tool}: network {self.network}, file system {self.filesystem}"
        return (text + (", own PID namespace" if self.pid_namespace else "")
                + (", a user of its own" if self.own_user else ""))


def _runs(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _cache_file() -> Path:
    return cache_dir() / "sandbox.json"


def _cached(name: str, probe) -> Sandbox:
    """probe()'s answer, from the cache file when it has a fresh one for
    this machine, user, Python, tools, kernel and jail code."""
    probes = [Path(__file__).resolve().parent / "worker" / name for name in ("jail.py", "privileges.py")]
    key = json.dumps([name, platform.node(), os.geteuid(), sys.executable, shutil.which("bwrap"),
                      shutil.which("unshare"), platform.release(), os.environ.get("JUDGE_NO_SANDBOX"),
                      os.environ.get("JUDGE_KEEP_ROOT"), os.environ.get("CUDA_VISIBLE_DEVICES"),
                      [p.stat().st_mtime_ns if p.exists() else None for p in probes]])
    path = _cache_file()
    known = read_json(path)
    hit = known.get(key)
    try:
        if hit and time.time() - float(hit["at"]) < CACHE_S:
            return Sandbox(**hit["sandbox"])
    except (ValueError, TypeError, KeyError):
        pass
    box = probe()
    known[key] = {"at": time.time(), "sandbox": box.model_dump()}
    write_json(path, known)  # a read-only home: probed again next time
    return box


@functools.lru_cache(maxsize=None)
def detect_sandbox() -> Sandbox:
    """The sandbox of a CPU worker (and the base for sandbox_for)."""
    return _cached("cpu", _detect)


@functools.lru_cache(maxsize=None)
def sandbox_for(device: str) -> Sandbox:
    """The sandbox a worker on `device` runs in: detect_sandbox's, less the
    PID namespace for CUDA where the driver cannot start inside one (every
    descendant of such a worker is still killed by the judge as subreaper),
    less the jail where CUDA will not run inside it."""
    return detect_sandbox() if device != "cuda" else _cached("cuda", _probe_cuda)


def _detect() -> Sandbox:
    """bubblewrap if it works here (user namespaces or setuid), else
    unshare for the network alone, else nothing; checked once per process."""
    if os.environ.get("JUDGE_NO_SANDBOX"):
        return Sandbox(tool=None, network="open", filesystem="shared")
    bwrap = shutil.which("bwrap")
    probe = [bwrap, "--die-with-parent", "--unshare-net", "--ro-bind", "/", "/", "--dev-bind",
             "/dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if bwrap and _runs(probe[:2] + ["--unshare-pid"] + probe[2:] + ["true"]):
        return Sandbox(tool="bwrap", network="cut", filesystem="read-only, private /tmp", pid_namespace=True)
    if bwrap and _runs(probe + ["true"]):
        return Sandbox(tool="bwrap", network="cut", filesystem="read-only, private /tmp")
    unshare = shutil.which("unshare")
    for pid in (True, False):
        if unshare and _runs(unshare_prefix(unshare, pid=pid) + ["true"]):
            jailed = _jail_holds(unshare, pid)
            box = Sandbox(tool="unshare", network="cut", pid_namespace=pid,
                          filesystem="read-only, private /tmp" if jailed else "shared")
            return box.model_copy(update={"own_user": _user_holds(unshare, box)})
    return Sandbox(tool=None, network="open", filesystem="shared")


# The CUDA driver's own start (cuInit), as a worker makes it: it fails with
# "OS call failed" (error 304) inside a PID namespace on some hosts (the H100
# image), so a CUDA worker gets one only where this succeeds.
_CUINIT = "import ctypes, sys; sys.exit(ctypes.CDLL('libcuda.so.1').cuInit(0))"


def _probe_cuda() -> Sandbox:
    box = detect_sandbox()
    unshare = shutil.which("unshare") or "unshare"
    if box.tool == "unshare" and box.filesystem != "shared":
        # The jail and CUDA, tried together: with the PID namespace, then without.
        for pid in ([True, False] if box.pid_namespace else [False]):
            if _jail_holds(unshare, pid, cuda=True):
                return box.model_copy(update={"pid_namespace": pid})
        # CUDA will not run inside the jail here: a worker that cannot grade
        # is worse than one that shares the file system.
        box = box.model_copy(update={"filesystem": "shared"})
    if box.pid_namespace:
        if box.tool == "bwrap":
            prefix = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/",
                      "--dev-bind", "/dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--"]
        else:
            prefix = unshare_prefix(unshare, pid=True)
        if not _runs(prefix + [sys.executable, "-c", _CUINIT]):
            box = box.model_copy(update={"pid_namespace": False})
    if box.own_user:
        box = box.model_copy(update={"own_user": _user_holds(unshare, box, cuda=True)})
    return box


@functools.lru_cache(maxsize=1)
def pdeathsig_prefix() -> tuple[str, ...]:
    """`setpriv --pdeathsig KILL`, where it works: the process the judge
    starts (unshare, and with it the worker: --kill-child) gets SIGKILL when
    the judge's process dies. A batch lane killed with -9 had left a worker
    running for minutes (its session is its own, so no signal to the lane's
    group reached it). bubblewrap has --die-with-parent already."""
    setpriv = shutil.which("setpriv")
    if setpriv and _runs([setpriv, "--pdeathsig", "KILL", "--", "true"]):
        return (setpriv, "--pdeathsig", "KILL", "--")
    return ()


def unshare_prefix(unshare: str, pid: bool = False, mount: bool = False) -> list[str]:
    """`pid`: a PID namespace too; the worker is its first process (and
    forks to stay its init: judge.worker.__main__), so when it dies the
    kernel kills every process left in it. `mount`: a mount namespace, in
    which the worker makes its file system read-only (judge.worker.jail).
    Always an IPC namespace of its own (System V shared memory and POSIX
    message queues outlive a grading: a channel to the next; CUDA IPC to
    the judge holds across it on the H100) and a host name of its own."""
    extra = (["--mount"] if mount else []) + (["--pid", "--fork", "--kill-child"] if pid else [])
    return [unshare, "--net", "--ipc", "--uts"] + extra + ([] if os.geteuid() == 0 else ["--map-root-user"]) + ["--"]


def _jail_holds(unshare: str, pid: bool, cuda: bool = False, user: int | None = None) -> bool:
    """Whether a worker's jail (judge.worker.jail) can be built here: tried
    for real in a throwaway folder, the way a worker would (`cuda`: and a
    CUDA computation run inside it; `user`: and a switch to that user)."""
    scratch = Path(tempfile.mkdtemp(prefix="judge-jail-probe-"))
    try:
        spec = json.dumps(readonly_plan(scratch, []))
        cmd = unshare_prefix(unshare, pid=pid, mount=True) + [sys.executable, "-m", "judge.worker.jail",
                                                               "--probe", spec] + (["--cuda"] if cuda else [])
        if user is not None:
            give_to(scratch, user)
            cmd += ["--user", str(user)]
        return _probe_passes(cmd, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _probe_passes(cmd: list[str], scratch: Path) -> bool:
    """A probe run as a worker would be (the judge's path, never its secret),
    in `scratch`: True when it exits 0."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(JUDGE_ROOT), os.environ.get("PYTHONPATH")) if p))
    env.pop("JUDGE_SECRET", None)
    try:
        return subprocess.run(cmd, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def readonly_plan(scratch: Path, hidden: list[Path], writable: list[Path] = ()) -> dict:
    """What a read-only sandbox must arrange (bubblewrap's options, or the
    worker's own jail under unshare: judge.worker.jail): the folders written
    (the scratch folder first, then `writable`: a grading's shared Triton
    cache), the folders hidden (the secret's and the submission's, less any
    that holds what the worker runs), and what the worker needs from /tmp
    (a virtualenv, the judge itself), outermost only, read-only."""
    needed = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent, JUDGE_ROOT}
    needed |= {Path(p) for p in sys.path if p}
    needed |= {Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    tmp_needed = sorted({p.resolve() for p in needed if p.exists() and str(p.resolve()).startswith("/tmp/")})
    keep = [p for p in tmp_needed if not any(parent in tmp_needed for parent in p.parents)]
    shown = []
    for path in hidden:
        path = path.resolve()
        if path.is_dir() and path != Path("/") and not any(
                k == path or path in k.parents for k in [JUDGE_ROOT, *tmp_needed, Path(sys.prefix)]):
            shown.append(str(path))
    return {"writable": [str(scratch), *map(str, writable)], "hidden": shown, "keep_readonly": list(map(str, keep))}


def bwrap_prefix(scratch: Path, hidden: list[Path], pid: bool = False, writable: list[Path] = ()) -> list[str]:
    """Read-only root, private /tmp and network, /dev passed through for the
    GPU; readonly_plan's folders bound or hidden."""
    cmd = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-net", "--unshare-ipc", "--unshare-uts",
           *(["--unshare-pid"] if pid else []), "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    plan = readonly_plan(scratch, hidden, writable)
    for path in plan["keep_readonly"]:
        cmd += ["--ro-bind", path, path]
    for path in plan["hidden"]:
        cmd += ["--tmpfs", path]
    for path in plan["writable"][1:]:
        cmd += ["--bind", path, path]
    return cmd + ["--bind", str(scratch), str(scratch), "--chdir", str(scratch), "--"]


def new_user() -> int:
    """A user number for one grading's workers: unused (no name, above any
    a system hands out), drawn at random so that two gradings never share
    one in practice."""
    import secrets
    return (1 << 24) + secrets.randbelow((1 << 30) - (1 << 24))


def give_to(folder: Path, uid: int) -> None:
    """`folder` and what is in it, owned by user and group `uid` (a grading's
    scratch and Triton cache folders: judge.worker.privileges). Files that
    vanish meanwhile are skipped."""
    os.chown(folder, uid, uid)
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            try:
                os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)
            except FileNotFoundError:
                pass


def _user_holds(unshare: str, box: Sandbox, cuda: bool = False) -> bool:
    """Whether a worker in `box` can switch to a user of its own and still
    work (a judge run as root only: others have no user to give)."""
    if os.geteuid() != 0 or os.environ.get("JUDGE_KEEP_ROOT"):
        return False
    user = new_user()
    if box.filesystem != "shared":
        return _jail_holds(unshare, box.pid_namespace, cuda=cuda, user=user)
    scratch = Path(tempfile.mkdtemp(prefix="judge-user-probe-"))
    try:
        give_to(scratch, user)
        cmd = unshare_prefix(unshare, pid=box.pid_namespace) + [
            sys.executable, "-m", "judge.worker.privileges", "--probe", str(user)] + (["--cuda"] if cuda else [])
        return _probe_passes(cmd, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
