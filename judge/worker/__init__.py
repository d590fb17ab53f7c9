"""The untrusted side of the boundary: everything here runs in the worker
child, in the same Python as the submission, and may be patched by it.

    __main__   entry point (limits, early imports, the request loop)
    server     the request loop: load the file, run cases, time solve
    rules      the operator guard armed around every call of solve
    audit      the permanent audit hook: what the submission's own code may not do
    gates      torch's ways past the guard (mode stack, dispatch keys, direct
               kernels, threads), kept behind the audit hook
    autotune   Triton's autotuner: short benchmarks on small cases, configs
               compiled side by side
    interpret  CPU-mode patches of Triton's interpreter (TF32 emulation, autotune)

Nothing decided here is trusted by the judge: outputs, inputs and timings
that come back are checked on the trusted side (judge.grading and friends).
"""
