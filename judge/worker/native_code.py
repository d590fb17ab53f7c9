"""Native code in the worker: the installed libraries' and Triton's own
launchers, nothing the submission wrote.

A shared object loaded into the worker runs below every rule (the audit
hook, the operator guard, the seal): a probe's file wrote an ELF file beside
itself and imported it, and another replaced the C launchers in its
grading's Triton cache, which a second worker then loaded. So:

- the audit hook (judge.worker.audit) lets an extension module load only
  from where Python, torch and Triton are installed, outside every folder the
  worker may write (`allowed_path`), or from a sealed memfd whose bytes it
  trusts (`sealed_digest`): Triton's helpers as the judge's seed has them
  (JUDGE_NATIVE_SEED), or as this module built them in this process;
- Triton's builds of its C helpers and launchers go through `compile_module`
  here, in place of triton.runtime.build.compile_module_from_src: the
  compiler, its environment and its folders as they were at the worker's
  start (a file's `knobs.build.impl`, `CC` or include folder is not used),
  the source on a pipe and the output in a memfd, never a file; a cached one
  is used only when the hook trusts its bytes, and every one is loaded from a
  sealed memfd, whose bytes cannot change between the check and the load;
- the file cannot make memfds itself (os.memfd_create stands in).

- the C source built is one the hook's copy of Triton's generator wrote, or
  the driver's own helpers as installed (judge.worker.launcher_source): a
  probe's file had written a statement into the driver's tables.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import sys
import sysconfig
import tempfile
import types

from judge.worker import audit, launcher_source
from judge.worker.refusals import RULE

SEED_ENV = "JUDGE_NATIVE_SEED"  # comma-separated sha256 of the seed's shared objects (judge.warm_cache)
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE  # what makes a memfd's bytes final
_MFD_EXEC = 0x10  # Linux 6.3+: say so, or a strict kernel makes the memfd unexecutable

# Hashes trusted before the audit hook exists (the worker's warm-up, which
# builds before any file): the hook takes them over (take_early) and from
# then on keeps its own set, which the file cannot reach.
_early: set = {h for h in os.environ.get(SEED_ENV, "").split(",") if len(h) == 64}


def take_early() -> set:
    """The hook's start: the seed's hashes and what was built before it."""
    return set(_early)


def roots(cwd: str | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(install roots, writable roots), real paths: where an extension module
    may load from, and the folders it may not, whatever root they lie under:
    what the worker can write (its scratch folder and home, its temporary
    folder, the Triton cache, /dev/shm) and /proc's descriptors. /tmp is
    writable too, except for installs below it, which the jail binds
    read-only (a virtual environment under /tmp: allowed_path)."""
    import site
    writable = {cwd or os.getcwd(), os.environ.get("HOME", ""), os.environ.get("TMPDIR", ""),
                os.environ.get("TRITON_CACHE_DIR", ""), "/var/tmp", "/dev", "/proc", "/run", "/sys"}
    if tempfile.gettempdir() != "/tmp":
        writable.add(tempfile.gettempdir())
    installed = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                 *site.getsitepackages(), site.getusersitepackages(), *(p for p in sys.path if os.path.isabs(p))}
    for name in ("torch", "triton", "numpy"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            installed.add(os.path.dirname(os.path.dirname(module.__file__)))
    # Each as given and as resolved: a path is checked both ways (allowed_path).
    both = lambda paths: {q for p in paths if p for q in (os.path.abspath(p), os.path.realpath(p))}  # noqa: E731
    writable = both(writable)
    return tuple(sorted(r for r in both(installed) if not under(r, writable) and r != "/tmp")), tuple(sorted(writable))


def under(path: str, folders) -> bool:
    # jail._under's twin, kept here: what the hook calls lives in a sealed module.
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def _outside_writable(path: str, installed, writable) -> bool:
    if under(path, writable):
        return False
    return not under(path, ("/tmp",)) or under(path, [r for r in installed if under(r, ("/tmp",))])


def allowed_path(path: str, installed, writable, _realpath=os.path.realpath, _abspath=os.path.abspath) -> bool:
    """An extension module's file: under an install root, under no folder
    the worker may write, and below /tmp only inside an install there; so
    both as named and as resolved (a link in the scratch folder that points
    into the install when checked may point elsewhere when loaded)."""
    return all(under(p, installed) and _outside_writable(p, installed, writable)
               for p in (_abspath(path), _realpath(path)))


def program_allowed(program, installed, writable, _realpath=os.path.realpath) -> bool:
    """A program a process may start (whoever starts it: Triton runs ptxas
    and the C compiler from paths its knobs give): anything but a file below
    a folder the worker may write, or a descriptor. A bare name is looked up
    on PATH, which the file may not change (judge.worker.audit_events)."""
    if isinstance(program, bytes):
        program = program.decode(errors="replace")
    if not isinstance(program, str) or "/" not in program:
        return True
    return all(_outside_writable(p, installed, writable) for p in (os.path.abspath(program), _realpath(program)))


def sealed_digest(path: str, _open=os.open, _close=os.close, _fcntl=fcntl.fcntl, _fstat=os.fstat, _pread=os.pread,
                  _sha256=hashlib.sha256) -> str | None:
    """sha256 of the file at `path` when its bytes can no longer change (a
    memfd sealed against writing, growing and shrinking), else None. Read
    through a descriptor of the hook's own, opened once: what the loader
    maps next is that same sealed file, whatever its number names by then
    only if it is also sealed and hashed again."""
    try:
        fd = _open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if _fcntl(fd, fcntl.F_GET_SEALS) & SEALS != SEALS:
            return None
        return _sha256(_pread(fd, _fstat(fd).st_size, 0)).hexdigest()
    except OSError:
        return None
    finally:
        _close(fd)


def _memfd(name: str, _memfd_create=os.memfd_create) -> int:
    try:
        return _memfd_create(name, os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC | _MFD_EXEC)
    except OSError:  # a kernel before 6.3 knows no MFD_EXEC
        return _memfd_create(name, os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)


def _load(name: str, data: bytes, _memfd=_memfd, _write=os.write, _fcntl=fcntl.fcntl,
          _spec=importlib.util.spec_from_file_location, _module=importlib.util.module_from_spec,
          _loader=importlib.machinery.ExtensionFileLoader):
    """Load `data` as extension module `name` from a sealed memfd (the hook
    checks its bytes as it loads). The descriptor stays open for the life of
    the process: a number used again would name another module to Python's
    cache of extensions."""
    fd = _memfd(name)
    view = memoryview(data)
    while view:
        view = view[_write(fd, view):]
    _fcntl(fd, fcntl.F_ADD_SEALS, SEALS | fcntl.F_SEAL_SEAL)
    path = f"/proc/self/fd/{fd}"
    spec = _spec(name, path, loader=_loader(name, path))
    module = _module(spec)
    spec.loader.exec_module(module)
    return module


def _build(name: str, src: str, command: list, env: dict, _memfd=_memfd, _pipe=os.pipe, _spawn=os.posix_spawn,
           _write=os.write, _close=os.close, _wait=os.waitpid, _status=os.waitstatus_to_exitcode,
           _pread=os.pread, _fstat=os.fstat, _str_encode=str.encode) -> bytes:
    """Run the C compiler on `src` (its standard input) into a memfd (its
    descriptor 3): nothing of the build is ever a file the submission could
    reach. Returns the bytes built."""
    out = _memfd(name)
    read_end, write_end = _pipe()
    try:
        pid = _spawn(command[0], command, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, read_end, 0), (os.POSIX_SPAWN_DUP2, out, 3),
            (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
    except BaseException:
        _close(out)
        _close(write_end)
        raise
    finally:
        _close(read_end)
    try:
        view = memoryview(_str_encode(src, "utf-8"))
        while view:
            view = view[_write(write_end, view):]
    finally:
        _close(write_end)
    code = _status(_wait(pid, 0)[1])
    try:
        if code != 0:
            raise RuntimeError(f"the C compiler failed on Triton's {name} (exit status {code})")
        return _pread(out, _fstat(out).st_size, 0)
    finally:
        _close(out)


def _start() -> types.MappingProxyType:
    """What a build uses, as it is at the worker's start (before any file)."""
    scheme = sysconfig.get_default_scheme()
    scheme = "posix_prefix" if scheme == "posix_local" else scheme
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    from triton.runtime.build import platform_key
    from triton.runtime.cache import get_cache_manager
    installed, writable = roots()
    try:  # the folders Triton's driver builds with, as found now (libcuda's among them)
        from triton.backends.nvidia import driver
        given = (*driver.library_dirs(), *driver.include_dirs)
    except Exception:  # noqa: BLE001 - no CUDA here: no launcher is ever built
        given = ()
    return types.MappingProxyType({
        "cc": shutil.which(cc) if cc else None, "env": tuple(os.environ.items()),
        "python_include": sysconfig.get_paths(scheme=scheme)["include"],
        "suffix": sysconfig.get_config_var("EXT_SUFFIX"), "platform": platform_key(),
        "cache": get_cache_manager, "installed": installed, "writable": writable,
        "given": tuple(os.path.realpath(d) for d in given)})


def _refuse(what: str, _report=audit.report, _rule=RULE) -> None:
    message = f"rule: {what} in the submission; {_rule}"
    _report(message)
    raise ImportError(message)


def compile_module(src: str, name: str, library_dirs=None, include_dirs=None, libraries=None, ccflags=None,
                   _k=None):
    """triton.runtime.build.compile_module_from_src, in the worker. Everything
    it calls comes from `_k`, one immutable tuple: the hook takes this
    frame's word that it built some bytes only when `_k` is the module's own
    (a caller may pass any argument, and the module's globals are within a
    file's reach)."""
    _k = _k or BUILD_K
    (start, build, load, sha256, allowed, realpath, opener, refuse, raise_event, early, to_dict, to_list,
     any_of) = _k
    raise_event("tritonjudge.native_source")  # the hook reads `src` here: a text Triton's generator wrote
    folders = [*(library_dirs or ()), *(include_dirs or ())]
    if ccflags or any_of(not (realpath(d) in start["given"] or allowed(d, start["installed"], start["writable"]))
                         for d in folders) or any_of("/" in lib for lib in (libraries or ())):
        refuse("no native code of its own (a Triton build with folders, libraries or flags not the install's: "
               f"{folders}, {libraries}, {ccflags})")
    key = sha256((src + start["platform"]).encode("utf-8")).hexdigest()
    cache = start["cache"](key)
    so_name = f"{name}{start['suffix']}"
    cached = cache.get_file(so_name)
    if cached is not None:
        try:
            with opener(cached, "rb") as fh:
                data = fh.read()
        except OSError:
            data = b""
        digest = sha256(data).hexdigest()
        known: list = []
        raise_event("tritonjudge.native_known", digest, known)  # before the hook: the early set
        if data and (known[0] if known else digest in early):
            return load(name, data)
        # Neither the seed's nor built here (a file may write the cache): built again, never loaded.
    if start["cc"] is None:
        raise RuntimeError("no C compiler for Triton's launcher (set CC before the judge starts)")
    command = to_list([start["cc"], "-x", "c", "-", "-O3", "-shared", "-fPIC", "-Wno-psabi", "-o", "/dev/fd/3",
                       *(f"-l:{lib}" if ".so" in lib or lib.endswith(".a") else f"-l{lib}"
                         for lib in (libraries or ())),
                       *(f"-L{d}" for d in (library_dirs or ())),
                       *(f"-I{d}" for d in [*(include_dirs or ()), start["python_include"]] if d)])
    data = build(name, src, command, to_dict(start["env"]))
    digest = sha256(data).hexdigest()
    early.add(digest)
    raise_event("tritonjudge.native_trust", digest)  # taken when this frame's `_k` is BUILD_K
    try:
        cache.put(data, so_name, binary=True)  # for this worker's next build of it; checked when read
    except OSError:
        pass
    return load(name, data)


BUILD_K = (_start(), _build, _load, hashlib.sha256, allowed_path, os.path.realpath, open, _refuse, sys.audit,
           _early, dict, list, any)


def _no_memfd(*args, _refuse=_refuse, **kwargs):
    _refuse("no memory-backed files (os.memfd_create): native code is the installed libraries' only")


def hook_side(refuse):
    """The audit hook's part (judge.worker.audit), made before the file is
    imported, everything it uses bound now: (native_ok, program_ok, open_request,
    build_request).

    native_ok(path): may the extension module there load (from the install,
    or a sealed memfd of trusted bytes); program_ok(program): may a process
    start it. open_request(event, args, box) answers anyone, outside the
    hook's busy mark: which bytes are trusted (tritonjudge.native_known), and
    the launcher text for a signature (tritonjudge.launcher_source:
    judge.worker.launcher_source). build_request(event, caller) obeys
    compile_module only: a build on a text the hook did not write is refused
    (tritonjudge.native_source), bytes built are trusted (tritonjudge.native_trust)."""
    trusted = take_early()
    installed, writable = roots()
    write, written = launcher_source.hook_side()
    build_code, build_k = compile_module.__code__, BUILD_K
    sealed, allowed, program = sealed_digest, allowed_path, program_allowed
    type_, len_, str_, append, add = type, len, str, list.append, set.add

    def native_ok(path: str) -> bool:
        if path.startswith("/proc/self/fd/"):
            return sealed(path) in trusted
        return allowed(path, installed, writable)

    def program_ok(name) -> bool:
        return program(name, installed, writable)

    def open_request(event: str, args, box) -> None:
        if box is None:
            return
        if event == "tritonjudge.native_known" and args and type_(args[0]) is str_:
            append(box, args[0] in trusted)
        elif event == "tritonjudge.launcher_source" and len_(args) == 3:
            text = write(args[0], args[1])
            if text is not None:
                append(box, text)

    def build_request(event: str, args, caller) -> None:
        if caller.f_code is not build_code:
            return
        here = caller.f_locals
        if event == "tritonjudge.native_source" and not written(here.get("src")):
            refuse("no native code of its own (a C source for Triton's build that Triton's generator, as "
                   "installed, did not write)")
        elif event == "tritonjudge.native_trust" and here.get("_k") is build_k and args \
                and type_(args[0]) is str_ and written(here.get("src")):
            add(trusted, args[0])  # bytes compile_module built from such a text, with its own helpers

    return native_ok, program_ok, open_request, build_request


def install() -> None:
    """Put compile_module in Triton's place, and the memfd stand-in in os's;
    at the worker's start, before its warm-up builds anything. Triton's
    launcher generator too (judge.worker.launcher_source)."""
    launcher_source.install()
    import triton.runtime.build as build
    original = build.compile_module_from_src
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict) and namespace.get("compile_module_from_src") is original:
            namespace["compile_module_from_src"] = compile_module
    import posix
    for module in (os, posix):
        if hasattr(module, "memfd_create"):
            module.memfd_create = _no_memfd
