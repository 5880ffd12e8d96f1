"""Loading etrt's native runtime into this process, once, on import:
checking that it shares the one ``libexecutorch.so`` of ExecuTorch's Python
bindings and that ``TensorRTBackend`` is then registered
(:class:`RuntimeLoadError` otherwise); and what was loaded."""

from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

from .. import _capi, native

BACKEND_ID = "TensorRTBackend"
_EXECUTORCH_LIBRARY = "libexecutorch.so"


class RuntimeLoadError(ImportError):
    """etrt's native runtime cannot be loaded into this process; the message says why and what to do."""


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
