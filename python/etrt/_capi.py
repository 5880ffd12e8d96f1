"""ctypes declarations of libetrt's C ABI (``include/etrt/c_api.h``).

Internal: :mod:`etrt.runtime` is the public face. This module only loads a
given library file and checks its ABI version; it imports neither torch nor
ExecuTorch, so the C ABI can be tested on its own.
"""

from __future__ import annotations

import ctypes
from typing import Optional

#: The C ABI version this module speaks (ETRT_ABI_VERSION).
ABI_VERSION = 5

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
    """The library is not a libetrt this package can drive."""


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
    # Version 2: the runtime's readers (etrt._reader).
    "etrt_text_data": (ctypes.c_void_p, [ctypes.c_void_p]),
    "etrt_text_size": (ctypes.c_size_t, [ctypes.c_void_p]),
    "etrt_text_free": (None, [ctypes.c_void_p]),
    # The readers take `const void*`: c_void_p passes a bytes object's own buffer, or the address of bytes inside
    # a larger buffer (a blob's engine section), so a large engine is never copied on the way in.
    "etrt_blob_describe": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    "etrt_engine_describe": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    "etrt_build_has_cuda": (ctypes.c_int, []),
    "etrt_device_memory": (ctypes.c_int, [ctypes.c_int32, ctypes.POINTER(ctypes.c_uint64)]),
    # Version 3: the loader's resolution of a blob against its engine (etrt._reader.resolve_delegate).
    "etrt_delegate_resolve": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]),
    # Version 4: the runtime's byte-count rule (etrt._reader.parse_byte_count).
    "etrt_parse_byte_count": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64)]),
    # Version 5: a host engine's rule for arguments ExecuTorch placed on a device (etrt._reader.host_engine_binds).
    "etrt_host_engine_binds": (ctypes.c_int, [ctypes.c_int32, ctypes.c_int32, ctypes.c_int, ctypes.c_char_p,
                                              ctypes.POINTER(ctypes.c_void_p)]),
}


class CApi:
    """The functions of one loaded libetrt, typed. ``lib`` keeps it loaded."""

    def __init__(self, lib: ctypes.CDLL, path: str) -> None:
        self.lib = lib
        self.path = path
        try:
            version_fn = lib.etrt_abi_version
        except AttributeError:
            raise AbiError(f"{path} has no etrt_abi_version(): it is not a libetrt with the C ABI "
                           "(include/etrt/c_api.h); rebuild etrt") from None
        version_fn.restype = ctypes.c_uint32
        version_fn.argtypes = []
        self.abi_version = int(version_fn())
        if self.abi_version != ABI_VERSION:
            raise AbiError(f"{path} speaks etrt C ABI version {self.abi_version}, this Python package speaks "
                           f"{ABI_VERSION}: install the etrt package and its native library together")
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise AbiError(f"{path} lacks {name}() of C ABI version {ABI_VERSION}; rebuild etrt") from None
            fn.restype = restype
            fn.argtypes = argtypes
            if name != "etrt_abi_version":  # self.abi_version is the number
                setattr(self, name[len("etrt_"):], fn)

    # Small conveniences used by etrt.runtime and the tests.

    def current(self):
        kind, index, policy = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_int32()
        self.profile_current(ctypes.byref(kind), ctypes.byref(index), ctypes.byref(policy))
        return kind.value, index.value, policy.value

    def last_error(self) -> str:
        return (self.last_error_message() or b"").decode("utf-8", errors="replace")

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

    def defaults_text(self) -> str:
        size = self.default_load_options(None, 0)
        buffer = ctypes.create_string_buffer(size + 1)
        self.default_load_options(buffer, size + 1)
        return buffer.value.decode("utf-8", errors="replace")


def load(path: str, mode: Optional[int] = None) -> CApi:
    """Loads ``path`` (``RTLD_GLOBAL`` unless ``mode`` says otherwise) and binds its C ABI."""
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if mode is None else mode)
    except OSError as e:
        if "static TLS" in str(e):
            raise OSError(f"{e}. A library loaded with dlopen (as ctypes does) must fit its thread-locals into "
                          "glibc's small static TLS reserve; this libetrt's do not: rebuild it from a current "
                          "etrt") from e
        raise
    return CApi(lib, path)
