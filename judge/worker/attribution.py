"""Reading the stack for the audit hook (judge.worker.audit): whose code is
behind an event, a gate's call (judge.worker.gates), a new thread, or a torch
operator. Frames are told apart by their code objects, which cannot claim
another file's name (the hook refuses code compiled under one). The readers
are made inside the hook's closure, over sets it alone fills, and nothing
else refers to them."""

from __future__ import annotations

import os
import sys

from judge.worker.refusals import named_builtins


class Known:
    """What the hook learns once, before the seal closes: the guard's own
    code that may go through a gate, the guard's start of a thread, the
    gates' stand-ins, torch's folder, the worker's own files, the guard's
    files, and the judge's calls of code it trusts (LeetGPU's generators)."""

    __slots__ = ("gate_codes", "thread_codes", "skipped_codes", "torch_dir", "judge_files", "passed_files",
                 "trusting_codes", "genuine", "windows")

    def __init__(self):
        self.gate_codes = self.thread_codes = self.skipped_codes = frozenset()
        self.judge_files = self.passed_files = self.trusting_codes = frozenset()
        self.torch_dir = None
        self.genuine = None  # the import check (judge.worker.genuine_import), frozen as the seal closes
        self.windows = None  # (files, codes) where the worker computes on its own once the file is loaded

    def fill(self, gate_codes, thread_codes, stand_in_codes, torch_dir, judge_files, passed_files,
             trusting_codes) -> None:
        self.gate_codes, self.thread_codes = frozenset(gate_codes), frozenset(thread_codes)
        self.skipped_codes, self.torch_dir = frozenset(stand_in_codes), torch_dir
        self.judge_files, self.passed_files = frozenset(judge_files), frozenset(passed_files)
        self.trusting_codes = frozenset(trusting_codes)


def library_roots(submission: str) -> tuple[str, ...]:
    """Folders of installed code: the import path as the worker started,
    less any folder holding the worker's scratch folder or the submission
    (where a file could have been written)."""
    writable = [os.path.realpath(p) for p in (os.getcwd(), os.path.dirname(submission))]
    roots: list[str] = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        forms = {os.path.normpath(entry), os.path.realpath(entry)}
        if any(w == f or w.startswith(f + os.sep) or f.startswith(w + os.sep) for w in writable for f in forms):
            continue
        roots += [f + os.sep for f in forms if f + os.sep not in roots]
    return tuple(roots)


def top_package(filename: str, roots: tuple[str, ...]) -> str | None:
    """The top-level module an installed file belongs to (site-packages/cupy/x.py:
    "cupy"), or None outside the import path."""
    for root in roots:
        if filename.startswith(root):
            first = filename[len(root):].split(os.sep, 1)[0]
            return first.split(".", 1)[0]
    return None


def readers(submission: str, trusted: frozenset, roots: tuple[str, ...], known: Known):
    """(blame, innermost_is_submission, gate_allows, thread_allowed, origin, written_by_submission,
    names_the_gate, file_on_stack), each taking the innermost frame to read from."""
    # Builtins bound here, for the frame readers: a file can swap builtins' own at any moment.
    any, bool, frozenset, getattr, hasattr, set, str, tuple = named_builtins("any bool frozenset getattr hasattr set str "
                                                                            "tuple")
    import weakref
    # Library code that calls back what someone handed it, at a moment of its
    # own (a finalizer run by the collector in the middle of the worker's
    # code): what it calls is never the worker's doing.
    # The worker's plain() and release() likewise: they only drop what the file
    # hung on the call's tensors, and whatever runs as it dies is the file's
    # (a weakref callback, methodcaller of a partial of torch.mm, had passed
    # for the worker's own operator: accepted).
    from judge.worker import buffers
    callbacks = frozenset({weakref.finalize.__call__.__code__, buffers.plain.__code__, buffers.release.__code__})

    from judge.worker import genuine_import
    genuine = known.genuine = genuine_import.checker()

    def library_import(frame) -> bool:
        """Module-level code of an installed file, run by a real first import
        of it (not a file the worker could have written, nor code compiled
        under an invented name, nor its code run again: genuine_import)."""
        code = frame.f_code
        filename = code.co_filename
        return (code.co_name == "<module>" and filename != submission and filename.startswith(roots)
                and genuine(frame))

    def unknown(filename: str) -> bool:
        """Code of no file the worker knows: compiled from a string, by the
        file (a thread's target, an import hook run inside a library's own
        import) or by a library on the file's behalf. Either way it speaks
        for whoever made it, never for an installed library."""
        return not (known_file(filename) or filename in known.judge_files)

    def blame(frame, through_imports: bool = False) -> bool:
        """Is the submission's own code behind this event? Its file's code
        nearer than any trusted frame and than another module's own
        initialisation (an import); or code of no known file anywhere on the
        stack, unless the judge runs it on purpose (a LeetGPU challenge's
        own code, compiled from the clone's text: `trusting_codes`).
        `through_imports`: an import the file started is no excuse either
        (a library's real first import called what the file had put in
        place of one of threading's names: sys.setprofile, for the file)."""
        made = False  # code of no known file seen
        while frame is not None:
            code = frame.f_code
            if code in known.trusting_codes:
                return not on_purpose(frame)
            if code in trusted:
                return made
            if code.co_filename == submission:
                return True
            if unknown(code.co_filename):
                made = True
            elif not through_imports and library_import(frame):
                return made  # another module's own initialisation (an import), unless made code runs in it
            frame = frame.f_back
        return made

    def gate_allows(frame, mode_stack: bool = True) -> bool:
        """May this call through a gate (judge.worker.gates) go on? Only as
        torch's own work for the guard (its mode entering or leaving: a gate
        of the mode stack, `mode_stack`) or for an import: the first frame
        outside torch must be the guard's or an installed module's
        initialisation. (The guard never calls a kernel below the modes: a
        builtin the file hands to the guard's thread start has no frame of
        its own, and the guard's would speak for it.)"""
        torch_dir = known.torch_dir
        while frame is not None:
            code = frame.f_code
            if code in known.gate_codes:
                return mode_stack
            if code in known.skipped_codes or (torch_dir and code.co_filename.startswith(torch_dir)):
                if code.co_name == "<module>":
                    # torch importing a module of its own, unless the file started the import
                    return genuine(frame) and not blame(frame.f_back, True)
                frame = frame.f_back
                continue
            # A library's import, unless the file started it: its top-level code had
            # called torch's own _pop_mode for the file (a partial in threading.RLock's place).
            return library_import(frame) and not blame(frame.f_back, True)
        return False

    def thread_allowed(frame) -> bool:
        """A new thread: through the guard's Thread.start in solve (the
        thread then runs under the rules), or not the submission's doing.
        A thread the submission starts otherwise (at import, or with
        _thread directly) would run torch without the guard."""
        while frame is not None:
            code = frame.f_code
            if code in known.thread_codes or code in trusted:
                return True
            if code.co_filename == submission or code in callbacks or unknown(code.co_filename):
                # A library's import the file started is no excuse (its top-level
                # `_lock = threading.RLock()` started the file's thread, RLock swapped).
                return False
            frame = frame.f_back
        return True

    def origin(frame) -> str:
        """Whose code asks for a torch operator: "judge" (the worker's own),
        "triton" (the judge's wrapper around a Triton launch) or
        "submission" (the file, code it compiled, a finalizer or a patched
        function of its own: anything else). The innermost frame that is
        neither an installed library's nor the guard's own decides, by its
        code (which cannot claim another file's name); code of no known file
        counts as the submission's, unless the judge runs it on purpose (a
        LeetGPU challenge's own input generator: `trusting_codes`)."""
        made = False  # code of no known file seen
        while frame is not None:
            code = frame.f_code
            filename = code.co_filename
            if filename == submission or code in callbacks:
                return "submission"  # a finalizer calls whatever it was handed (a builtin too)
            if code in known.trusting_codes:
                return "judge" if on_purpose(frame) else "submission"
            if code in trusted:
                return "submission" if made else "triton"
            if filename in known.judge_files:
                return "submission" if made else caller_of_own(frame.f_back, in_window(frame))
            if not known_file(filename):
                made = True
            frame = frame.f_back
        return "submission"

    def on_purpose(frame) -> bool:
        """Code the judge trusts (`trusting_codes`), called by the worker
        itself: no frame of the file's, nor of no known file, further out.
        The file can import the generator and call it on code of its own
        (a probe's ctypes and the collector's lists passed for the judge's)."""
        frame = frame.f_back
        while frame is not None:
            name = frame.f_code.co_filename
            if name == submission or unknown(name):
                return False
            frame = frame.f_back
        return True

    def known_file(filename: str) -> bool:
        return filename in known.passed_files or filename.startswith(roots) or filename.startswith("<frozen ")

    def in_window(frame) -> bool:
        """Is this frame of the worker's own one of its windows (or is the file
        not loaded yet)? Its own frame counts: under Python 3.12 a comprehension
        in _as_bytes has no frame of its own."""
        windows = known.windows
        return windows is None or frame.f_code.co_filename in windows[0] or frame.f_code in windows[1]

    def caller_of_own(frame, inside: bool = False) -> str:
        """The worker's own code asks: "judge" when the worker itself called
        it (its main loop, or its Triton wrapper running the CPU mode's
        launch checks), "submission" when the file did (a reply writer
        swapped for the file's, a grid function of its own: either could
        call the worker's functions to read tensors on the host)."""
        windows = known.windows
        inside = inside or windows is None  # before the file is loaded: all the worker's code is its own
        while frame is not None:
            code = frame.f_code
            if code in trusted or code in known.trusting_codes:
                return "judge"
            filename = code.co_filename
            if filename == submission or code in callbacks or not (filename in known.judge_files
                                                                    or known_file(filename)):
                return "submission"
            inside = inside or filename in windows[0] or code in windows[1]
            frame = frame.f_back
        # Once the file is loaded, the worker computes only in its draws, its
        # check sums and its reply: anywhere else an operator the worker seems to
        # ask for was run by a callable of the file's with no frame of its own
        # (sorted swapped in builtins, a weakref's callback fired as the guard
        # put Thread.start back: each ran torch.add after solve).
        return "judge" if inside else "submission"

    import inspect
    import traceback
    # inspect.currentframe, stack...: frames for whoever asks. traceback's
    # walkers hand frames out too (a file walked a traceback with walk_tb up
    # to the worker's objects and rewrote its guard's refusals), but the rest
    # of traceback uses them up itself and hands out text (print_exc,
    # format_exc, extract_stack in an honest file's except block): only the
    # walkers count, and a walk that meets the rest of traceback stops there.
    # (asyncio's Task.get_stack reads a running coroutine's frame, whose
    # callers lead to the worker as well; its file found without importing it.)
    # logging.currentframe is sys._getframe(1) for whoever calls it: a file
    # that calls it gets its own frame, and the worker's above it; logging's
    # own findCaller, which calls it for every record, hands out only text.
    import importlib.util
    import logging
    tasks = getattr(importlib.util.find_spec("asyncio.base_tasks"), "origin", None)
    handing = frozenset({inspect.__file__} | ({tasks} if tasks else set()))
    walkers = frozenset([getattr(traceback, name).__code__ for name in ("walk_tb", "walk_stack",
                                                                        "_walk_tb_with_full_positions")
                         if hasattr(traceback, name)]
                        + [code for code in [getattr(getattr(logging, "currentframe", None), "__code__", None)]
                           if code is not None and code.co_filename == logging.__file__])

    def innermost_is_submission(frame) -> bool:
        """The file's code (or code of no known file) asks for a frame
        itself, or a library's top-level code does, in an import the file
        started (a partial of sys._getframe in threading.RLock's place had
        webbrowser's import hand the file its own frame, and the worker's
        beyond it)."""
        while frame is not None and (frame.f_code in trusted or frame.f_code in walkers
                                     or frame.f_code.co_filename in handing):
            frame = frame.f_back
        if frame is not None and frame.f_code.co_name == "<module>" and library_import(frame):
            return blame(frame.f_back, True)
        return frame is not None and (frame.f_code.co_filename == submission or unknown(frame.f_code.co_filename))

    def names_the_gate(frame, name: str) -> bool:
        """Does the code that called this gate's stand-in (`frame`) name the
        gated function itself, as torch's, a library's and the guard's own
        calls do? A library's top-level `_sentinel = object()` calling a
        partial of the mode-stack gate (its `object` swapped) does not.
        Contained, not equal: threading calls _thread.start_new_thread as
        _start_new_thread."""
        attr = name.rpartition(".")[2]
        caller = frame.f_back
        return caller is None or caller.f_code in known.gate_codes or any(attr in n for n in caller.f_code.co_names)

    def file_on_stack(frame) -> bool:
        """The file's code, or code of no known file, anywhere on the stack,
        whatever import or trusted code lies between (unless the judge runs
        it on purpose: `trusting_codes`)."""
        while frame is not None:
            code = frame.f_code
            if code in known.trusting_codes:
                return not on_purpose(frame)
            if code.co_filename == submission or unknown(code.co_filename):
                return True
            frame = frame.f_back
        return False

    def written_by_submission(frame) -> bool:
        """Is the first frame outward that is not an installed library's the
        file's code, or code of no known file? (unittest.mock's
        patch.object swapped a judge table for a moment from its own frame.)
        The worker's own code, or no such frame: no."""
        while frame is not None:
            code = frame.f_code
            if code.co_filename == submission or unknown(code.co_filename):
                return True
            if code in trusted or code.co_filename in known.judge_files or code.co_filename in known.passed_files:
                return False
            frame = frame.f_back
        return False

    return (blame, innermost_is_submission, gate_allows, thread_allowed, origin, written_by_submission, names_the_gate,
            file_on_stack)


def same_source(filename: str, source) -> bool:
    """A real import compiles the file's own text; anything else claiming a
    library's file name is a forgery."""
    if not isinstance(source, (str, bytes)):
        return False
    try:
        with open(filename, "rb") as fh:
            text = fh.read()
    except OSError:
        return False
    return text == (source.encode() if isinstance(source, str) else source)
