"""ctypes declarations of libetrt's C ABI (``include/etrt/c_api.h``) and of
libetrt_tools' (``include/etrt/tools_c_api.h``: the runtime's readers and
rules the tools ask, in a library of their own beside libetrt).

Internal: :mod:`etrt.runtime` and :mod:`etrt._reader` are the public faces.
This module only loads a given library file and checks its ABI version; it
imports neither torch nor ExecuTorch, so the C ABIs can be tested on their own.
"""

from __future__ import annotations

import ctypes
from typing import Optional

#: The C ABI version of libetrt this module speaks (ETRT_ABI_VERSION).
ABI_VERSION = 6
#: The C ABI version of libetrt_tools this module speaks (ETRT_TOOLS_ABI_VERSION).
TOOLS_ABI_VERSION = 1

OK = 0
E_INVALID_ARGUMENT = 1
E_OUT_OF_ORDER = 2
E_BAD_HANDLE = 3
E_NO_MEMORY = 4
E_FAILED = 5
E_NOT_SUPPORTED = 6

REQUEST_DEFAULT, REQUEST_PINNED, REQUEST_AUTO = 0, 1, 2
POLICY_STICKY_FIRST_FIT, POLICY_FIRST_FIT = 0, 1

#: The names etrt_counter reads (etrt/options.h kCounter*, in its order; tests/python/test_runtime.py checks them).
COUNTERS = ("profile_switches", "executions", "last_profile", "state_bytes", "scratch_bytes",
            "host_to_device_bytes", "device_to_host_bytes", "realigned_bytes", "write_back_bytes",
            "engines_deserialized", "engines_resident", "engine_bytes", "engine_sessions")

ERROR_NAMES = {E_INVALID_ARGUMENT: "invalid argument", E_OUT_OF_ORDER: "out of order",
               E_BAD_HANDLE: "bad handle", E_NO_MEMORY: "out of memory"}


class ExecutionRecordStruct(ctypes.Structure):
    _fields_ = [
        ("delegate", ctypes.c_char * 64),
        ("profile", ctypes.c_int32),
        ("num_profiles", ctypes.c_int32),
        ("switched", ctypes.c_uint8),
        ("pin_ignored", ctypes.c_uint8),
        ("ok", ctypes.c_uint8),
        ("reserved", ctypes.c_uint8),
        ("host_to_device_bytes", ctypes.c_int64),
        ("device_to_host_bytes", ctypes.c_int64),
        ("realigned_bytes", ctypes.c_int64),
        ("write_back_bytes", ctypes.c_int64),
    ]


class AbiError(ImportError):
    """The library is not a libetrt (or libetrt_tools) this package can drive."""


_SIGNATURES = {
    "etrt_abi_version": (ctypes.c_uint32, []),
    "etrt_version": (ctypes.c_char_p, []),
    "etrt_profile_push_pinned": (ctypes.c_int, [ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32)]),
    "etrt_profile_push_auto": (ctypes.c_int, [ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32)]),
    "etrt_profile_pop": (ctypes.c_int, [ctypes.c_uint32]),
    "etrt_profile_depth": (ctypes.c_uint32, []),
    "etrt_profile_current": (None, [ctypes.POINTER(ctypes.c_int32)] * 3),
    "etrt_report_create": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "etrt_report_destroy": (ctypes.c_int, [ctypes.c_void_p]),
    "etrt_report_counts": (ctypes.c_int, [ctypes.c_void_p] + [ctypes.POINTER(ctypes.c_uint64)] * 3),
    "etrt_report_capacity": (ctypes.c_uint64, []),
    "etrt_report_entry": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ExecutionRecordStruct),
                                         ctypes.c_size_t]),
    "etrt_report_clear": (ctypes.c_int, [ctypes.c_void_p]),
    "etrt_counter": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64)]),
    "etrt_reset_state": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int64)]),
    "etrt_last_error_message": (ctypes.c_char_p, []),
    "etrt_has_last_error": (ctypes.c_int, []),
    "etrt_clear_last_error": (None, []),
    "etrt_set_default_load_option_bool": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                                         ctypes.c_size_t]),
    "etrt_set_default_load_option_int": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int32, ctypes.c_char_p,
                                                        ctypes.c_size_t]),
    "etrt_set_default_load_option_string": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                                           ctypes.c_size_t]),
    "etrt_clear_default_load_options": (None, [ctypes.c_char_p]),
    "etrt_default_load_options": (ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t]),
    "etrt_default_load_options_reads": (ctypes.c_uint64, []),
}

# libetrt_tools (etrt._reader).
_TOOLS_SIGNATURES = {
    "etrt_tools_abi_version": (ctypes.c_uint32, []),
    "etrt_text_data": (ctypes.c_void_p, [ctypes.c_void_p]),
    "etrt_text_size": (ctypes.c_size_t, [ctypes.c_void_p]),
    "etrt_text_free": (None, [ctypes.c_void_p]),
    # The readers take `const void*`: c_void_p passes a bytes object's own buffer, or the address of bytes inside
    # a larger buffer (a blob's engine section), so a large engine is never copied on the way in.
    "etrt_blob_describe": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    "etrt_engine_describe": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    "etrt_build_has_cuda": (ctypes.c_int, []),
    "etrt_device_memory": (ctypes.c_int, [ctypes.c_int32, ctypes.POINTER(ctypes.c_uint64)]),
    # The loader's resolution of a blob against its engine (etrt._reader.resolve_delegate).
    "etrt_delegate_resolve": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    # The runtime's byte-count rule (etrt._reader.parse_byte_count).
    "etrt_parse_byte_count": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64)]),
    # A host engine's rule for arguments ExecuTorch placed on a device (etrt._reader.host_engine_binds).
    "etrt_host_engine_binds": (ctypes.c_int, [ctypes.c_int32, ctypes.c_int32, ctypes.c_int, ctypes.c_char_p,
                                              ctypes.POINTER(ctypes.c_void_p)]),
}


class _Bound:
    """The functions of one loaded library, typed, after its ABI version is checked. ``lib`` keeps it loaded."""

    _LIBRARY = _VERSION_FN = _HEADER = ""
    _VERSION = 0
    _SIGNATURES: dict = {}

    def __init__(self, lib: ctypes.CDLL, path: str) -> None:
        self.lib = lib
        self.path = path
        try:
            version_fn = getattr(lib, self._VERSION_FN)
        except AttributeError:
            raise AbiError(f"{path} has no {self._VERSION_FN}(): it is not a {self._LIBRARY} with the C ABI "
                           f"({self._HEADER}); rebuild etrt") from None
        version_fn.restype = ctypes.c_uint32
        version_fn.argtypes = []
        self.abi_version = int(version_fn())
        if self.abi_version != self._VERSION:
            raise AbiError(f"{path} speaks {self._LIBRARY} C ABI version {self.abi_version}, this Python package "
                           f"speaks {self._VERSION}: install the etrt package and its native libraries together")
        for name, (restype, argtypes) in self._SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise AbiError(f"{path} lacks {name}() of {self._LIBRARY} C ABI version {self._VERSION}; rebuild "
                               "etrt") from None
            fn.restype = restype
            fn.argtypes = argtypes
            if name != self._VERSION_FN:  # self.abi_version is the number
                setattr(self, name[len("etrt_"):], fn)


class CApi(_Bound):
    """The functions of one loaded libetrt, typed. ``lib`` keeps it loaded."""

    _LIBRARY, _VERSION_FN, _HEADER = "libetrt", "etrt_abi_version", "include/etrt/c_api.h"
    _VERSION = ABI_VERSION
    _SIGNATURES = _SIGNATURES

    # Small conveniences used by etrt.runtime and the tests.

    def current(self):
        kind, index, policy = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int32()
        self.profile_current(ctypes.byref(kind), ctypes.byref(index), ctypes.byref(policy))
        return kind.value, index.value, policy.value

    def last_error(self) -> str:
        return (self.last_error_message() or b"").decode("utf-8", errors="replace")

    def defaults_text(self) -> str:
        size = self.default_load_options(None, 0)
        buffer = ctypes.create_string_buffer(size + 1)
        self.default_load_options(buffer, size + 1)
        return buffer.value.decode("utf-8", errors="replace")


class ToolsApi(_Bound):
    """The functions of one loaded libetrt_tools, typed. ``lib`` keeps it loaded."""

    _LIBRARY, _VERSION_FN, _HEADER = "libetrt_tools", "etrt_tools_abi_version", "include/etrt/tools_c_api.h"
    _VERSION = TOOLS_ABI_VERSION
    _SIGNATURES = _TOOLS_SIGNATURES

    def read(self, which: str, data, size: Optional[int] = None):
        """``(code, text)`` of ``etrt_<which>`` (``blob_describe``, ``engine_describe``, ``delegate_resolve``) on
        ``data`` (bytes, or the address of ``size`` bytes the caller keeps alive): the JSON answer (OK), the refusal
        (E_FAILED, E_NOT_SUPPORTED), or None as text (E_INVALID_ARGUMENT, E_NO_MEMORY)."""
        handle = ctypes.c_void_p()
        code = getattr(self, which)(data, len(data) if size is None else size, ctypes.byref(handle))
        return code, self.take_text(handle)

    def take_text(self, handle: ctypes.c_void_p) -> Optional[str]:
        """The text an ``etrt_text**`` received (None for a null one), freed."""
        if not handle.value:
            return None
        try:
            text = ctypes.string_at(self.text_data(handle), self.text_size(handle))
        finally:
            self.text_free(handle)
        return text.decode("utf-8", errors="replace")


def load(path: str, mode: Optional[int] = None) -> CApi:
    """Loads the libetrt at ``path`` (``RTLD_GLOBAL`` unless ``mode`` says otherwise) and binds its C ABI."""
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if mode is None else mode)
    except OSError as e:
        if "static TLS" in str(e):
            raise OSError(f"{e}. A library loaded with dlopen (as ctypes does) must fit its thread-locals into "
                          "glibc's small static TLS reserve; this libetrt's do not: rebuild it from a current "
                          "etrt") from e
        raise
    return CApi(lib, path)


def load_tools(path: str) -> ToolsApi:
    """Loads the libetrt_tools at ``path`` and binds its C ABI. It needs neither libetrt nor ExecuTorch."""
    return ToolsApi(ctypes.CDLL(path), path)
