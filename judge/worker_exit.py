"""What a worker leaves the judge besides its answers: its standard output
and error, drained and capped on threads of the judge's, and the words for
how it ended when it ended before answering."""

from __future__ import annotations

import signal
import threading


class CappedStream:
    """Drains a pipe on a thread, keeping the first `cap` bytes: a flood costs
    the judge neither memory nor disk, and never blocks the worker."""

    def __init__(self, pipe, cap: int):
        self.cap = cap
        self.head = bytearray()
        self.total = 0
        self._thread = threading.Thread(target=self._drain, args=(pipe,), daemon=True)
        self._thread.start()

    def _drain(self, pipe) -> None:
        while True:
            chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
            if not chunk:
                break
            self.total += len(chunk)
            room = self.cap - len(self.head)
            if room > 0:
                self.head += chunk[:room]
        pipe.close()

    def text(self, join_timeout: float = 2.0) -> str:
        self._thread.join(join_timeout)
        out = self.head.decode("utf-8", errors="replace")
        if self.total > len(self.head):
            out += f"\n… [{self.total - len(self.head):,} more bytes dropped]"
        return out


def describe_exit(returncode: int | None, wrapped: bool = False) -> str:
    """`wrapped`: the worker ran under a sandbox tool, which reports a signal
    that killed its child as exit status 128 + the signal's number."""
    if returncode is None:
        return "the worker stopped answering"
    if wrapped and 128 < returncode < 128 + 65:
        returncode = 128 - returncode
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = " (the host may have run out of memory)" if name == "SIGKILL" else ""
        return f"the process was killed by {name}{hint}"
    return f"the process exited with status {returncode} before reporting"
