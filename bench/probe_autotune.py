"""Probe (issue 11): where an autotuned file's cases spend their time.
1. triton.compile of the four configs of submissions/correct/autotuned.py for one
   specialization: one after another, in threads, in processes (fresh caches).
2. solve per small case in one plain process: first call (compile + autotune),
   again with the autotuner's choice forgotten (benchmark only).
3. judge grade() of the file: per-case seconds, the slot plan, phases."""
import importlib.util, json, os, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor, ProcessPoolExecutor
sys.path.insert(0, os.getcwd())
PATH = "submissions/correct/autotuned.py"
CFGS = [(32, 32, 32, 4, 3), (64, 32, 64, 4, 4), (128, 32, 64, 8, 3), (128, 32, 128, 8, 3)]


def load():
    spec = importlib.util.spec_from_file_location("sub", PATH)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def compile_one(args):
    cfg, salt = args
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    fn = load().matmul_autotuned_kernel.fn
    sig = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr")}
    sig.update({n: "i32" for n in ("M", "N", "K", "stride_am", "stride_bn", "stride_cm")})
    sig.update({n: "constexpr" for n in ("stride_an", "stride_bk", "stride_ck", "BLOCK_M", "BLOCK_N", "BLOCK_K")})
    const = {(7,): 1, (9,): 1, (11,): 1, (12,): cfg[0], (13,): cfg[1], (14,): cfg[2]}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(3 + salt % 3)}
    t = time.monotonic()
    triton.compile(ASTSource(fn, sig, const, attrs), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": cfg[3], "num_stages": cfg[4]})
    return time.monotonic() - t


def part1():
    import triton  # noqa: F401 - imported before timing
    out = {}
    for mode, salt in (("serial", 0), ("threads4", 1), ("processes4", 2)):
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
        t = time.monotonic()
        jobs = [(c, salt) for c in CFGS]
        if mode == "serial":
            each = [compile_one(j) for j in jobs]
        elif mode == "threads4":
            with ThreadPoolExecutor(4) as ex:
                each = list(ex.map(compile_one, jobs))
        else:
            with ProcessPoolExecutor(4) as ex:
                each = list(ex.map(compile_one, jobs))
        out[mode] = {"total_s": round(time.monotonic() - t, 3), "each_s": [round(x, 3) for x in each]}
        print("compile", mode, out[mode], flush=True)
    return out


def part2():
    import torch
    from judge import challenge as ch
    from judge.worker import autotune
    autotune.install()
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
    m = load()
    mm = ch.load("matrix_multiplication")
    rows = []
    for case in mm.all_cases():
        d = dict(case.dims)
        M, N, K = d["M"], d["N"], d["K"]
        if M * N * K > 512 ** 3:
            continue
        a = torch.rand(M, N, device="cuda"); b = torch.rand(N, K, device="cuda"); c = torch.empty(M, K, device="cuda")
        with autotune.quick(True):
            torch.cuda.synchronize(); t = time.monotonic(); m.solve(a, b, c, M, N, K); torch.cuda.synchronize()
            first = time.monotonic() - t
            m.matmul_autotuned_kernel.cache.clear()
            t = time.monotonic(); m.solve(a, b, c, M, N, K); torch.cuda.synchronize()
            bench = time.monotonic() - t
            t = time.monotonic(); m.solve(a, b, c, M, N, K); torch.cuda.synchronize()
            plain = time.monotonic() - t
        rows.append((case.name, (M, N, K), round(first, 3), round(bench, 3), round(plain, 4)))
        print("solve", rows[-1], flush=True)
    return rows


def part3():
    from judge.grader import GradeOptions, grade
    from judge import challenge as ch, cases as cd, slots
    out = []
    for seed in (11, 12):
        t = time.monotonic()
        r = grade(PATH, GradeOptions(seed=seed))
        out.append({"wall": round(time.monotonic() - t, 2), "verdict": r.verdict, "phases": r.phase_seconds,
                    "cases": [(c.name, round(c.seconds, 3)) for c in r.cases]})
        print("grade", json.dumps(out[-1]), flush=True)
    mm = ch.load("matrix_multiplication")
    classes = {}
    for case in mm.all_cases():
        classes.setdefault(slots.specialization(cd.input_plan(mm, case)), []).append(case.name)
    print("classes", len(classes), json.dumps({"/".join(k): v for k, v in classes.items()}), flush=True)
    return out


if __name__ == "__main__":
    res = {"compile": part1(), "solve": part2(), "grade": part3()}
    if os.environ.get("OUT"):
        json.dump(res, open(os.path.join(os.environ["OUT"], "probe.json"), "w"), indent=1)
