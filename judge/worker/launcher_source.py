"""The C source of Triton's launchers: only what Triton's generator, as
installed, writes (untrusted side, but the hook's: judge.worker.native_code).

Triton writes each kernel's C launcher from the kernel's signature
(`make_launcher` in triton.backends.nvidia.driver), with type names and pack
functions looked up in the driver's tables, then has it built and loaded. A
file could write C into those tables (a probe's wrote a cuMemcpyDtoD into
FLOAT_PACK_FUNCTION: its launcher did the copy its kernel did not), replace
the generator, or hand its own text to the build. So:

- at the worker's start (`install`), before any file, the driver's tables
  become read-only views and `make_launcher` this module's `source`, which
  asks the hook for the text;
- the hook (`hook_side`, made before the file is imported and held only in
  its closure) writes that text with a copy of the installed generator over
  a private copy of the driver's globals, tables and builtins, from a plain
  copy of the signature (no object of the file's runs there; any object
  that is not plain data, such as a @jit function passed as a constexpr,
  is None there), and
  remembers the text's digest;
- the build (native_code.compile_module) runs only on a text the hook wrote,
  or on the driver's own C helpers as installed.

The names the generator reads are sealed too, so that a file that replaced
one is rejected on the CPU, where no launcher is built, as on a GPU.

Every text also tells the hook, just before it launches, on which stream
(`fenced`: the event tritonjudge.kernel_launch, judge.worker.launches
.fence_stream): a timed call's work must start after the timer's start
event wherever it is launched from. A probe's file launched a kernel
compiled ahead on a side stream (`kernel[grid](..., stream=...)`), which
the Python wrappers did not fence; its addition ran in the timer's 2 ms
head start and was accepted at 0.0017 ms (60 times too fast). The C
function is the one place every route passes through (a wrapper, the
launcher object, or its `launch` called directly).
"""

from __future__ import annotations

import builtins
import hashlib
import os
import sys
import types

# Where the fence goes: right before the launch, after the file's launch
# hook and the pointer checks have run (Triton 3.6's launcher text).
_LAUNCH = "  Py_BEGIN_ALLOW_THREADS;\n  _launch("
_FENCE = ('  if (PySys_Audit("tritonjudge.kernel_launch", "KK", (unsigned long long)_stream, '
          '(unsigned long long)_function) < 0) return NULL;\n')
_TABLES = ("FLOAT_STORAGE_TYPE", "FLOAT_PACK_FUNCTION", "TMA_DTYPE_DEVICE_TO_HOST")
# Set by Triton itself after the start (CudaUtils), never read by the generator.
_WRITTEN_LATER = frozenset({"PyCUtensorMap"})
NOT_PLAIN = object()


def _driver():
    try:
        from triton.backends.nvidia import driver
    except Exception:  # noqa: BLE001 - no NVIDIA backend: no launcher is ever built
        return None
    return driver if callable(getattr(driver, "make_launcher", None)) else None


def fenced(text, _launch=_LAUNCH, _fence=_FENCE, _type=type, _str=str, _count=str.count, _replace=str.replace):
    """The launcher's text with the fence before its launch; a text where
    the launch cannot be found is refused (a launch unfenced would be timed
    wrong), as for a Triton whose generator writes another text."""
    if _type(text) is not _str or _count(text, _launch) != 1:
        raise RuntimeError("Triton's launcher text has no launch where the judge's fence goes (a Triton other "
                           "than the version the judge supports?)")
    return _replace(text, _launch, _fence + _launch)


def plainer():
    """plain(value, lenient=False): an exact-typed copy of `value` (str, int,
    float, bool, None, bytes, and tuples, lists and dicts of them), or
    NOT_PLAIN; `lenient`: any other object in it becomes None. What the
    hook's generator is given, so that no method of the file's runs in it.
    Everything it calls is bound here, before any file: it runs in the hook."""
    type_, tuple_, list_, dict_, items, append = type, tuple, list, dict, dict.items, list.append
    subclass, tuple_len, tuple_item = issubclass, tuple.__len__, tuple.__getitem__
    not_plain = NOT_PLAIN

    def plain(value, depth: int = 0, lenient: bool = False):
        t = type_(value)
        if t is str or t is int or t is float or t is bool or value is None or t is bytes:
            return value
        other = None if lenient else not_plain  # what any other object becomes
        if depth > 16:
            return other
        if subclass(t, tuple_) or t is list_:
            # A NamedTuple's too (Triton's signature of a NamedTuple argument),
            # read by tuple's own methods, copied as a plain tuple.
            copied: list = []
            for index in range(tuple_len(value) if t is not list_ else len(value)):
                item = plain(tuple_item(value, index) if t is not list_ else value[index], depth + 1, lenient)
                if item is not_plain:
                    return not_plain
                append(copied, item)
            return copied if t is list_ else tuple_(copied)
        if t is dict_:
            pairs: list = []
            for key, item in items(value):
                key, item = plain(key, depth + 1, lenient), plain(item, depth + 1, lenient)
                if key is not_plain or item is not_plain:
                    return not_plain
                append(pairs, (key, item))
            return dict_(pairs)
        return other

    return plain


def _private_globals(namespace: dict, plain) -> dict:
    """A copy of a module's globals that nothing else holds: plain data
    copied, the module's own functions bound to the copy, builtins copied."""
    private = {}
    for name, value in namespace.items():
        copied = plain(dict(value)) if type(value) is types.MappingProxyType else plain(value)
        private[name] = value if copied is NOT_PLAIN else copied
    for name, value in list(private.items()):
        if type(value) is types.FunctionType and value.__globals__ is namespace:
            twin = types.FunctionType(value.__code__, private, value.__name__, value.__defaults__, value.__closure__)
            twin.__kwdefaults__ = value.__kwdefaults__
            private[name] = twin
    private["__builtins__"] = dict(vars(builtins))
    return private


def hook_side():
    """(write, written) for the hook, made before the file is imported and
    held only in the hook's closure (nothing here is looked up later through
    a name the file could rebind).

    write(args, kwargs): the launcher text the installed generator writes for
    that signature, its digest remembered; None when the signature is not
    plain data or the generator refuses it. Run outside the hook's busy mark:
    any code of the file's reached from here is audited as usual.
    written(src): may the build run on `src` (a text write gave, or the
    driver's C helpers as installed)?"""
    plain, not_plain, fence = plainer(), NOT_PLAIN, fenced
    sha256, encode, type_, dict_, str_, set_add = hashlib.sha256, str.encode, type, dict, str, set.add
    approved: set = set()
    driver = _driver()
    if driver is None:
        return (lambda args, kwargs: None), (lambda src: False)
    original = _ORIGINAL.get("make_launcher") or driver.make_launcher
    generate = types.FunctionType(original.__code__, _private_globals(vars(driver), plain), original.__name__,
                                  original.__defaults__, original.__closure__)
    utils_source = None
    try:  # the driver's own C helpers (CudaUtils), as installed
        with open(os.path.join(driver.dirname, "driver.c"), encoding="utf-8") as fh:
            utils_source = fh.read()
    except (OSError, AttributeError):
        pass

    def write(args, kwargs):
        # Any other object becomes None: a kernel's constants hold its
        # constexpr arguments (a @jit function passed as one, which the
        # installed generator never reads: its text came out the same, and an
        # honest launch was refused while they made the copy fail).
        args, kwargs = plain(args, lenient=True), plain(kwargs, lenient=True)
        if type_(args) is not tuple or type_(kwargs) is not dict_:
            return None
        try:
            text = generate(*args, **kwargs)
        except Exception:  # noqa: BLE001 - a signature Triton's own generator refuses too
            return None
        if type_(text) is not str_:
            return None
        text = fence(text)
        set_add(approved, sha256(encode(text, "utf-8")).hexdigest())
        return text

    def written(src) -> bool:
        if type_(src) is not str_:
            return False
        return src == utils_source or sha256(encode(src, "utf-8")).hexdigest() in approved

    return write, written


_ORIGINAL: dict = {}


def source(*args, _audit=sys.audit, _original=_ORIGINAL, _fenced=fenced, **kwargs):
    """triton.backends.nvidia.driver.make_launcher, in the worker: the text
    the hook's generator writes. Before the hook (the warm-up's builds) the
    installed generator writes it; after, a text the hook did not write is
    never built (native_code.compile_module)."""
    box: list = []
    _audit("tritonjudge.launcher_source", args, kwargs, box)
    if box:
        return box[0]
    return _fenced(_original["make_launcher"](*args, **kwargs))


def install() -> None:
    """At the worker's start: the driver's tables read-only, its generator
    this module's `source`."""
    driver = _driver()
    if driver is None or _ORIGINAL:
        return
    _ORIGINAL["make_launcher"] = driver.make_launcher
    for name in _TABLES:
        table = getattr(driver, name, None)
        if type(table) is dict:
            setattr(driver, name, types.MappingProxyType(dict(table)))
    driver.make_launcher = source


def seal_pairs() -> list:
    """The driver's names, for the seal (judge.worker.arming): a file that
    replaced one is rejected even where no launcher is built."""
    driver = _driver()
    if driver is None:
        return []
    return [(driver, name) for name in vars(driver) if name not in _WRITTEN_LATER and not name.startswith("__")]
