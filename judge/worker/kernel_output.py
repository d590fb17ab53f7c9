"""Where what a kernel prints goes: a descriptor of the worker's own, not 1.

tl.device_print (and print in a kernel) writes the values a kernel holds. On
a GPU the CUDA driver writes them through the C library's `stdout` stream;
on the CPU the worker writes them itself (judge.worker.interpret). Both went
to descriptor 1, which the file may point anywhere with os.dup2: a file that
pointed it at a file of its own read every printed block back, a host copy
of the data (prints_read_back_through_descriptor.py). Children of the worker
(ptxas) need dup2 onto 1 and 2 themselves, so those cannot be barred.

So at the worker's start, before CUDA or anything of a submission, the
standard output is copied to KERNEL_OUTPUT (close-on-exec) and the C
library's `stdout` is made a stream on that copy. The seccomp filter of the
main thread (judge.worker.courier) refuses to close it or to make it the
target of dup2/dup3; a file cannot reach the C library's `stdout` without
ctypes, which the rules refuse. The worker's standard output is a socket
(judge.isolation), so no descriptor reopens it for reading through /proc.
"""

from __future__ import annotations

import os

KERNEL_OUTPUT = 890  # below the courier's (judge.worker.courier.HIGH_FD)


def install() -> bool:
    """Copy descriptor 1 to KERNEL_OUTPUT and point the C library's stdout
    at it (line-buffered). False where the C library's stream stays as it
    was (no glibc-like C library): a GPU's printf then still goes to
    descriptor 1."""
    os.dup2(1, KERNEL_OUTPUT, inheritable=False)
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.fdopen.restype = ctypes.c_void_p
        libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
        libc.setvbuf.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t]
        libc.fflush.argtypes = [ctypes.c_void_p]
        stream = libc.fdopen(KERNEL_OUTPUT, b"w")
        if not stream:
            return False
        libc.setvbuf(stream, None, 1, 0)  # _IOLBF: a line out as soon as it is printed
        stdout = ctypes.c_void_p.in_dll(libc, "stdout")
        libc.fflush(stdout.value)  # nothing of the old stream left behind
        stdout.value = stream
    except (OSError, AttributeError, ValueError):
        return False
    return True


def emit(data: bytes, write=os.write) -> None:
    """A line a kernel printed under the interpreter, out where the file
    cannot read it back. Lost if that fails, as a GPU's printf to a
    closed stream is."""
    try:
        write(KERNEL_OUTPUT, data)
    except OSError:
        pass


def print_from_interpreter(builder) -> None:
    """tl.device_print and print in a kernel: on a GPU, printf to the
    process's standard output itself, where solve cannot read it back.
    The interpreter printed through Python's print and numpy's formatting,
    both of which the file can replace (sys.stdout swapped for a buffer,
    a numpy formatter called with every value): a host round trip of the
    data. Here the values are formatted by the worker's own code
    (judge.worker.kernel_rewrites, which does the same for print()) and
    written where a GPU's printf goes (judge.worker.kernel_output)."""
    from judge.worker.kernel_rewrites import block_text

    def create_print(self, prefix, hex, values, isSigned):
        head = f"({self.grid_idx[0]}, {self.grid_idx[1]}, {self.grid_idx[2]})" + (f" {prefix}" if prefix else "")
        for value in values:
            emit(f"{head} {block_text(value.data, hex)}\n".encode())

    builder.create_print = create_print
