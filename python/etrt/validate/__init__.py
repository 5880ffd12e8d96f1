"""Whole-program validation of the TensorRT delegates in a ``.pte``.

A runner pins one profile index for a whole ``forward()`` (docs/design.md, decisions
1 and 4), so index ``i`` must mean the same regime in every multi-profile
TensorRT delegate of the program, and every profile must stay inside the
input bounds ExecuTorch's memory planning used. This module checks both at
export time, from the profile signature each blob carries (see
:mod:`etrt.signature`), and says what to change when they do not hold.

Checks (each finding names the delegates, profile indices, dimensions and
numbers involved):

* errors

  - ``corrupt-blob`` / ``corrupt-engine`` / ``corrupt-program``: a TensorRT
    blob, GPU-free NvInfer engine or delegate call that cannot be read, or that the
    runtime refuses at load (the readers refuse exactly what the C++ readers
    refuse, limits included: docs/limits.md);
  - ``profile-count-mismatch``: multi-profile delegates with different
    profile counts;
  - ``regime-mismatch``: multi-profile delegates with the same count whose
    signatures disagree, index by index, on a shared named symbolic dimension
    (``seq_len``) or on an input tensor they both read;
  - ``exceeds-planned-bounds``: a profile's max above the program's planned
    upper bound for that input (per dimension when the ranks match, in
    elements otherwise);
  - ``signature-inconsistent``, ``signature-engine-mismatch``,
    ``engine-mismatch``, ``arg-count-mismatch``, ``dtype-mismatch``: the
    signature contradicts itself or the engine, or the blob does not fit its
    delegate call;
  - ``alias-unknown-kind``, ``alias-unknown-tensor``, ``alias-engine-mismatch``,
    ``alias-shape-mismatch``, ``alias-conflict``, ``state-refused``,
    ``signature-engine-mismatch``, ``engine-mismatch``: the runtime's own
    resolution of the blob against a GPU-free NvInfer engine
    (``etrt_delegate_resolve``: the loader's code and message) refuses it, as
    the load would (see :func:`describe_aliases`);
  - ``bad-compile-spec``: a ``weight_streaming_budget`` compile spec that is
    not a byte count, or given twice;
  - ``needs-cuda-device-allocator`` (error with ``runtime="cpu"``, nothing
    with ``"cuda"``, else a warning): a method with memory planned on CUDA (a
    ``target_device`` export, as Torch-TensorRT writes), which loads only
    where a CUDA ``DeviceAllocator`` gives it (a CUDA build of etrt,
    ExecuTorch's CUDA backend; a CPU build's refuses);
  - ``host-engine-on-device``: a host engine behind arguments placed on a
    device, which the call refuses in any build (the runtime's rule and
    message, ``etrt_host_engine_binds``);
  - ``device-tensor-in-host-memory``: tensors placed on a device but planned
    in host memory (ExecuTorch's legacy planning), which no runtime runs;
  - ``needs-cuda-build`` with ``runtime="cpu"``: a CUDA-mode engine or a
    TensorRT plan, which a CPU build refuses at load;
  - ``runtime-refuses-program``: a program ExecuTorch 1.5.1's runtime refuses
    to load (constants in the deprecated ``constant_buffer``);
  - ``exceeds-planned-output``, ``output-rank-mismatch``: what some profile
    of a GPU-free NvInfer engine produces does not fit the output tensor ExecuTorch
    planned (computed by the engine's shape inference, every op kind);

* warnings

  - ``dynamic-single-profile``: a one-profile delegate with dynamic inputs
    beside multi-profile ones: pins ``N > 0`` fail on it at run time;
  - ``unlinked-regimes``: multi-profile delegates nothing links (no shared
    symbol, no shared input), so equal counts are all that is known;
  - ``rank-differs``, ``static-input-unreachable``, ``static-output-mismatch``;
  - ``needs-cuda-build`` (runtime not said): a CUDA-mode GPU-free NvInfer engine or a TensorRT plan, on
    a libetrt built without CUDA, which refuses it at load;
    ``scratch-exceeds-device``;

* infos: ``output-capacity-unchecked`` (an opaque TensorRT plan: what its
  profiles produce cannot be computed), ``unverifiable`` (no signature, not a GPU-free NvInfer engine),
  ``static-single-profile``, ``foreign-backend``, ``never-called``,
  ``no-tensorrt-delegates``, ``planned-bounds-unchecked``,
  ``bindings-from-engine`` (empty ``io_bindings``, opaque engine),
  ``weight-streaming-ignored`` (a budget for an engine without streamable weights).

The delegate's arguments meet its blob as the runtime binds them: the input
bindings in listed order, then the outputs (``io_bindings`` may interleave
them); a call may leave out every output written in place into an input.

Entry points: :func:`validate_program` (returns a :class:`ValidationResult`)
and :func:`check_program` (raises :class:`ValidationError` on errors). Both take
a ``.pte`` path or bytes, an object with a ``.buffer`` (ExecuTorch's
``ExecutorchProgramManager`` / ``ExecutorchProgram``), the dict
:func:`etrt.pte.read_pte` returns, or lowered delegates before serialization
(see :func:`validate_program`).

The delegates are decoded by :mod:`etrt.analysis`, which ``etrt inspect``
shares; this package holds the checks. Its names are also available here.

Modules:

* :mod:`etrt.validate.result` -- :class:`Finding`, :class:`ValidationResult`,
  :class:`ValidationError`;
* :mod:`etrt.validate.checker` -- the checker, which runs the checks below;
* :mod:`etrt.validate.program_checks` -- the program's constants;
* :mod:`etrt.validate.placement_checks` -- device placement against the runtime named;
* :mod:`etrt.validate.delegate_checks` -- each delegate: blob, signature,
  aliases, compile specs, GPU-free NvInfer engine;
* :mod:`etrt.validate.call_checks` -- each delegate call: arguments, planned
  bounds and outputs;
* :mod:`etrt.validate.cross_checks` -- the delegates of a method together: regimes.
"""

from __future__ import annotations

from typing import Any, Dict

from ..analysis import (BACKEND_ID, WEIGHT_STREAMING_BUDGET, AliasView, DelegateInfo, DelegateRef, analyze_pte,
                        decode_blob, describe_aliases, load_program, lowered_modules, parse_byte_count, printable)
from .checker import _Checker
from .placement_checks import RUNTIMES
from .result import BAD_INPUT_CODES, INFO, Finding, ValidationError, ValidationResult

# Reachable here as before the split.
from ..analysis import MAX_BYTE_COUNT, TensorArg, tensor_args  # noqa: F401
from .result import ERROR, WARNING  # noqa: F401

__all__ = [
    "AliasView",
    "BACKEND_ID",
    "BAD_INPUT_CODES",
    "DelegateInfo",
    "DelegateRef",
    "Finding",
    "ValidationError",
    "ValidationResult",
    "analyze_pte",
    "WEIGHT_STREAMING_BUDGET",
    "check_program",
    "describe_aliases",
    "load_program",
    "parse_byte_count",
    "printable",
    "validate_program",
]


# --------------------------------------------------------------------------
# Entry points


def validate_program(source: Any, runtime: str = "unknown") -> ValidationResult:
    """Validates every TensorRT delegate of a program; never raises for a
    model that is merely wrong (see the result's ``errors``).

    ``source`` is one of:

    * a ``.pte`` path, its bytes, or a :func:`etrt.pte.read_pte` dict -- all checks;
    * an object with a ``.buffer`` of ``.pte`` bytes: ExecuTorch's
      ``ExecutorchProgramManager`` (``to_edge(...).to_backend(...).to_executorch()``)
      -- all checks;
    * lowered delegates before serialization: an ``EdgeProgramManager`` after
      ``to_backend``, or an iterable of ``LoweredBackendModule``-like objects
      (``backend_id``, ``processed_bytes``) or ``(backend_id, bytes)`` pairs --
      every check except the planned-bounds one, which needs the memory plan.

    ``runtime`` names the runtime the program will meet (:data:`RUNTIMES`):
    ``"cpu"`` (a CPU build of etrt: memory planned on CUDA and CUDA-mode
    engines are errors), ``"cuda"`` (a CUDA build of etrt: no finding for
    them) or ``"unknown"`` (warnings saying what they need). Host engines
    behind CUDA-placed arguments and legacy device planning are errors for
    every runtime.

    The ExecuTorch object paths are duck-typed and unverified here (PyTorch
    cannot be installed in etrt's CI). Raises :class:`etrt.pte.PteError` when
    the ``.pte`` itself cannot be read and ``TypeError`` for an unknown source.
    """
    lowered = lowered_modules(source)
    if lowered is not None:
        delegates = []
        method_index: Dict[str, int] = {}
        for method, backend_id, data in lowered:
            mi = method_index.setdefault(method, len(method_index))
            n = sum(1 for d in delegates if d.ref.method_index == mi)
            info = DelegateInfo(ref=DelegateRef(method, mi, n, None, backend_id), data=data)
            decode_blob(info)
            delegates.append(info)
        findings = _Checker(delegates, None).run()
        if any(d.is_tensorrt for d in delegates):
            findings.append(Finding(INFO, "planned-bounds-unchecked",
                                    "checked lowered delegates before serialization: profile bounds were not "
                                    "compared with the planned input bounds; validate the .pte as well"))
        return ValidationResult(None, delegates, findings)
    pte, path = load_program(source)
    delegates = analyze_pte(pte)
    plans = pte["program"].get("execution_plan") or []
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(sorted(RUNTIMES))}, not {runtime!r}")
    findings = _Checker(delegates, plans, pte, runtime).run()
    return ValidationResult(path, delegates, findings, pte)


def check_program(source: Any, runtime: str = "unknown") -> ValidationResult:
    """Like :func:`validate_program`, but raises :class:`ValidationError`
    (message lists every error) when there are errors. For exporters::

        from etrt.validate import check_program
        check_program(executorch_program_manager)   # or a .pte path / bytes
    """
    return validate_program(source, runtime).raise_if_errors()
