"""The judge's own exceptions.

    JudgeError            base: anything the judge raises on purpose
    ├── UsageError        the user asked for something impossible (bad path, unknown challenge)
    └── WorkerError       the worker child failed to answer
        ├── WorkerDied    it exited or was killed by a signal
        ├── WorkerTimeout it ran past its wall-clock limit (and was killed)
        └── ProtocolError it sent a malformed or oversized message
"""


class JudgeError(Exception):
    pass


class UsageError(JudgeError):
    pass


class WorkerError(JudgeError):
    pass


class WorkerDied(WorkerError):
    def __init__(self, message: str, returncode: int | None):
        super().__init__(message)
        self.returncode = returncode


class WorkerTimeout(WorkerError):
    pass


class ProtocolError(WorkerError):
    pass
