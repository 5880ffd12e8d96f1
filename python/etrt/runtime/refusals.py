"""Why a delegate refused: the thread's last error message, and
:func:`execute`, which raises :class:`ExecutionError` carrying it instead of
ExecuTorch's bare error code."""

from __future__ import annotations

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
