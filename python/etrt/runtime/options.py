"""Process-wide default load options for the delegates loaded from Python
afterwards (ExecuTorch's Python API passes none of its own)."""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Any, Dict, Iterator

from .. import _capi
from .loading import _api


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
    ("context_per_profile", the default, or "switch" for the least memory),
    ``weight_streaming_budget`` (bytes, an int or a string of digits),
    ``cuda_graphs`` (bool), ``shared_scratch`` (bool), ``engine_host_code``
    (bool), ``plugin_libraries`` (paths separated by ':'), ``share_engine``
    (bool). Values are checked as the backend checks them (``ValueError``, and
    nothing changes). Delegates
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
