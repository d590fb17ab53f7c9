"""The untrusted side of the boundary: everything here runs in the worker
child, in the same Python as the submission, and may be patched by it.

    __main__   entry point (limits, early imports, the request loop)
    server     the request loop: load the file, run cases, time solve
    rules      the operator guard armed around every call of solve
    audit      the permanent audit hook: what the submission's own code may not do
    gates      torch's ways past the guard (mode stack, dispatch keys, direct
               kernels, threads), kept behind the audit hook
    autotune   Triton's autotuner: short benchmarks in the cases, configs
               compiled side by side, chosen again when the timing starts
    interpret  CPU-mode patches of Triton's interpreter (TF32 emulation, autotune,
               device_print to the process's standard output) and its checked launch
    interpreter_state  CPU mode: the interpreter put back as set up before every launch
    arithmetic CPU mode: fma, fused multiply-add, float-to-int casts, dot precisions as the GPU computes them
    frontend   CPU mode: each launched kernel through the GPU compiler's front end
    host_tensors  CPU mode: the tensors a GPU run would hold on the host
    races      CPU mode: programs of one launch sharing memory without atomics
    kernel_rewrites  CPU mode: a kernel's loop variables and print() read as the GPU compiler reads them
    libdevice_cpu  CPU mode: libdevice's math functions for the interpreter
    cpu_cuda   CPU mode: the CUDA a GPU file names, answered

Nothing decided here is trusted by the judge: outputs, inputs and timings
that come back are checked on the trusted side (judge.grading and friends).
"""
