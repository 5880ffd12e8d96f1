"""The runtime's readers, through libetrt_tools' C ABI (``etrt_blob_describe``,
``etrt_engine_describe``, ``etrt_delegate_resolve``, and the rules
``etrt_parse_byte_count`` and ``etrt_host_engine_binds``;
``include/etrt/tools_c_api.h``): the library built from the runtime's own
sources for the tools, beside libetrt, so that libetrt holds production code
only.

``etrt inspect``, ``etrt validate`` and every other reader of a blob or a
GPU-free NvInfer engine in this package ask the runtime: the bytes go through
``src/blob``'s ``parse_blob`` and the GPU-free NvInfer's deserializer, the
code a delegate load runs, so a tool refuses exactly what a load refuses, with
its message (docs/architecture.md, "One rulebook"). Loading libetrt_tools
imports neither torch nor ExecuTorch's Python package, and needs neither
libetrt nor ExecuTorch's runtime library.

The library is the one beside the libetrt :func:`etrt.native.library_path`
names (:func:`etrt.native.tools_library_path`: ``$ETRT_LIBRARY``'s folder,
else the packaged one), else, in a source checkout, the CMake build's
``build/src/backend/libetrt_tools.so.0`` (beside ``libetrt.so``).
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, Optional, Tuple

_LOCK = threading.Lock()
_API: Any = None


class ReaderUnavailable(RuntimeError):
    """No libetrt_tools to read with (a pure-Python install, ``ETRT_NATIVE=0``)."""


def _checkout_library() -> Optional[str]:
    from .native import TOOLS_LIBRARY_NAME

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "build", "src", "backend", TOOLS_LIBRARY_NAME)
    return path if os.path.isfile(path) else None


def api():
    """The loaded C ABI (:class:`etrt._capi.ToolsApi`); raises :class:`ReaderUnavailable`."""
    global _API
    with _LOCK:
        if _API is None:
            from . import _capi, native

            path = native.tools_library_path() or _checkout_library()
            if path is None:
                raise ReaderUnavailable(
                    "reading blobs and engines needs libetrt_tools, the runtime's own reader, and none was found: "
                    "install etrt with its native libraries (pip install ./python, without ETRT_NATIVE=0), or set "
                    f"ETRT_LIBRARY=/path/to/libetrt.so.0 with {native.TOOLS_LIBRARY_NAME} beside it")
            try:
                _API = _capi.load_tools(path)
            except (OSError, _capi.AbiError) as e:
                raise ReaderUnavailable(f"reading blobs and engines needs libetrt_tools, and {path} cannot be used: "
                                        f"{e}") from None
        return _API


def available() -> bool:
    """Whether a libetrt_tools to read with can be loaded."""
    try:
        api()
    except ReaderUnavailable:
        return False
    return True


class Refused(Exception):
    """The runtime's reader refused the bytes; ``str()`` is its message. ``not_supported``: this build reads no
    such bytes (rather than finding them malformed)."""

    def __init__(self, message: str, not_supported: bool = False) -> None:
        super().__init__(message)
        self.not_supported = not_supported


def _span(data: Any, offset: int = 0, size: Optional[int] = None) -> Tuple[Any, int]:
    """``(argument, size)`` that hands ``data[offset:offset + size]`` (all of ``data`` by default) to a reader of the
    C ABI. An engine may be hundreds of MiB and the reader decodes it into memory of its own, so the bytes are handed
    over where they lie: a bytes object's own buffer (or an address inside it: a blob's engine section), or a
    writable buffer's (a bytearray) through ctypes. Only a read-only view of something else is copied, as ctypes
    cannot reach its address. The caller keeps ``data`` alive for the call."""
    import ctypes

    if not isinstance(data, bytes):
        view = memoryview(data)
        data = view.cast("B") if view.c_contiguous else view.tobytes()
    total = len(data)
    end = total if size is None else offset + size
    if not 0 <= offset <= end <= total:
        raise ValueError(f"bytes {offset}..{end} are outside a buffer of {total}")
    if end == offset:
        return b"", 0
    if isinstance(data, bytes):
        if offset == 0 and end == total:
            return data, total
        return ctypes.cast(data, ctypes.c_void_p).value + offset, end - offset
    if not data.readonly:
        return (ctypes.c_char * (end - offset)).from_buffer(data, offset), end - offset
    return bytes(data[offset:end]), end - offset


def _read(which: str, data: Any, offset: int = 0, size: Optional[int] = None) -> Dict[str, Any]:
    from . import _capi

    argument, size = _span(data, offset, size)
    code, text = api().read(which, argument, size)
    if code == _capi.OK and text is not None:
        return json.loads(text)
    if text is None:
        raise MemoryError(f"libetrt_tools could not answer etrt_{which} on {size} bytes (code {code})")
    raise Refused(text, not_supported=code == _capi.E_NOT_SUPPORTED)


def describe_blob(data: bytes) -> Dict[str, Any]:
    """``etrt_blob_describe``: the header fields and ``"metadata"`` as a dict; raises :class:`Refused`."""
    return _read("blob_describe", data)


def describe_engine(data: bytes, offset: int = 0, size: Optional[int] = None) -> Dict[str, Any]:
    """``etrt_engine_describe``: a GPU-free NvInfer engine as a dict; raises :class:`Refused`. The engine is
    ``data[offset:offset + size]`` (all of ``data`` by default), read in place."""
    return _read("engine_describe", data, offset, size)


def resolve_delegate(data: bytes) -> Dict[str, Any]:
    """``etrt_delegate_resolve``: a blob against its (GPU-free) engine as a delegate load resolves them -- the
    arguments, in-place aliases, profile signature and delegate-owned states -- as a dict whose ``"refusal"`` is None
    or the load's first refusal (``"rule"``, ``"entry"``, ``"message"``); raises :class:`Refused` for a blob the
    reader refuses, or (``not_supported``) on a build that resolves no engines without a GPU."""
    return _read("delegate_resolve", data)


def parse_byte_count(value: bytes) -> Optional[int]:
    """A byte count as the runtime reads the ``weight_streaming_budget`` compile spec and load option (its own
    rule, ``etrt_parse_byte_count``), or None where the runtime refuses the value."""
    import ctypes

    from . import _capi

    count = ctypes.c_int64()
    data = bytes(value)
    if api().parse_byte_count(data, len(data), ctypes.byref(count)) != _capi.OK:
        return None
    return int(count.value)


#: ExecuTorch's DeviceType by name (runtime/core/portable_type/device.h).
DEVICE_TYPES = {"cpu": 0, "cuda": 1}


def host_engine_binds(device: str, is_input: bool, name: str) -> Optional[str]:
    """None where a host engine (the GPU-free NvInfer's host mode) takes a delegate argument ExecuTorch placed on
    ``device`` (``"cpu"``, ``"cuda:0"``); else the refusal the call returns, in the runtime's words (its own rule,
    ``etrt_host_engine_binds``)."""
    import ctypes

    from . import _capi

    kind, _, index = device.partition(":")
    if kind not in DEVICE_TYPES:
        raise ValueError(f"{device!r} is not a device ExecuTorch places tensors on ({', '.join(DEVICE_TYPES)})")
    handle = ctypes.c_void_p()
    code = api().host_engine_binds(DEVICE_TYPES[kind], int(index or 0), int(bool(is_input)), name.encode(),
                                   ctypes.byref(handle))
    text = api().take_text(handle)
    if code == _capi.OK:
        return None
    if text is None:
        raise MemoryError(f"libetrt_tools could not answer etrt_host_engine_binds for {device} (code {code})")
    return text


def build_has_cuda() -> bool:
    return bool(api().build_has_cuda())


def device_memory(device: int) -> Optional[int]:
    """Total memory of CUDA device ``device``, or None (no CUDA build, no such device)."""
    import ctypes

    from . import _capi

    value = ctypes.c_uint64()
    if api().device_memory(int(device), ctypes.byref(value)) != _capi.OK:
        return None
    return int(value.value)
