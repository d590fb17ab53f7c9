"""What fn.warmup(...) hands back under the CPU mode (judge.worker.interpret)."""

from __future__ import annotations


class CompiledStandIn:
    """What fn.warmup(...) hands back on a GPU (Triton's CompiledKernel), for
    the interpreter, which compiles nothing and returned None: Triton's
    fused-softmax tutorial warms its kernel up to read its registers and
    shared memory, sizes its grid from them, and launches it as
    compiled[grid](every argument, constexprs too). The figures are those of
    a small kernel on an H100 (they size a grid, never a result); a launch
    goes through the interpreter as any other (counted, checked)."""

    n_regs, n_spills, n_max_threads = 32, 0, 1024

    def __init__(self, fn, options: dict):
        from types import SimpleNamespace
        self.fn = fn
        # Shared memory in bytes: a kernel that reduces uses some (the tutorial's
        # softmax, built for an H100, reports 32), and the tutorial divides by it.
        self.metadata = SimpleNamespace(shared=1024, name=getattr(fn, "__name__", "kernel"),
                                        num_warps=int(options.get("num_warps") or 4),
                                        num_stages=int(options.get("num_stages") or 3), num_ctas=1)

    def _init_handles(self) -> None:
        pass

    def __getitem__(self, grid):
        def runner(*args, stream=None):
            return self.fn[tuple(grid)](*args)
        return runner
