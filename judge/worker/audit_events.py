"""The audit hook's checks of Python's own events (judge.worker.audit).

Which of CPython's audit events the submission's own code may not raise:
imports of compute and foreign-function libraries, frame introspection,
rewriting functions, code compiled under another file's or a frozen
module's name, code objects made from bytes, signals to other processes,
and the tables of judge.worker.refusals (the collector's lists, tracing
hooks, new processes and sockets). The hook makes one checker before the
file is imported; it holds what it reads in its closure, as the hook does.
"""

from __future__ import annotations

import os

from judge.worker import attribution
from judge.worker.refusals import DENIED_IMPORTS, FRAME_ATTRS, REFUSED, TRACING, named_builtins

# Environment variables that choose what native code a program loads or a
# compiler builds (Triton's compiles run ptxas and the C compiler with the
# worker's environment): LD_PRELOAD had put a file's code in them.
_STEERING = frozenset({"CC", "CXX", "GCC_EXEC_PREFIX", "PYTHONHOME", "PYTHONSTARTUP", "TRITON_HOME",
                       "TRITON_CACHE_DIR"})


def steers_native_code(name: str) -> bool:
    upper = name.upper()
    return upper.startswith("LD_") or upper.endswith("PATH") or upper in _STEERING


# A process's memory as a file (/proc/PID/mem, /proc/PID/task/TID/mem):
# the kernel lets a process read and write its own whatever its sandbox, so
# through it a file rewrote the guard's strings (torch.mm passed for an
# allowed view) and read its inputs past every gate. No one in a worker
# opens a file of that name. A path relative to a directory descriptor
# (os.open's dir_fd) cannot be resolved here, so the name alone decides,
# and no link may be made to such a file under another name.
MEMORY_FILE = "mem"


def checker(submission: str, roots, known, blame, innermost_is_submission, reaches_file, real_bytecode,
            tracers: frozenset, refuse, native_ok, program_ok):
    """check(event, args, frame): refuse (through `refuse`) what the event
    asks when the submission's code asks it; `frame` is the caller of
    sys.audit. The readers (`blame`...) are the hook's (judge.worker.attribution);
    `native_ok(path)`: may the extension module there load; `program_ok(path)`:
    may a process start that program (judge.worker.native_code)."""
    # Bound now: a file can swap builtins, module names and os functions at any moment.
    bytes, getattr, isinstance, str = named_builtins("bytes getattr isinstance str")
    denied_imports, frame_attrs, refused_events, tracing_events = DENIED_IMPORTS, FRAME_ATTRS, REFUSED, TRACING
    same_source, top_package, steers = attribution.same_source, attribution.top_package, steers_native_code
    isabs, own_pid = os.path.isabs, os.getpid()
    type_of, decode, rpartition = type, bytes.decode, str.rpartition

    def last_part(path) -> str | None:
        """The last component of a path as an open event gives it (str or
        bytes: io.open and os.open have turned a path object into one), else
        None (a descriptor, or an object io.FileIO was handed)."""
        if type_of(path) is bytes:
            path = decode(path, "utf-8", "surrogateescape")
        if type_of(path) is not str:
            return None
        return rpartition(path, "/")[2]

    def judges_own(function) -> bool:
        """A function of the worker's or the guard's own files (their
        defaults bind what the courier and the protocol call; a named
        tuple's constructor, made by the library for the file, is not)."""
        code = getattr(function, "__code__", None)
        filename = getattr(code, "co_filename", None)
        return filename in known.judge_files or filename in known.passed_files

    def check(event: str, args, frame) -> None:
        if event == "import":
            # An extension module names its file (_imp.create_dynamic): whoever
            # asks, native code loads from the install or the judge's builds only.
            if len(args) > 1 and isinstance(args[1], str) and not native_ok(args[1]):
                refuse(f"no native code but the installed libraries' and Triton's own (loading {args[1]})")
            top = str(args[0]).partition(".")[0]
            if top in denied_imports and blame(frame, True):
                refuse(f"no compute or foreign-function library: import {args[0]}")
        elif event == "object.__getattr__":
            if args[1] in frame_attrs and innermost_is_submission(frame):
                refuse(f"no frame introspection ({args[1]})")
            # What the judge's own functions bind in their defaults (the CPU
            # mode's records, the modules behind their stand-ins) is theirs:
            # a module's names are within a file's reach, defaults no longer.
            if args[1] in ("__defaults__", "__kwdefaults__") and judges_own(args[0]) and blame(frame, True):
                refuse(f"no reading the judge's own functions' {args[1]}")
        elif event == "sys._getframe":
            if innermost_is_submission(frame):
                refuse("no frame introspection (sys._getframe)")
        elif event == "object.__setattr__":
            if (args[1] in ("__code__", "__globals__", "__closure__") or (
                    args[1] in ("__defaults__", "__kwdefaults__") and judges_own(args[0]))) and blame(frame, True):
                refuse(f"no rewriting of functions ({args[1]})")
        elif event == "compile":
            filename = args[1] if len(args) > 1 else None
            if isinstance(filename, bytes):
                filename = filename.decode(errors="replace")
            # Under an absolute name, code claims to be a file's own:
            # module-level code of a library counts as an import.
            if isinstance(filename, str) and filename != submission and isabs(filename) \
                    and blame(frame, True) and not same_source(filename, args[0]):
                refuse(f"no code compiled under another file's name ({filename})")
            # Python's own frozen modules are known by such names (code
            # compiled as "<frozen triton/...>" passed for Triton's own).
            if isinstance(filename, str) and filename.startswith("<frozen") and blame(frame, True):
                refuse(f"no code compiled under a frozen module's name ({filename})")
        elif event == "exec":
            # A refused library's module run by importlib.import_module, which raises
            # no import event of its own (mpmath had loaded that way for the file).
            filename = getattr(args[0], "co_filename", None) if args else None
            if isinstance(filename, str) and top_package(filename, roots) in denied_imports and blame(frame, True):
                refuse(f"no compute or foreign-function library: {top_package(filename, roots)}")
        elif event in ("os.putenv", "os.unsetenv"):
            name = args[0].decode(errors="replace") if isinstance(args[0], bytes) else str(args[0])
            if steers(name) and blame(frame, True):
                refuse(f"no changing the environment programs start with ({name})")
        elif event == "open":
            path = args[0] if args else None
            if last_part(path) == MEMORY_FILE:
                refuse("no opening a process's memory (/proc/PID/mem)")
            # io.FileIO asked __fspath__ already: asked again, an object of
            # the file's own could name another file here.
            if last_part(path) is None and not isinstance(path, int) and blame(frame, True):
                refuse(f"no opening files through a path object of its own ({type(path).__name__})")
        elif event == "os.symlink":
            if last_part(args[0] if args else None) in (MEMORY_FILE, None):
                refuse("no links to a process's memory (or through a path object)")
        elif event == "marshal.loads":
            if blame(frame, True) and not real_bytecode(frame):
                refuse("no code objects made from bytes (marshal.loads)")
        elif event == "os.kill":
            if args[0] not in (own_pid, 0) and blame(frame):
                refuse("no signals to other processes: os.kill")
        else:
            if event in ("subprocess.Popen", "os.posix_spawn", "os.posix_spawnp", "os.exec"):
                # Whoever starts it (a trusted launch runs ptxas from the path Triton's
                # knobs give): no program the worker could have written.
                program = args[0] if args else None
                if program is None and event == "subprocess.Popen" and len(args) > 1:
                    given = args[1]
                    program = given if isinstance(given, (str, bytes)) else (
                        given[0] if isinstance(given, (list, tuple)) and given else None)
                if not program_ok(program):
                    refuse(f"no programs of its own (starting {program})")
            for prefix, what in refused_events:
                if event.startswith(prefix):
                    # The collector's lists and other threads' frames: no import excuses them
                    # (a planted module had webbrowser's real import fetch gc's list).
                    # Tracing hooks: from no one's code but the worker's tracer. A library
                    # set the file's (threading's bootstrap for threading.setprofile, a
                    # partial of sys.setprofile called by a library's real import), and
                    # its calls handed over the gates' originals (judge.worker.gates).
                    if prefix in tracing_events and frame.f_code not in tracers:
                        refuse(f"{what}: {event}")
                    # Nor does an import the file started excuse the rest.
                    if blame(frame, True) or (prefix.startswith(("gc.", "sys._current")) and reaches_file(frame)):
                        refuse(f"{what}: {event}")
                    break

    return check
