"""The worker's request loop: load the submission, run cases, time solve.

Started by judge.isolation as `python -m judge.worker --fd N`, in a scratch
directory, with a scrubbed environment. It imports the submission, builds
each trial's inputs from the seed it is given, calls solve, and sends the
output buffer back. It never sees an expected output, so a submission that
walks the garbage collector or its caller's frames finds nothing to copy.
Everything here may be tampered with by the submission; the judge trusts
none of it beyond "these are the bytes that ended up in c".
"""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib.util
import inspect
import os
import sys
import time

from judge.protocol import NO_LAUNCH
from judge.worker import buffers as buffers_mod
from judge.worker import copy_extent, launches
from judge.worker.outcomes import classify, reaches_a_function, short_traceback

def _violations() -> list[str]:
    """What the audit hook recorded (after checking its seals); empty before
    it is installed."""
    from judge.worker import audit
    return audit.violations() if audit._installed else []


def _as_bytes(buffers: list, view_of=memoryview) -> list:
    """Each tensor's bytes, for the socket (copied to the host first), through
    torch's C class, whose methods no file can replace: torch.Tensor's own
    can be (a property of the file's as torch.Tensor.cpu ran torch.add with
    no frame of the file's as the worker read the output: accepted)."""
    from judge.worker import pristine
    base = pristine.tensor_base()
    return [view_of(base.numpy(base.cpu(b))).cast("B") for b in buffers]  # (memoryview bound as defined)


class Worker:
    def __init__(self, link, startup: dict | None = None):
        self.link = link  # judge.worker.courier.Courier: the only way to the judge
        self.startup = startup or {}
        self.solve = None
        self.device = "cpu"
        self.guard = None
        self._shared: list = []  # buffers handed over by CUDA IPC, kept alive until the next request

    def reply(self, header: dict, blobs=()) -> None:
        self.link.send(header, list(blobs))

    def reply_buffers(self, header: dict, buffers: list, share: bool) -> None:
        """Send `buffers` (contiguous tensors) as bytes, or, when the judge
        asked for it and the driver allows, as CUDA IPC handles it copies
        from (judge.cuda_ipc): no trip through the host."""
        broken = _violations()  # the file's code may have run since solve's check (a finalizer as its arguments died)
        if broken:
            return self.reply({"status": "rejected", "message": broken[0]})
        if share and self.device == "cuda":
            import torch
            try:
                torch.cuda.synchronize()
                from judge import cuda_ipc
                shared = cuda_ipc.export(buffers)
            except Exception:  # noqa: BLE001 - IPC unavailable here: the socket it is
                shared = None
            if shared is not None:
                self._shared = buffers
                return self.reply(dict(header, shared=shared))
        self.reply(header, _as_bytes(buffers))

    def resend(self, msg: dict) -> None:
        """The last shared buffers again, as bytes (the judge could not map them)."""
        buffers, self._shared = self._shared, []
        self.reply({"status": "ok"}, _as_bytes(buffers))

    def serve(self) -> None:
        while True:
            try:
                msg = self.link.recv()
            except EOFError:
                return
            op = msg.get("op")
            if op != "bytes":
                self._shared = []  # the judge has copied them (or will not)
            handler = {"load": self.load, "run": self.run, "time": self.time, "buffers": self.buffers,
                       "bytes": self.resend}.get(op)
            if handler is None:
                self.reply({"status": "internal_error", "message": f"unknown op {op!r}"})
                continue
            handler(msg)
            if self.solve is not None:
                # The collector is off once the file is loaded (judge.worker.courier):
                # its garbage is collected here, in this thread, under the filter.
                gc.collect()

    # --- load ------------------------------------------------------------------

    def load(self, msg: dict) -> None:
        self.device = msg["device"]
        began = time.monotonic()
        if self.device == "cuda":
            import torch
            if not msg.get("emulate_tf32", True):
                # A GPU without TF32 asked for (LeetGPU's T4): a tl.dot left
                # at its default precision computes in IEEE float32 here too.
                os.environ["TRITON_F32_DEFAULT"] = "ieee"
            torch.cuda.init()
            fraction = msg.get("gpu_memory_fraction")
            if fraction:
                torch.cuda.set_per_process_memory_fraction(float(fraction))
            from judge import cuda_ipc
            try:  # now: once the audit hook is armed, ctypes is hidden
                cuda_ipc.bind()
            except cuda_ipc.Unavailable:
                pass  # buffers go by the socket
            from judge.worker import autotune
            autotune.install()
        else:
            from judge.worker import interpret
            interpret.install(emulate_tf32=msg.get("emulate_tf32", True))
            from judge.worker import cpu_cuda
            # A file's device="cuda", torch.cuda.synchronize(), streams: as on a GPU.
            cpu_cuda.install(msg["path"], tf32=msg.get("emulate_tf32", True))
        from judge.worker import raw_memory  # the interpreter's native memory access: its own launches only
        raw_memory.install(interpret.LAUNCH_CODE if self.device != "cuda" else None)
        import triton  # the judge says where kernels run: a file's TRITON_INTERPRET=1 failed on the GPU
        triton.knobs.runtime.interpret = self.device != "cuda"
        from judge.worker.rules import Guard
        path = msg["path"]
        trusted, sealed = launches.hook_triton(cuda=self.device == "cuda", submission=path)
        self.guard = Guard(submission=os.path.abspath(path), trusted=trusted,
                           refused=msg.get("refused_ops") or (), refused_why=msg.get("refused_why") or "",
                           whole_copies=bool(msg.get("whole_copies")))
        spec = importlib.util.spec_from_file_location("submission", path)
        module = importlib.util.module_from_spec(spec)
        self.guard.bind(module.__dict__, launches.__dict__)
        from judge.worker import arming, pristine
        pristine.record()  # what the worker's draws of the inputs run on (judge.worker.pristine)
        if self.device == "cpu":
            # What the file does to the interpreter is undone before each
            # launch, as a GPU (which never runs it) ignores it.
            from judge.worker import interpreter_state
            interpreter_state.record()
        prepared = time.monotonic()
        # From here on this thread, and every thread it starts, cannot touch
        # the judge's socket (a file wrote its own answers to it), and no
        # collection runs a finalizer of the file's in the courier's threads.
        self.startup["line_barred"] = self.link.bar_this_thread()
        gc.freeze()
        gc.disable()
        # The courier the answers go out by, sealed with the rest (a file swapped
        # the socket for a writer of its own that forged the outputs).
        # The instance's own names too: a method shadowed on it (self._call
        # made a partial of the reply) would run in the worker's place.
        own = [(self.__dict__, name) for name in ("link", "guard", "device",
                                                  *(n for n in vars(Worker) if not n.startswith("__")))]
        if self.device == "cpu":
            from judge.worker import interpret
            trusted = trusted | interpret.HELPER_CALLS
        arming.arm(os.path.abspath(path), self.guard, trusted, sealed + own, self.link.complaint_fd)
        armed = time.monotonic()
        # Everything before this line is the worker's own: a death before the
        # judge hears it is the judge's fault, never the file's (a batch had
        # recorded a judge bug as every student's runtime_error, and kept it).
        self.reply({"milestone": "importing"})

        source = open(path, encoding="utf-8-sig", errors="replace").read()
        try:
            tree = ast.parse(source, filename=os.path.basename(path))
        except SyntaxError as exc:
            return self.reply({"status": "compile_error", "message": short_traceback(exc)})
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        if not body:
            return self.reply({"status": "invalid_submission",
                               "message": f"the file is empty: it must define {msg.get('signature', 'solve')}"})
        sys.modules["submission"] = module

        try:
            spec.loader.exec_module(module)
        except SystemExit as exc:
            return self.reply({"status": "runtime_error",
                               "message": f"the file called exit({exc.code!r}) while loading"})
        except BaseException as exc:  # noqa: BLE001 - anything at import is the file's fault
            broken = _violations()
            if broken:
                return self.reply({"status": "rejected", "message": broken[0]})
            status = "memory_limit_exceeded" if classify(exc) == "memory_limit_exceeded" else "compile_error"
            return self.reply({"status": status, "message": short_traceback(exc)})
        broken = _violations()
        if broken:
            return self.reply({"status": "rejected", "message": broken[0]})
        solve = getattr(module, "solve", None)
        if solve is None:
            return self.reply({"status": "invalid_submission",
                               "message": "the file defines no function named solve"})
        if not reaches_a_function(solve):
            return self.reply({"status": "invalid_submission",
                               "message": f"solve is a {type(solve).__name__}, not a Python function"})
        arity = msg.get("arity", 6)
        try:
            inspect.signature(solve).bind(*range(arity))
        except TypeError:
            return self.reply({"status": "invalid_submission",
                               "message": f"solve{inspect.signature(solve)} cannot be called with "
                                          f"the {arity} arguments {msg.get('arg_names')}"})
        self.solve = solve
        self.guard.watch()  # from here on, the file's code runs under the rules wherever it runs
        # Where the load went (a diagnosis only: the file could have changed these numbers).
        self.startup.update(load_prepare_s=round(prepared - began, 3), load_arm_s=round(armed - prepared, 3),
                            load_import_s=round(time.monotonic() - armed, 3))
        self.reply({"status": "ok", "startup": self.startup})

    # --- run -------------------------------------------------------------------

    @staticmethod
    def _ordered(buffers: dict) -> list:
        return [buffers[name] for name in sorted(buffers)]

    def _call(self, args) -> dict | None:
        """Call solve once, under the rules; None on success, else the failure."""
        before = launches.launched()
        launches.forget_failure()
        failure = None
        try:
            try:
                with self.guard.armed():
                    self.solve(*args)
            finally:
                buffers_mod.plain(args)
            if self.device == "cuda":
                import torch
                torch.cuda.synchronize()
        except SystemExit as exc:
            failure = {"status": "runtime_error", "message": f"solve called exit({exc.code!r})"}
        except BaseException as exc:  # noqa: BLE001
            failure = {"status": classify(exc), "message": short_traceback(exc)}
            if self.device == "cpu":
                from judge.worker import races
                if isinstance(exc, races.RaceFound):
                    # Programs of one launch sharing memory without atomics: right under
                    # the interpreter, which runs them one by one; a GPU runs them at once.
                    failure = {"status": "wrong_answer", "message": str(exc)}
        failed = launches.failure()
        if failed and (failure is None or failure["status"] != failed[0]):  # solve caught what the launch raised
            failure = {"status": failed[0], "message": failed[1]}
        broken = _violations()
        if self.guard.violation or broken:
            return {"status": "rejected", "message": broken[0] if broken else self.guard.violation}
        if self.device == "cpu":
            from judge.worker import launch_watch
            slow = launch_watch.too_slow()
            if slow:  # the interpreter's speed, not the submission's: no verdict
                return {"status": "interpreter_too_slow", "message": slow[0], "estimate_s": round(slow[1], 1),
                        "programs": slow[2]}
        if failure:
            return failure
        if launches.launched() == before:  # run() lets it pass where the outputs are as they were
            return {"status": "rejected", "message": NO_LAUNCH, "no_launch": True}
        return None

    def run(self, msg: dict) -> None:
        """Each trial's output buffers, then (when asked, for the judge to check
        they are unchanged) its input buffers, all with their guard bands."""
        buffers = []
        if self.device == "cpu" and msg.get("interpreter_budget_s"):
            from judge.worker import launch_watch
            launch_watch.set_budget(float(msg["interpreter_budget_s"]))
        from judge.worker import autotune
        copy_extent.forget_handed()  # the buffers of earlier requests are no longer handed
        idle = []  # trials whose solve launched no kernel
        for trial, seed in enumerate(msg["seeds"]):
            args, outputs, inputs = buffers_mod.prepare(msg["plan"], seed, self.device)
            with autotune.quick(msg.get("quick_autotune")):
                failure = self._call(args)
            if failure and failure.pop("no_launch", False):
                # Said to the judge, which decides: a case that needs no work
                # (one element reversed in place) may return early.
                idle.append(trial)
                failure = None
            buffers_mod.release(args)  # what the file hung on them dies now, as the file's
            if failure:
                return self.reply(failure)
            buffers += self._ordered(outputs)
            if msg.get("return_inputs"):
                buffers += self._ordered(inputs)
        header = {"status": "ok", **({"no_launch": idle} if idle else {})}
        if self.device == "cpu":
            from judge.worker import races
            note = races.take_note()
            if note:
                header["note"] = note[:1000]  # said beside a wrong output (a diagnosis only)
        self.reply_buffers(header, buffers, share=bool(msg.get("share")))

    # --- time ------------------------------------------------------------------

    def time(self, msg: dict) -> None:
        """Time solve over several input sets (rotated); send the timing, the
        per-call summaries, and each set's final output."""
        import time as clock

        from judge import timing
        from judge.worker import rules
        # Seconds of each step, for the judge's phase_seconds (a diagnosis:
        # reported by the worker, nothing is decided on them).
        began = clock.monotonic()
        copy_extent.forget_handed()
        prepared = [buffers_mod.prepare(msg["plan"], seed, self.device) for seed in msg["seeds"]]
        steps = {"prepare": round(clock.monotonic() - began, 3)}
        began = clock.monotonic()
        retuned = 0
        if self.device == "cuda" and msg.get("retune"):
            # The autotuners choose again, now that the GPU is the timing's
            # alone, with Triton's own benchmark (judge.worker.autotune).
            from judge.worker import autotune
            retuned = autotune.retune()
        for args, _, _ in prepared:  # warm-up calls, under the rules
            failure = self._call(args)
            if failure:
                failure.pop("no_launch", None)  # the timed case always has work to do
                return self.reply(failure)
        steps["first_calls"] = round(clock.monotonic() - began, 3)
        from judge.cases import call_seed, refill_inputs
        from judge.worker import pristine
        plan = msg["plan"]
        calls = [lambda args=args: self.solve(*args) for args, _, _ in prepared]
        roles = [(k, item["role"], item["name"]) for k, item in enumerate(plan["call"])]
        # Per set: what solve writes (poisoned before each call unless it is
        # also an input), and what refill puts fresh data into.
        written = [[args[k] for k, role, _ in roles if role in ("out", "inout")] for args, _, _ in prepared]
        poison = [role == "out" for _, role, _ in roles if role in ("out", "inout")]
        views = [{name: args[k] for k, role, name in roles if role in ("in", "inout")} for args, _, _ in prepared]

        base = {"seed": msg.get("call_seed")}

        def ready() -> None:
            """Two-step timing: say warm-up is over, and wait for the judge's go,
            which brings the timed calls' seed (so none can start earlier)."""
            self.reply({"status": "warm"})
            go = self.link.recv()
            base["seed"] = int(go["call_seed"])

        def refill(r: int, i: int) -> None:
            buffers_mod.plain(list(views[i].values()))  # no attribute of the file's on them
            with pristine.drawing(modes_off=not plan.get("generator")):
                refill_inputs(plan, call_seed(base["seed"], r), self.device, views[i])

        try:
            # Each timed call runs under the rules; the timer's own work
            # between calls (refill, poison, flush, sums) does not.
            @contextlib.contextmanager
            def around_call():
                """A timed call under the rules; its tensors then as the worker
                made them, before the timer poisons, refills and sums them."""
                try:
                    with self.guard.armed():
                        yield
                finally:
                    for args, _, _ in prepared:
                        buffers_mod.plain(args)

            result = timing.measure(calls, outputs=written, poison=poison, refill=refill, streams=launches.take_streams,
                                    around_call=around_call, ready=ready if msg.get("await_go") else None,
                                    fence=rules.fence,
                                    # An autotuner's benchmark in the first calls
                                    # warms the GPU as warm-up calls do; other first
                                    # calls are short and count for nothing.
                                    warm_since=began if retuned else None,
                                    **msg.get("options", {}))
        except BaseException as exc:  # noqa: BLE001
            broken = _violations()
            if self.guard.violation or broken:
                return self.reply({"status": "rejected", "message": broken[0] if broken else self.guard.violation})
            return self.reply({"status": classify(exc), "message": short_traceback(exc)})
        broken = _violations()
        if self.guard.violation or broken:
            return self.reply({"status": "rejected", "message": broken[0] if broken else self.guard.violation})
        if msg.get("await_go"):
            # The buffers follow on request, outside the judge's timed
            # window: copying them to the host takes a second at the
            # performance size, which the window must not count.
            self._pending = prepared
            return self.reply({"status": "ok", "timing": result, "steps": steps})
        self.reply_buffers({"status": "ok", "timing": result, "steps": steps}, self._set_buffers(prepared),
                           share=bool(msg.get("share")))

    def _set_buffers(self, prepared) -> list:
        buffers = []
        for _, outputs, _ in prepared:  # outputs only: the timer refilled the inputs before every call
            buffers += self._ordered(outputs)
        return buffers

    def buffers(self, msg: dict) -> None:
        prepared, self._pending = getattr(self, "_pending", []), []
        self.reply_buffers({"status": "ok"}, [] if msg.get("discard") else self._set_buffers(prepared),
                           share=bool(msg.get("share")))
