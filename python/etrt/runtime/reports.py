"""What etrt's delegates did: per-thread reports of each execution
(:class:`Report`, the C++ ``ExecutionReport``) and the process-wide
:func:`counters`."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional

from .. import _capi
from .loading import _api


@dataclass(frozen=True)
class ExecutionRecord:
    """One delegate execution (etrt::ExecutionRecord)."""

    delegate: str  #: "<method>#<n>": its method and load order
    profile: int  #: the profile it ran on
    num_profiles: int  #: profiles its engine carries
    switched: bool  #: a profile change happened for this execution
    pin_ignored: bool  #: a pin was ignored by a static one-profile engine
    ok: bool  #: the execution succeeded
    #: Bytes the execution copied, by where they moved (:func:`counters` says which copy counts where).
    host_to_device_bytes: int = 0
    device_to_host_bytes: int = 0
    realigned_bytes: int = 0
    write_back_bytes: int = 0


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
                                           bool(record.ok), record.host_to_device_bytes,
                                           record.device_to_host_bytes, record.realigned_bytes,
                                           record.write_back_bytes))
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


def counters() -> Dict[str, int]:
    """The process-wide counters (etrt/options.h kCounter*): profile switches and
    executions of all etrt delegates since the process started, the profile
    of the most recent execution (-1 before the first), the bytes of
    delegate-owned state the live delegates hold (``state_bytes``), the bytes of
    TensorRT execution memory they hold (``scratch_bytes``: each shared scratch
    pool once, plus every other delegate's own), and the bytes the delegates
    copied since the process started, by where they moved, each copy in exactly
    one: ``host_to_device_bytes`` (host memory staged for a device engine),
    ``device_to_host_bytes`` (staged outputs copied back), ``realigned_bytes``
    (copies within one memory for TensorRT's 256-byte alignment rule) and
    ``write_back_bytes`` (updated caches and states copied to where they are
    kept). A counter the loaded libetrt does not have is left out."""
    out = {}
    value = ctypes.c_int64()
    for name in _capi.COUNTERS:
        if _api.counter(name.encode(), ctypes.byref(value)) == _capi.OK:
            out[name] = value.value
    return out


def reset_state(name: Optional[str] = None) -> int:
    """Starts a new sequence: writes the initial value (the exported one, or zeros) into every delegate-owned state of
    the live delegates (etrt/state.h), or only those named ``name`` (the mutable buffer's name, as ``etrt inspect``
    shows it). Returns how many states were reset; raises RuntimeError, with the reason, when writing one failed."""
    count = ctypes.c_int64()
    rc = _api.reset_state(name.encode() if name is not None else None, ctypes.byref(count))
    if rc != _capi.OK:
        raise RuntimeError(f"etrt.reset_state failed: {(_api.last_error_message() or b'').decode(errors='replace')}")
    return count.value
