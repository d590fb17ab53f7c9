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
import struct

from judge import protocol

HIGH_FD = 900  # the barred descriptors are moved up here: out of the way of exit codes and small numbers
COMPLAINT_MAX = 8192  # bytes of a complaint read (judge.worker.audit writes at most these)

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
X32_BIT = 0x40000000

# Classic BPF, as seccomp reads it.
_LD_W_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000


class Courier:
    """Owns the socket to the judge. `send` and `recv` are called from the
    main thread; the socket itself is touched only by the courier's threads."""

    def __init__(self, sock: socket.socket):
        fd = _move_up(sock.detach())
        self._sock = socket.socket(fileno=fd)
        self._sock.setblocking(True)
        theirs, mine = socket.socketpair()
        self._complaints = socket.socket(fileno=_move_up(theirs.detach()))
        self.complaint_fd = mine.detach()  # written by the audit hook, in any thread
        os.set_inheritable(self.complaint_fd, False)
        self._write_lock = _thread.allocate_lock()
        self._inbox: list = []
        self._inbox_ready = _thread.allocate_lock()
        self._inbox_ready.acquire()
        self._outbox: list = []
        self._outbox_ready = _thread.allocate_lock()
        self._outbox_ready.acquire()
        self._sent = _thread.allocate_lock()
        self._sent.acquire()
        self.barred = (self._sock.fileno(), self._complaints.fileno())
        _thread.start_new_thread(self._read_loop, ())
        _thread.start_new_thread(self._send_loop, ())

    # --- main thread -------------------------------------------------------------

    def recv(self) -> dict:
        """The judge's next request (EOFError once it has hung up)."""
        self._inbox_ready.acquire()
        message = self._inbox.pop(0)
        if message is None:
            self._inbox.append(None)  # and every later call
            self._inbox_ready.release()
            raise EOFError("the judge closed the connection")
        return message

    def send(self, header: dict, blobs=()) -> None:
        """Reply; returns once the bytes are written. The caller keeps the
        blobs alive meanwhile, so their last reference never drops in the
        courier's threads."""
        blobs = list(blobs)
        raw = protocol.encode_header(header, blobs)  # serialised here, in the caller's thread
        self._outbox.append((raw, blobs))
        self._outbox_ready.release()
        self._sent.acquire()

    def bar_this_thread(self) -> bool:
        """Install the filter on the calling thread (and every thread it
        starts from now on): no system call on the courier's descriptors.
        False where the kernel has no seccomp filters (or this is no x86-64
        Linux): there the line is as open as any descriptor."""
        try:
            bar_descriptors(self.barred)
        except (OSError, AttributeError):
            return False
        return True

    # --- courier threads ---------------------------------------------------------

    def _read_loop(self) -> None:
        try:
            while True:
                ready, _, _ = select.select([self._sock, self._complaints], [], [])
                if self._complaints in ready:
                    self._forward_complaint()
                msg, _ = protocol.recv(self._sock)
                self._inbox.append(msg)
                self._inbox_ready.release()
        except BaseException:  # noqa: BLE001 - EOF, or a broken line: the worker's loop ends
            self._inbox.append(None)
            self._inbox_ready.release()

    def _send_loop(self) -> None:
        while True:
            self._outbox_ready.acquire()
            raw, blobs = self._outbox.pop(0)
            try:
                with self._write_lock:
                    self._sock.sendall(raw)
                    for blob in blobs:
                        self._sock.sendall(blob)
            except OSError:
                pass  # the judge is gone: the read loop ends the worker's loop
            del raw, blobs  # before the main thread goes on: it drops the last references
            self._sent.release()

    def _forward_complaint(self) -> None:
        """A violation: answered `rejected` with its text, and the worker ends.
        Anything at all on this line is a violation: only the audit hook
        writes here, and nothing but bad news can come of writing to it."""
        text = b""
        try:
            self._complaints.settimeout(1.0)
            head = self._complaints.recv(4, socket.MSG_WAITALL)
            size = struct.unpack(">I", head)[0] if len(head) == 4 else 0
            text = self._complaints.recv(min(size, COMPLAINT_MAX), socket.MSG_WAITALL)
        except (OSError, struct.error):
            pass
        message = text.decode("utf-8", "replace")
        if not message.startswith("rule: "):  # not the audit hook's words: the file wrote here
            message = "rule: the worker's complaint line was written to by the submission"
        raw = protocol.encode_header({"status": "rejected", "message": message}, [])
        try:
            with self._write_lock:
                self._sock.sendall(raw)
        finally:
            os._exit(3)


def _move_up(fd: int) -> int:
    """`fd` moved to HIGH_FD or above, closed on exec."""
    import fcntl
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
    os.close(fd)
    return moved


def filter_program(fds) -> list[tuple[int, int, int, int]]:
    """The seccomp program, as (code, jt, jf, k) instructions: EBADF for a
    system call on one of `fds` where the calls above take a descriptor,
    ENOSYS for the calls refused outright, anything else allowed. A linear
    chain of blocks, one per call: `nr == call` enters its block, which
    loads each descriptor argument in turn and ends in allow or EBADF."""
    fds = list(fds)
    positions: dict[int, list[int]] = {}
    for table, position in ((FD_FIRST, 0), (FD_SECOND, 1), (FD_THIRD, 2)):
        for nr in table:
            positions.setdefault(nr, []).append(position)
    program = [(_LD_W_ABS, 0, 0, 4), (_JEQ, 1, 0, AUDIT_ARCH_X86_64), (_RET, 0, 0, _ALLOW),
               (_LD_W_ABS, 0, 0, 0), (_JGE, 0, 1, X32_BIT), (_RET, 0, 0, _ERRNO | errno.ENOSYS)]
    for nr, where in sorted(positions.items()):
        body = []
        for position in where:
            body.append((_LD_W_ABS, 0, 0, 16 + 8 * position))  # the low half: a descriptor is an int
            body += [(_JEQ, None, 0, fd) for fd in fds]
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
