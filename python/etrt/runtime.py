"""etrt from Python: run ``.pte`` files with TensorRT delegates through
ExecuTorch's Python runtime, and choose their optimization profiles.

Importing this module loads the native runtime installed with the package
(``pip install ./python``; or ``$ETRT_LIBRARY``) into the process, after
checking that it will share the one ``libexecutorch.so`` that ExecuTorch's
Python bindings use; ExecuTorch's ``Runtime`` then sees ``TensorRTBackend``::

    from executorch.runtime import Runtime
    import etrt.runtime as etrt_rt          # or: import etrt; etrt.profile(...)

    method = Runtime.get().load_program("model.pte").load_method("forward")
    with etrt_rt.profile(1):                # pin profile 1 on this thread (OptimizationProfileGuard)
        method.execute([prompt])
    with etrt_rt.automatic(policy="first_fit"), etrt_rt.report() as r:
        method.execute([token])
    print(r.entries)                        # which profile each delegate ran, whether it switched

The guards have the C++ guards' semantics: they only record a request for
the calling thread, each delegate applies it when it executes, they nest,
and leaving one restores the request in force when it was entered.

ExecuTorch's Python API passes no backend load options; set process-wide
defaults for delegates loaded afterwards instead (``load_method`` loads
them)::

    with etrt_rt.load_options(auto_select_profiles=True, profile_strategy="context_per_profile"):
        method = program.load_method("forward")

A refusal raises ExecuTorch's ``RuntimeError`` with an error code only;
:func:`last_error_message` explains it, and :func:`execute` raises
:class:`ExecutionError` with the explanation attached. docs/python.md has
the details, and what is not supported from Python.
"""

from __future__ import annotations

import ctypes
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from . import _capi, native

__all__ = [
    "ExecutionError",
    "ExecutionRecord",
    "ProfileRequest",
    "Report",
    "RuntimeLoadError",
    "abi_version",
    "automatic",
    "clear_default_load_options",
    "clear_last_error",
    "counters",
    "current_request",
    "default_load_options",
    "execute",
    "executorch_library",
    "has_last_error",
    "last_error_message",
    "library_path",
    "load_options",
    "profile",
    "report",
    "set_default_load_options",
    "version",
]

BACKEND_ID = "TensorRTBackend"
_EXECUTORCH_LIBRARY = "libexecutorch.so"


class RuntimeLoadError(ImportError):
    """etrt's native runtime cannot be loaded into this process; the message says why and what to do."""


# --------------------------------------------------------------------------
# Loading


def _mapped_libraries(prefix: str) -> Dict[Tuple[int, int], str]:
    """Files mapped into this process whose name is ``prefix`` or ``prefix.*``, by (device, inode)."""
    found: Dict[Tuple[int, int], str] = {}
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) < 6:
                continue
            path = parts[5].strip()
            base = os.path.basename(path)
            if base != prefix and not base.startswith(prefix + "."):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            found.setdefault((st.st_dev, st.st_ino), os.path.realpath(path))
    return found


def _executorch_version() -> Optional[str]:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("executorch")
    except PackageNotFoundError:
        return None


def _load() -> Tuple[_capi.CApi, str]:
    path = native.library_path()
    if path is None:
        raise RuntimeLoadError(
            "etrt's native runtime is not installed: `pip install ./python` (from an etrt checkout, into an "
            "environment that already has ExecuTorch) builds libetrt against that ExecuTorch and installs it in the "
            "package; or set ETRT_LIBRARY to a libetrt.so built against the ExecuTorch you run")
    if not os.path.isfile(path):
        raise RuntimeLoadError(f"ETRT_LIBRARY is {path}, which is not a file")

    info = native.build_info()
    packaged = os.path.realpath(path) == os.path.realpath(os.path.join(native.native_prefix(), "lib",
                                                                       native.LIBRARY_NAME))
    installed = _executorch_version()
    if packaged and info is not None and installed is not None and installed != info.executorch_version:
        raise RuntimeLoadError(
            f"etrt's native runtime ({path}) was built against ExecuTorch {info.executorch_version}, but this "
            f"environment has ExecuTorch {installed}. etrt built against ExecuTorch X runs with ExecuTorch X: "
            "reinstall etrt (`pip install --force-reinstall --no-deps ./python`) to build it against this one")

    # ExecuTorch's Python bindings first: they load the wheel's libexecutorch.so (and torch).
    try:
        import executorch.runtime  # noqa: F401
    except ImportError as e:
        raise RuntimeLoadError(f"etrt.runtime runs under ExecuTorch's Python runtime, which cannot be imported: {e}. "
                               "Install executorch (and the torch it was released with)") from e
    bindings = _mapped_libraries(_EXECUTORCH_LIBRARY)
    if len(bindings) != 1:
        raise RuntimeLoadError(
            f"expected ExecuTorch's Python bindings to have loaded one {_EXECUTORCH_LIBRARY}, found "
            f"{sorted(bindings.values()) or 'none'}; etrt registers its backend into that library's registry")
    bindings_path = next(iter(bindings.values()))

    # Where libetrt's own search path finds libexecutorch.so: it must be the bindings' file. (Were it another file,
    # the loader would still bind libetrt to the copy already loaded, by soname: a library built against one
    # ExecuTorch running on another.)
    try:
        wanted = native.resolve_needed(path, _EXECUTORCH_LIBRARY)
        needed = native.read_elf_dynamic(path).needed
    except (OSError, ValueError) as e:
        raise RuntimeLoadError(f"cannot read {path}: {e}") from e
    if _EXECUTORCH_LIBRARY not in needed:
        raise RuntimeLoadError(f"{path} does not link {_EXECUTORCH_LIBRARY}; it is not a libetrt")
    if wanted is not None and wanted != bindings_path:
        raise RuntimeLoadError(
            f"{path} would use {wanted}, but ExecuTorch's Python bindings use {bindings_path}: etrt must share the "
            "one libexecutorch.so of the ExecuTorch it runs with, and be built against it. Install etrt into the "
            "environment of the ExecuTorch you run (`pip install ./python` there), or point ETRT_LIBRARY at a "
            "libetrt built against it")

    try:
        api = _capi.load(path)
    except OSError as e:
        raise RuntimeLoadError(f"cannot load {path}: {e}") from e

    after = _mapped_libraries(_EXECUTORCH_LIBRARY)
    if len(after) != 1:
        raise RuntimeLoadError(
            f"after loading {path} the process maps {len(after)} copies of {_EXECUTORCH_LIBRARY}: "
            f"{sorted(after.values())}; etrt's backend is registered in one and ExecuTorch's Python runtime reads "
            "the other. Restart Python and install etrt against the ExecuTorch of this environment")

    from executorch.runtime import Runtime

    if not Runtime.get().backend_registry.is_available(BACKEND_ID):
        raise RuntimeLoadError(
            f"{path} loaded, but ExecuTorch's Python runtime does not list '{BACKEND_ID}' "
            f"(registered: {Runtime.get().backend_registry.registered_backend_names}); another library may have "
            "registered that name first")
    return api, bindings_path


_api, _executorch_path = _load()


def library_path() -> str:
    """The libetrt this process loaded."""
    return _api.path


def executorch_library() -> str:
    """The one libexecutorch.so that ExecuTorch's Python bindings and etrt share."""
    return _executorch_path


def abi_version() -> int:
    """The C ABI version of the loaded libetrt (include/etrt/c_api.h)."""
    return _api.abi_version


def version() -> str:
    """The etrt version the loaded libetrt was built as."""
    return _api.version().decode()


# --------------------------------------------------------------------------
# Profile requests

_POLICIES = {"sticky": _capi.POLICY_STICKY_FIRST_FIT, "sticky_first_fit": _capi.POLICY_STICKY_FIRST_FIT,
             "first_fit": _capi.POLICY_FIRST_FIT}
_POLICY_NAMES = {_capi.POLICY_STICKY_FIRST_FIT: "sticky_first_fit", _capi.POLICY_FIRST_FIT: "first_fit"}


class ProfileRequest(NamedTuple):
    """What the calling thread asks etrt's delegates to do (etrt::ProfileRequest)."""

    kind: str  #: "default" (no guard: the module's load-time default), "pinned" or "auto"
    index: Optional[int] = None  #: the pinned profile
    policy: Optional[str] = None  #: "sticky_first_fit" or "first_fit", for "auto"


def current_request() -> ProfileRequest:
    """The request in force on the calling thread (etrt::current_profile_request())."""
    kind, index, policy = _api.current()
    if kind == _capi.REQUEST_PINNED:
        return ProfileRequest("pinned", index)
    if kind == _capi.REQUEST_AUTO:
        return ProfileRequest("auto", policy=_POLICY_NAMES[policy])
    return ProfileRequest("default")


class _Guard:
    """A context manager that pushes a request on enter and pops it on exit, on one thread."""

    def __init__(self, request: ProfileRequest) -> None:
        self.request = request
        self._entered: List[Tuple[int, int]] = []  # (depth, thread id) per active entry, innermost last

    def __enter__(self) -> "_Guard":
        depth = ctypes.c_uint32()
        if self.request.kind == "pinned":
            rc = _api.profile_push_pinned(self.request.index, ctypes.byref(depth))
        else:
            rc = _api.profile_push_auto(_POLICIES[self.request.policy], ctypes.byref(depth))
        if rc != _capi.OK:
            raise RuntimeError(f"etrt: cannot enter {self!r}: {_capi.ERROR_NAMES.get(rc, rc)}")
        self._entered.append((depth.value, threading.get_ident()))
        return self

    def __exit__(self, *exc) -> None:
        depth, thread = self._entered[-1]
        rc = _api.profile_pop(depth)
        if rc == _capi.OK:
            self._entered.pop()
        else:
            where = "on another thread than the one that entered it" if thread != threading.get_ident() else \
                "while a guard entered after it is still active"
            raise RuntimeError(f"etrt: {self!r} was exited {where}; guards end in reverse order of entry, on the "
                               "thread that entered them (use `with` blocks)")

    def __repr__(self) -> str:
        if self.request.kind == "pinned":
            return f"etrt.profile({self.request.index})"
        return f"etrt.automatic(policy={self.request.policy!r})"


def profile(index: int) -> _Guard:
    """Pins profile ``index`` for executions on this thread inside the ``with`` block
    (``etrt::OptimizationProfileGuard(index)``). A delegate whose engine has no
    such profile refuses the execution (``RuntimeError``; see
    :func:`last_error_message`); a static one-profile engine ignores the pin."""
    if isinstance(index, bool) or not hasattr(index, "__index__"):
        raise TypeError(f"etrt.profile() takes a profile index (an int), got {type(index).__name__}")
    index = index.__index__()
    if not -2**31 <= index < 2**31:
        raise ValueError(f"etrt.profile({index}): a profile index is a 32-bit integer")
    return _Guard(ProfileRequest("pinned", index))


def automatic(policy: str = "sticky_first_fit") -> _Guard:
    """Lets the input shapes choose the profile for executions on this thread
    inside the ``with`` block (``OptimizationProfileGuard::automatic(policy)``).
    ``policy``: ``"sticky_first_fit"`` (or ``"sticky"``; the default: keep the
    delegate's active profile while the inputs fit it) or ``"first_fit"`` (the
    lowest fitting index, every call)."""
    if policy not in _POLICIES:
        raise ValueError(f"etrt.automatic(policy={policy!r}): use 'sticky_first_fit' (or 'sticky') or 'first_fit'")
    return _Guard(ProfileRequest("auto", policy=_POLICY_NAMES[_POLICIES[policy]]))


# --------------------------------------------------------------------------
# Reports and counters


@dataclass(frozen=True)
class ExecutionRecord:
    """One delegate execution (etrt::ExecutionRecord)."""

    delegate: str  #: "<method>#<n>": its method and load order
    profile: int  #: the profile it ran on
    num_profiles: int  #: profiles its engine carries
    switched: bool  #: a profile change happened for this execution
    pin_ignored: bool  #: a pin was ignored by a static one-profile engine
    ok: bool  #: the execution succeeded


class Report:
    """Records what etrt's delegates do on the calling thread while its ``with``
    block runs (``etrt::ExecutionReport``); reports nest. Readable during the
    block (on its thread) and after it."""

    capacity = None  # set below, from the library

    def __init__(self) -> None:
        self._handle: Optional[int] = None
        self._thread: Optional[int] = None
        self._entries: List[ExecutionRecord] = []
        self._total = 0
        self._switches = 0

    def __enter__(self) -> "Report":
        if self._handle is not None:
            raise RuntimeError("etrt: this report is already recording; make another one to nest")
        handle = ctypes.c_void_p()
        rc = _api.report_create(ctypes.byref(handle))
        if rc != _capi.OK:
            raise RuntimeError(f"etrt: cannot start a report: {_capi.ERROR_NAMES.get(rc, rc)}")
        self._handle, self._thread = handle.value, threading.get_ident()
        self._entries, self._total, self._switches = [], 0, 0
        return self

    def __exit__(self, *exc) -> None:
        self._refresh()
        rc = _api.report_destroy(self._handle)
        self._handle = None
        if rc != _capi.OK:
            raise RuntimeError("etrt: reports end in reverse order of entry, on the thread that entered them")

    def _refresh(self) -> None:
        if self._handle is None:
            return
        kept, total, switches = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
        rc = _api.report_counts(self._handle, ctypes.byref(kept), ctypes.byref(total), ctypes.byref(switches))
        if rc != _capi.OK:
            raise RuntimeError("etrt: a report is read on the thread that records it (or after its `with` block)")
        entries = []
        record = _capi.ExecutionRecordStruct()
        for i in range(kept.value):
            _api.report_entry(self._handle, i, ctypes.byref(record), ctypes.sizeof(record))
            entries.append(ExecutionRecord(record.delegate.decode("utf-8", errors="replace"), record.profile,
                                           record.num_profiles, bool(record.switched), bool(record.pin_ignored),
                                           bool(record.ok)))
        self._entries, self._total, self._switches = entries, total.value, switches.value

    @property
    def entries(self) -> List[ExecutionRecord]:
        """Executions recorded, oldest first (at most :attr:`capacity`)."""
        self._refresh()
        return list(self._entries)

    @property
    def profiles(self) -> List[int]:
        """The profile of each recorded execution, oldest first."""
        return [e.profile for e in self.entries]

    @property
    def total(self) -> int:
        """Executions recorded, including any beyond :attr:`capacity` that were not kept."""
        self._refresh()
        return self._total

    @property
    def switches(self) -> int:
        """Profile changes among the recorded executions."""
        self._refresh()
        return self._switches

    def clear(self) -> None:
        if self._handle is not None:
            _api.report_clear(self._handle)
        self._entries, self._total, self._switches = [], 0, 0

    def __repr__(self) -> str:
        return f"etrt.Report(total={self.total}, switches={self.switches}, entries={self.entries!r})"


Report.capacity = int(_api.report_capacity())


def report() -> Report:
    """A :class:`Report` to use in a ``with`` block."""
    return Report()


_COUNTERS = ("profile_switches", "executions", "last_profile")


def counters() -> Dict[str, int]:
    """The process-wide counters (etrt/options.h kCounter*): profile switches and
    executions of all etrt delegates since the process started, and the profile
    of the most recent execution (-1 before the first)."""
    out = {}
    value = ctypes.c_int64()
    for name in _COUNTERS:
        _api.counter(name.encode(), ctypes.byref(value))
        out[name] = value.value
    return out


# --------------------------------------------------------------------------
# Refusals


def last_error_message() -> str:
    """Why an etrt delegate last refused something on this thread ("" if none since
    :func:`clear_last_error`); the numbers, and what to do."""
    return _api.last_error()


def has_last_error() -> bool:
    return bool(_api.has_last_error())


def clear_last_error() -> None:
    _api.clear_last_error()


class ExecutionError(RuntimeError):
    """A method execution an etrt delegate refused. ``etrt_message`` is the
    delegate's explanation (:func:`last_error_message`); the exception
    ExecuTorch raised is its ``__cause__``."""

    def __init__(self, message: str, etrt_message: str) -> None:
        super().__init__(message)
        self.etrt_message = etrt_message


def execute(method: Any, inputs: Sequence[Any], method_name: str = "forward") -> Sequence[Any]:
    """Runs ``method`` (an ``executorch.runtime`` Method, or a Program whose
    ``method_name`` is loaded) on ``inputs``, like ``method.execute(inputs)``;
    when an etrt delegate refuses, raises :class:`ExecutionError` carrying its
    message instead of ExecuTorch's bare error code."""
    if hasattr(method, "load_method") and not hasattr(method, "execute"):
        method = method.load_method(method_name)
    clear_last_error()
    try:
        return method.execute(inputs) if hasattr(method, "execute") else method(inputs)
    except RuntimeError as e:
        if not has_last_error():
            raise
        message = last_error_message()
        raise ExecutionError(f"{e}\n{message}", message) from e


# --------------------------------------------------------------------------
# Load options for delegates loaded from Python



def _set_one(key: str, value: Any) -> None:
    error = ctypes.create_string_buffer(1024)
    if key == "auto_policy" and value == "sticky":
        value = "sticky_first_fit"
    if isinstance(value, bool):
        rc = _api.set_default_load_option_bool(key.encode(), int(value), error, len(error))
    elif isinstance(value, int):
        if 0 <= value < 2**31:
            rc = _api.set_default_load_option_int(key.encode(), value, error, len(error))
        else:  # beyond an ExecuTorch int option: the digits, as a string option carries them
            rc = _api.set_default_load_option_string(key.encode(), str(value).encode(), error, len(error))
    elif isinstance(value, str):
        rc = _api.set_default_load_option_string(key.encode(), value.encode(), error, len(error))
    else:
        raise TypeError(f"etrt load option '{key}' takes a bool, an int or a str, got {type(value).__name__}")
    if rc != _capi.OK:
        raise ValueError(error.value.decode("utf-8", errors="replace") or f"etrt load option '{key}' refused")


def default_load_options() -> Dict[str, Any]:
    """The process-wide default load options in force, ``{key: value}``."""
    out: Dict[str, Any] = {}
    for line in _api.defaults_text().splitlines():
        key, kind, value = line.split("\t", 2)
        out[key] = value == "1" if kind == "bool" else int(value) if kind == "int" else value
    return out


def _restore(snapshot: Dict[str, Any]) -> None:
    _api.clear_default_load_options(None)
    for key, value in snapshot.items():
        _set_one(key, value)


def set_default_load_options(**options: Any) -> None:
    """Sets process-wide default load options (etrt/options.h) for every TensorRT
    delegate loaded afterwards in this process, from any thread -- ExecuTorch's
    Python API passes none of its own. Keys: ``auto_select_profiles`` (bool),
    ``auto_policy`` ("first_fit", "sticky_first_fit"), ``profile_strategy``
    ("switch", "context_per_profile"), ``weight_streaming_budget`` (bytes, an
    int or a string of digits), ``cuda_graphs`` (bool). Values are checked as
    the backend checks them (``ValueError``, and nothing changes). Delegates
    are loaded by ``Program.load_method``; those already loaded keep their
    options."""
    snapshot = default_load_options()
    try:
        for key, value in options.items():
            _set_one(key, value)
    except Exception:
        _restore(snapshot)
        raise


def clear_default_load_options(*keys: str) -> None:
    """Removes the defaults for ``keys``, or all of them when none are named."""
    if not keys:
        _api.clear_default_load_options(None)
    for key in keys:
        _api.clear_default_load_options(key.encode())


@contextmanager
def load_options(**options: Any) -> Iterator[Dict[str, Any]]:
    """Sets default load options (:func:`set_default_load_options`) for the
    ``with`` block and restores the previous defaults after it. Process-wide,
    not per thread: a delegate another thread loads meanwhile gets them too."""
    snapshot = default_load_options()
    set_default_load_options(**options)
    try:
        yield default_load_options()
    finally:
        _restore(snapshot)
