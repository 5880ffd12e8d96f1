"""Why a delegate refused: the thread's last error message, and
:func:`execute`, which raises :class:`ExecutionError` carrying it instead of
ExecuTorch's bare error code."""

from __future__ import annotations

import os
import re
from typing import Any, Sequence

from .loading import _api


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


class DeviceAllocatorMissing(RuntimeError):
    """A method ExecuTorch could not load because it places memory on a
    device (a program exported with a ``target_device`` compile spec, as
    Torch-TensorRT's partitioner always adds) and no device allocator could
    give it: the one registered refused (its reason is
    :func:`last_error_message`: on a CPU build of etrt, that it has no CUDA),
    or none is registered (``ETRT_REGISTER_CUDA_ALLOCATOR=0``). The exception
    ExecuTorch raised is its ``__cause__``."""


# ExecuTorch 1.5.1's Python bindings: "Failed to allocate <n> bytes for buffer <i> on device <type>:<index>".
_DEVICE_BUFFER = re.compile(r"for buffer \d+ on device (\d+):(\d+)")


def load_method(program: Any, method_name: str = "forward") -> Any:
    """``program.load_method(method_name)`` (``program``: an
    ``executorch.runtime`` Program, or a ``.pte`` path loaded with
    ``Runtime.get()``), raising :class:`DeviceAllocatorMissing` with what is
    needed when the method's device memory cannot be allocated."""
    if isinstance(program, (str, os.PathLike)):
        from executorch.runtime import Runtime

        program = Runtime.get().load_program(os.fspath(program))
    clear_last_error()
    try:
        return program.load_method(method_name)
    except RuntimeError as e:
        m = _DEVICE_BUFFER.search(str(e))
        if m is None:
            raise
        device_type, index = int(m.group(1)), int(m.group(2))
        device = f"cuda:{index}" if device_type == 1 else f"device type {device_type}, index {index}"
        why = last_error_message()
        raise DeviceAllocatorMissing(
            f"{e}: method '{method_name}' places memory on {device} (the program was exported with a target_device "
            "compile spec, as Torch-TensorRT's partitioner always adds), and "
            + (f"the device allocator failed: {why}" if why else
               "no device allocator for it is registered in this process: etrt's was turned off "
               "(ETRT_REGISTER_CUDA_ALLOCATOR=0)")
            + ". Needed: etrt built with CUDA (ETRT_CMAKE_ARGS=-DETRT_WITH_CUDA=ON pip install ./python, which "
            "registers a CUDA device allocator when it loads) on a machine with a GPU, or ExecuTorch's CUDA backend "
            "loaded before etrt; or export the program without the target_device compile spec") from e
