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

Modules (importing any of them loads the native runtime):

* :mod:`etrt.runtime.loading` -- loading it, and what was loaded;
* :mod:`etrt.runtime.guards` -- :func:`profile`, :func:`automatic`,
  :func:`current_request`;
* :mod:`etrt.runtime.reports` -- :class:`Report`, :func:`counters`, :func:`reset_state`;
* :mod:`etrt.runtime.refusals` -- :func:`last_error_message`, :func:`execute`,
  :func:`load_method` (a method whose device memory cannot be allocated:
  :class:`DeviceAllocatorMissing`, saying what is needed);
* :mod:`etrt.runtime.options` -- default load options.
"""

from .guards import ProfileRequest, automatic, current_request, profile
from .loading import RuntimeLoadError, abi_version, executorch_library, library_path, version
from .options import clear_default_load_options, default_load_options, load_options, set_default_load_options
from .refusals import (DeviceAllocatorMissing, ExecutionError, clear_last_error, execute, has_last_error,
                       last_error_message, load_method)
from .reports import ExecutionRecord, Report, counters, report, reset_state

# Reachable here as before the split (tests reach for the loaded library).
from .loading import BACKEND_ID, _api  # noqa: F401

__all__ = [
    "DeviceAllocatorMissing",
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
    "load_method",
    "load_options",
    "profile",
    "report",
    "reset_state",
    "set_default_load_options",
    "version",
]
