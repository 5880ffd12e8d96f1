"""etrt: the export side of the etrt TensorRT delegate for ExecuTorch.

Pure Python, no PyTorch. Submodules:

* :mod:`etrt.pte` -- write ExecuTorch ``.pte`` programs made of delegate calls
  (``Program``), read them back (``read_pte``), and a JSON spec front door
  (``python -m etrt.pte --spec spec.json --out model.pte``).
* :mod:`etrt.blob` -- the TR01/TR02 delegate blob (byte-identical to the C++ writer).
* :mod:`etrt.signature` -- the canonical optimization-profile signature.
* :mod:`etrt.validate` -- whole-program checks that profile index ``i`` means
  the same regime in every TensorRT delegate (``validate_program``).
* :mod:`etrt.analysis` -- a program's delegates, decoded (what ``etrt.validate``
  checks and ``etrt inspect`` reports).
* :mod:`etrt.dtypes` -- the dtype names and aliases every module uses.
* :mod:`etrt.gpufree` -- reads engines of etrt's GPU-free NvInfer
  (format v2: IO, profiles, flags, op table, in-place aliases).
* :mod:`etrt.cli` -- ``etrt inspect | validate | pack`` (also ``python -m etrt``).
* :mod:`etrt.engine_builder` -- writes engines of the GPU-free NvInfer implementation.
* :mod:`etrt.runtime` -- runs ``.pte`` files through ExecuTorch's Python runtime
  with etrt's native library, with profile guards, reports and load options
  (``etrt.profile(1)``, ``etrt.automatic()``, ``etrt.report()``, ...; needs the
  package installed with ``pip install ./python``, see docs/python.md).
* :mod:`etrt.native` -- where the installed native library and its CMake
  package are, and what they were built against.

The names of :mod:`etrt.pte` are also available here (``etrt.Program``,
``etrt.read_pte``, ...), loaded on first use so that ``python -m etrt.pte``
does not import the module twice.
"""

__version__ = "0.1.0"

_PTE_NAMES = frozenset({
    "DTYPES", "FILE_IDENTIFIER", "Method", "PteError", "Program", "Toolchain",
    "ToolchainError", "describe_value", "find_toolchain", "load_spec",
    "program_from_spec", "read_pte", "verify_pte_bytes",
})


_VALIDATE_NAMES = frozenset({"validate_program", "check_program"})

# etrt.runtime's names: the first use loads the native runtime (and ExecuTorch's Python runtime, and torch).
_RUNTIME_NAMES = frozenset({
    "ExecutionError", "ExecutionRecord", "ProfileRequest", "Report", "automatic", "clear_default_load_options",
    "clear_last_error", "counters", "current_request", "default_load_options", "execute", "has_last_error",
    "last_error_message", "load_options", "profile", "report", "reset_state", "set_default_load_options",
})


def __getattr__(name):  # PEP 562: lazy re-exports
    if name in _PTE_NAMES:
        from . import pte
        return getattr(pte, name)
    if name in _VALIDATE_NAMES:
        from . import validate
        return getattr(validate, name)
    if name in _RUNTIME_NAMES:
        from . import runtime
        return getattr(runtime, name)
    if name == "Signature":
        from .signature import Signature
        return Signature
    raise AttributeError(f"module 'etrt' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_PTE_NAMES) + list(_VALIDATE_NAMES) + list(_RUNTIME_NAMES) + ["Signature"])
