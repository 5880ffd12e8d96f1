"""Profile requests for the calling thread: :func:`profile` pins one,
:func:`automatic` lets the input shapes choose (the C++
``OptimizationProfileGuard``), :func:`current_request` says which is in
force."""

from __future__ import annotations

import ctypes
import threading
from typing import List, NamedTuple, Optional, Tuple

from .. import _capi
from .loading import _api

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
