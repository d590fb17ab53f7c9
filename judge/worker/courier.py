"""The worker's line to the judge, kept out of the submission's reach.

The submission runs in the worker's process, and a file descriptor belongs
to the whole process: a file that found the judge's socket among its
descriptors read the judge's requests and wrote its own answers with
os.read and os.write (no audit event covers them), and was accepted for a
kernel it never ran. So the socket is read and written only by two threads
of the worker's own, started before the file is known, and every other
thread (the main one, which imports the file and calls solve, and every
thread started from it afterwards) is barred from it by a seccomp filter:
the kernel answers EBADF to any system call on it, whatever the file does
in Python. The main thread hands its replies to those threads in memory.

A rule violation (judge.worker.audit) reaches the judge through a socket
pair of its own that carries bad news only: whatever arrives on it is sent
on as `rejected`, and the worker ends.

Python's collector is switched off once the file is loaded: a finalizer of
the file's, run by a collection in one of these threads, would run free of
the filter. The main thread collects after every request instead.
"""

from __future__ import annotations

import _thread
import errno
import os
import select
import socket
import sys

from judge import protocol
from judge.errors import ProtocolError
from judge.worker.kernel_output import KERNEL_OUTPUT

HIGH_FD = 900  # the barred descriptors are moved up here: out of the way of exit codes and small numbers
COMPLAINT_MAX = 8192  # bytes of a complaint read (judge.worker.audit writes at most these)
COMPLAINT_HEAD = b'{"blobs": [], "status": "rejected", "message": "'
COMPLAINT_FORGED = (b'{"blobs": [], "status": "rejected", "message": "rule: the submission wrote to the '
                    b'worker\'s complaint line, or handed the judge a reply of its own"}')
# A complaint's text as a JSON string's body, translated by a builtin:
# printable ASCII, the double quote as a single one and the backslash as a
# slash (nothing can close the string early), anything else a question mark.
JSON_SAFE = bytes(ord("'") if c == ord('"') else ord("/") if c == ord("\\") else c if 0x20 <= c < 0x7F
                  else ord("?") for c in range(256))

# x86-64 system call numbers (the judge's GPU hosts and development machines).
AUDIT_ARCH_X86_64 = 0xC000003E
# Barred when the descriptor is their first argument.
FD_FIRST = (0, 1, 3, 8, 16, 17, 18, 19, 20, 32, 33, 40, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 54, 55,
            72, 73, 74, 75, 77, 91, 93, 187, 221, 275, 276, 277, 278, 285, 288, 292, 295, 296, 299, 307,
            326, 327, 328)
# Barred when it is their second (dup2/dup3's target, sendfile's source, tee's output) or third argument.
FD_SECOND = (33, 40, 276, 292)
FD_THIRD = (275, 326)
# Refused outright: they reach descriptors wholesale (close_range, io_uring) or another's (pidfd_getfd).
REFUSED = (425, 426, 427, 436, 438)
# Where kernels print (judge.worker.kernel_output) stays where the worker
# put it: written, never closed nor replaced (dup2/dup3's target). When it
# was descriptor 1, a file that pointed that at a file of its own read every
# printed block back.
KEPT = (KERNEL_OUTPUT,)
KEEP_IN_PLACE = ((3, 0), (33, 1), (292, 1))  # (call, position of the descriptor it would close or replace)
X32_BIT = 0x40000000

# Classic BPF, as seccomp reads it.
_LD_W_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000


class Courier:
    """Owns the socket to the judge. `send` and `recv` are called from the
    main thread; the socket itself is touched only by the courier's threads,
    which run nothing but builtins bound here (a file that replaced
    socket.fileno or json's decoder ran its own code in them, free of the
    filter and the operator guard) and parse nothing: the main thread
    decodes and encodes the JSON. A reply goes out only while the main
    thread waits in `send`, called from the worker's reply, with nothing but
    the worker's own code below it (judge.worker.server)."""

    def __init__(self, sock: socket.socket, allowed=frozenset()):
        """`allowed`: the code objects that may stand below `send` on the main
        thread's stack when a reply goes out (the worker's own; this call's
        callers are added)."""
        fd = _move_up(sock.detach())
        theirs, mine = socket.socketpair()
        complaints = _move_up(theirs.detach())
        self.complaint_fd = mine.detach()  # written by the audit hook, in any thread
        os.set_inheritable(self.complaint_fd, False)
        self.barred = (fd, complaints)
        inbox, outbox = [], []
        # Bound now: a rebinding of the protocol module's functions later is not what replies use.
        decode, encode = protocol.decode_header, protocol.encode_header
        inbox_ready, outbox_ready, sent, writing = (_thread.allocate_lock() for _ in range(4))
        inbox_ready.acquire()
        outbox_ready.acquire()
        sent.acquire()

        def recv() -> dict:
            """The judge's next request (EOFError once it has hung up)."""
            inbox_ready.acquire()
            raw = inbox.pop(0)
            if raw is None:
                inbox.append(None)  # and every later call
                inbox_ready.release()
                raise EOFError("the judge closed the connection")
            header = decode(raw)
            if header.get("blobs"):
                raise ProtocolError("the judge's requests carry no blobs")
            return header

        def send(header: dict, blobs=()) -> None:
            """Reply; returns once the bytes are written. The caller keeps
            the blobs alive meanwhile, so their last reference never drops
            in the courier's threads."""
            blobs = [memoryview(b).cast("B") for b in blobs]
            outbox.append((encode(header, blobs), blobs))
            outbox_ready.release()
            sent.acquire()

        # Whoever stands below this constructor now (the worker's entry
        # point, runpy) stands below every reply too.
        callers, frame = set(), sys._getframe(1)
        while frame is not None:
            callers.add(frame.f_code)
            frame = frame.f_back
        del frame
        allowed = frozenset(allowed) | callers | own_codes(__name__)
        _thread.start_new_thread(_read_loop, (fd, complaints, inbox, inbox_ready, writing))
        _thread.start_new_thread(_send_loop, (fd, outbox, outbox_ready, sent, writing, _thread.get_ident(),
                                              send.__code__, allowed))
        self.recv, self.send = recv, send

    def bar_this_thread(self) -> bool:
        """Install the filter on the calling thread (and every thread it
        starts from now on): no system call on the courier's descriptors,
        and where kernels print neither closed nor replaced.
        False where the kernel has no seccomp filters (or this is no x86-64
        Linux): there the line is as open as any descriptor."""
        try:
            bar_descriptors(self.barred)
        except (OSError, AttributeError):
            return False
        return True


def _write_all(fd, first, writing, write, rest=(), view_of=memoryview, length=len) -> None:
    """Bytes out, whole, under the write lock (released after, unless the worker ends).
    Builtins bound as defined too: builtins.memoryview swapped by a finalizer of the
    file's had its function run here, in a thread with no filter and no guard."""
    writing.acquire()
    for part in (first, *rest):
        view = view_of(part)
        while length(view):
            view = view[write(fd, view):]
    writing.release()


def _read_loop(fd, complaints, inbox, ready, writing, select=select.select, read=os.read, write=os.write,
               exit_now=os._exit, from_bytes=int.from_bytes, write_all=_write_all, limit=protocol.MAX_HEADER,
               head=COMPLAINT_HEAD, forged=COMPLAINT_FORGED, safe=JSON_SAFE, most=COMPLAINT_MAX, length=len,
               smallest=min, anything=BaseException) -> None:
    """Requests, as raw header bytes, into the inbox; a complaint forwarded.
    Everything it calls is bound here, as it is defined: nothing the file
    rebinds later (a module's global, a socket's method) runs in this thread."""
    def exactly(source, size):
        got = b""
        while length(got) < size:
            chunk = read(source, size - length(got))
            if not chunk:
                raise EOFError
            got += chunk
        return got

    try:
        while True:
            if complaints in select([fd, complaints], [], [])[0]:
                size = from_bytes(exactly(complaints, 4), "big")
                text = exactly(complaints, smallest(size, most))
                answer = forged  # not the audit hook's words: the file wrote here
                if text.startswith(b"rule: "):
                    answer = head + text.translate(safe) + b'"}'
                write_all(fd, length(answer).to_bytes(4, "big") + answer, writing, write)
                exit_now(3)
            size = from_bytes(exactly(fd, 4), "big")
            if size > limit:
                raise EOFError
            inbox.append(exactly(fd, size))
            ready.release()
    except anything:  # noqa: BLE001 - EOF, or a broken line: the worker's loop ends
        inbox.append(None)
        ready.release()


def _send_loop(fd, outbox, ready, sent, writing, main, send_code, allowed, write=os.write,
               frames=sys._current_frames, exit_now=os._exit, write_all=_write_all, forged=COMPLAINT_FORGED,
               length=len, failed=OSError) -> None:
    """Replies out, each once the main thread is seen waiting in `send`
    with nothing but the worker's own code below it (bound as _read_loop's)."""
    while True:
        ready.acquire()
        raw, blobs = outbox.pop(0)
        stack = frames().get(main)
        ok = stack is not None and stack.f_code is send_code
        while ok and stack is not None:
            ok = stack.f_code in allowed
            stack = stack.f_back
        del stack
        if not ok:
            write_all(fd, length(forged).to_bytes(4, "big") + forged, writing, write)
            exit_now(3)
        try:
            write_all(fd, raw, writing, write, blobs)
        except failed:
            writing.release()  # the judge is gone: the read loop ends the worker's loop
        del raw, blobs  # before the main thread goes on: it drops the last references
        sent.release()


def own_codes(*module_names) -> frozenset:
    """The code objects of these modules' own functions and classes' methods
    (judge.worker.arming.own_callables, which the seal reads too), and every
    code object nested in them (closures, lambdas)."""
    import inspect

    from judge.worker.arming import own_callables
    todo = []
    for owner, name in own_callables(module_names):
        value = vars(owner).get(name) if inspect.isclass(owner) else getattr(owner, name)
        value = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        todo.append(getattr(value, "__code__", None))
    found: set = set()
    while todo:
        code = todo.pop()
        if inspect.iscode(code) and code not in found:
            found.add(code)
            todo += [c for c in code.co_consts if inspect.iscode(c)]
    return frozenset(found)


def _move_up(fd: int) -> int:
    """`fd` moved to HIGH_FD or above, closed on exec."""
    import fcntl
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
    os.close(fd)
    return moved


def filter_program(fds, kept=KEPT) -> list[tuple[int, int, int, int]]:
    """The seccomp program, as (code, jt, jf, k) instructions: EBADF for a
    system call on one of `fds` where the calls above take a descriptor,
    and for closing or replacing one of `kept`; ENOSYS for the calls
    refused outright; anything else allowed. A linear chain of blocks, one
    per call: `nr == call` enters its block, which loads each descriptor
    argument in turn and ends in allow or EBADF."""
    fds, kept = list(fds), list(kept)
    positions: dict[int, list[tuple[int, list[int]]]] = {}
    for table, position in ((FD_FIRST, 0), (FD_SECOND, 1), (FD_THIRD, 2)):
        for nr in table:
            positions.setdefault(nr, []).append((position, fds))
    for nr, position in KEEP_IN_PLACE:
        if kept:
            positions.setdefault(nr, []).append((position, kept))
    program = [(_LD_W_ABS, 0, 0, 4), (_JEQ, 1, 0, AUDIT_ARCH_X86_64), (_RET, 0, 0, _ALLOW),
               (_LD_W_ABS, 0, 0, 0), (_JGE, 0, 1, X32_BIT), (_RET, 0, 0, _ERRNO | errno.ENOSYS)]
    for nr, where in sorted(positions.items()):
        body = []
        for position, barred in where:
            body.append((_LD_W_ABS, 0, 0, 16 + 8 * position))  # the low half: a descriptor is an int
            body += [(_JEQ, None, 0, fd) for fd in barred]
        body += [(_RET, 0, 0, _ALLOW), (_RET, 0, 0, _ERRNO | errno.EBADF)]
        deny = len(body) - 1
        body = [(code, deny - i - 1 if jt is None else jt, jf, k) for i, (code, jt, jf, k) in enumerate(body)]
        program.append((_JEQ, 0, len(body), nr))
        program += body
    for nr in REFUSED:
        program += [(_JEQ, 0, 1, nr), (_RET, 0, 0, _ERRNO | errno.ENOSYS)]
    program.append((_RET, 0, 0, _ALLOW))
    if any(not (0 <= jt <= 255 and 0 <= jf <= 255) for _, jt, jf, _ in program):
        raise ValueError("seccomp program: a jump out of range")
    return program


def bar_descriptors(fds) -> None:
    """Install filter_program(fds) on the calling thread (prctl: this
    thread and those it starts later; never the others)."""
    import ctypes
    program = filter_program(fds)

    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                    ("k", ctypes.c_uint)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    array = (SockFilter * len(program))(*[SockFilter(*ins) for ins in program])
    prog = SockFprog(len(program), array)
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
