"""A read-only file system for a worker started by `unshare --mount`.

Where bubblewrap is missing, the worker's sandbox is `unshare` (network,
and a PID namespace where the driver allows). Without more, the worker
could write anything the judge can: the judge's code, its caches (the
Triton cache seed, the baselines), a batch's results store, other
submissions' files. In a mount namespace of its own, before Python imports
anything else and before any submission code exists in the process, the
worker makes (as bubblewrap's options do):

  * every mount read-only, /dev and the kernel's settings under /proc
    too (device nodes still open), /proc its own where it has a PID
    namespace of its own, a
    private /tmp and /dev/shm (fresh tmpfs), and the folders it must write
    (its scratch folder, its grading's Triton cache), bound back read-write;
  * what it needs from the old /tmp (a virtual environment, the judge)
    bound back read-only;
  * the hidden folders (the secret's, the submission's own folder with
    its neighbours, a batch's store and class folder) covered by an empty
    tmpfs;

then gives up CAP_SYS_ADMIN, so nothing it runs later can remount.
Nothing is imported here beyond os, json, sys and ctypes: the jail is set
before the interpreter reads another file of the old /tmp.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 32, 1024, 2048, 4096
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 16384, 1 << 18, 1 << 21, 1 << 24
_KEPT = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
         "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
CAP_SYS_ADMIN = 21
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
_LIVE = ("/dev", "/proc")  # left as they are: the GPU's device nodes, the kernel's view of processes


class JailError(OSError):
    pass


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(libc, source, target: str, fstype, flags: int, data=None) -> None:
    enc = (lambda v: v.encode() if isinstance(v, str) else v)
    if libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise JailError(err, f"mount {target}: {os.strerror(err)}")


def _mounts() -> list[tuple[str, int]]:
    """(mount point, flags to keep on a read-only remount) of every mount,
    outermost first (/proc/self/mountinfo order)."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # \040 for a space
            kept = 0
            for option in fields[5].split(","):
                kept |= _KEPT.get(option, 0)
            out.append((point, kept))
    return out


def _under(path: str, roots) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def enter(writable: list[str], hidden: list[str], keep_readonly: list[str]) -> None:
    """Build the jail in this process's (new) mount namespace; raises
    JailError when any step fails (the worker then exits: it never runs
    with less than it was promised)."""
    libc = _libc()
    # Handles on what must stay reachable before /tmp is covered.
    handles = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in [*writable, *keep_readonly]}
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the judge's namespace
    # Hidden folders are covered now, and again once the kept ones are bound
    # back: a kept folder (the batch's working folder, on the import path)
    # brought back the class folder and the results store below it, which a
    # batch probe's file read from (it imported a classmate's file).
    for path in ("/tmp", "/dev/shm", *hidden):
        if os.path.isdir(path):
            _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    for path, fd in handles.items():
        os.makedirs(path, exist_ok=True)  # inside a fresh tmpfs when it lay below one
        _mount(libc, f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
    for path in hidden:
        if os.path.isdir(path) and not _under(path, writable):
            _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    for path in writable:  # one below a hidden folder, bound back over its cover
        if _under(path, hidden):
            os.makedirs(path, exist_ok=True)
            _mount(libc, f"/proc/self/fd/{handles[path]}", path, None, MS_BIND | MS_REC)
    for fd in handles.values():
        os.close(fd)
    for point, kept in _mounts():
        if _under(point, _LIVE) or _under(point, writable) or point in ("/tmp", "/dev/shm"):
            continue
        if not os.path.lexists(point):
            continue  # below a cover (an old mount under /tmp): out of reach, nothing to remount
        # A bind remount changes this mount point's flags alone; the flags a
        # parent namespace locked (nosuid, nodev...) must be restated.
        try:
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        except JailError:
            if point == "/":
                raise
            # A mount the kernel will not remount (a special file system
            # below an unusual point): covered over, unreadable as well.
            _mount(libc, "tmpfs", point, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=000")
    if os.getpid() == 1:
        # A PID namespace of its own: a /proc of its own too, which shows its
        # processes alone (the host's names the judge's, whose memory, root
        # and signals a file would otherwise reach). Where the host forbids
        # it (a container that masks parts of /proc), the old one stays.
        try:
            _mount(libc, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except JailError:
            pass
    _kernel_knobs_readonly(libc)
    _drop_mount_capability(libc)


# Below /dev and /proc, what a process of the host's root user could write
# with no capability at all (its owner's bits): files in /dev (a channel
# between gradings), the kernel's settings (/proc/sys: core_pattern runs a
# program as the host's root), sysrq. Read-only here, as container runtimes
# make them; device nodes still open for writing on a read-only mount.
READONLY_KNOBS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")


def _kernel_knobs_readonly(libc) -> None:
    for point, kept in _mounts():
        if _under(point, ("/dev",)) and point != "/dev/shm":
            try:
                _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
            except JailError:
                pass
    for path in READONLY_KNOBS:
        if not os.path.exists(path):
            continue
        try:
            _mount(libc, path, path, None, MS_BIND)
            _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except JailError:
            pass


def _drop_mount_capability(libc) -> None:
    """No CAP_SYS_ADMIN from here on (no remount, no umount), for this
    process and anything it could start."""
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise JailError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    libc.prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0)  # EPERM without CAP_SETPCAP: the sets below still drop it
    if not keep_capabilities(libc, ~(1 << CAP_SYS_ADMIN)):
        raise JailError(ctypes.get_errno(), "capset failed")


def keep_capabilities(libc, mask: int) -> bool:
    """This process's effective, permitted and inheritable capabilities
    narrowed to those in `mask` (a bit per capability); False when the
    kernel refused. (judge.worker.privileges gives up all of them.)"""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    if libc.capget(ctypes.byref(header), data) != 0:
        return False
    for word in range(2):
        part = (mask >> (32 * word)) & 0xFFFFFFFF
        for field in ("effective", "permitted", "inheritable"):
            setattr(data[word], field, getattr(data[word], field) & part)
    return libc.capset(ctypes.byref(header), data) == 0


def enter_from_argument(spec: str) -> None:
    """enter() from the worker's --jail JSON argument."""
    plan = json.loads(spec)
    enter(plan["writable"], plan["hidden"], plan["keep_readonly"])
    os.chdir(plan["writable"][0])  # the scratch folder, through its new mount


def _cuda_runs() -> bool:
    """The driver starts, makes a context and allocates (what a worker's
    torch.cuda.init and first tensor need), here."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
    alloc = getattr(cuda, "cuMemAlloc_v2", None) or cuda.cuMemAlloc
    free = getattr(cuda, "cuMemFree_v2", None) or cuda.cuMemFree
    return (cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
            and cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0
            and alloc(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)) == 0 and free(ptr) == 0)


def _probe() -> int:
    """`python -m judge.worker.jail --probe SPEC` under unshare --mount (SPEC
    as for --jail, its first writable folder a fresh one): 0 when the jail
    holds (that folder writable, the rest not, no way back)."""
    enter_from_argument(sys.argv[2])
    scratch = os.getcwd()
    for needed in [*json.loads(sys.argv[2])["keep_readonly"], sys.prefix]:
        os.listdir(needed)  # what a worker imports next must still be there (a virtualenv below /tmp)
    if "--user" in sys.argv:
        # As a worker would: another user from here on, who must still read
        # Python's, torch's and Triton's files and the judge's.
        from judge.worker import privileges
        if not privileges.usable_as(int(sys.argv[sys.argv.index("--user") + 1])):
            return 6
    if "--cuda" in sys.argv and not _cuda_runs():
        return 5
    try:
        with open(os.path.join(scratch, "ok"), "w") as fh:
            fh.write("ok")
    except OSError:
        return 2
    for outside in (os.path.dirname(os.path.abspath(__file__)), os.path.expanduser("~")):
        try:
            with open(os.path.join(outside, ".judge-jail-probe"), "w"):
                pass
            return 3  # wrote where nothing may be written
        except OSError:
            pass
    try:
        _mount(_libc(), None, "/", None, MS_REMOUNT | MS_BIND)
        return 4  # could make the root writable again
    except JailError:
        return 0


if __name__ == "__main__" and len(sys.argv) >= 3 and sys.argv[1] == "--probe":
    sys.exit(_probe())
