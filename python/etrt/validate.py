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
    blob, reference engine or delegate call that cannot be read, or that the
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
  - ``alias-unknown-kind``, ``alias-engine-mismatch``,
    ``alias-shape-mismatch``, ``alias-conflict``: an ``aliased_io`` entry the
    runtime refuses at load (see :func:`describe_aliases`);
  - ``bad-compile-spec``: a ``weight_streaming_budget`` compile spec that is
    not a byte count, or given twice;
  - ``runtime-refuses-program``: a program ExecuTorch 1.5.1's runtime refuses
    to load (constants in the deprecated ``constant_buffer``);
  - ``exceeds-planned-output``, ``output-rank-mismatch``: what some profile
    of a reference engine produces does not fit the output tensor ExecuTorch
    planned (computed by the engine's shape inference, every op kind);

* warnings

  - ``dynamic-single-profile``: a one-profile delegate with dynamic inputs
    beside multi-profile ones: pins ``N > 0`` fail on it at run time;
  - ``unlinked-regimes``: multi-profile delegates nothing links (no shared
    symbol, no shared input), so equal counts are all that is known;
  - ``rank-differs``, ``static-input-unreachable``, ``static-output-mismatch``;

* infos: ``output-capacity-unchecked`` (an opaque TensorRT plan: what its
  profiles produce cannot be computed), ``unverifiable`` (no signature, not a reference engine),
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
shares; this module holds the checks. Its names are also available here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import blob as _blob
from . import dtypes
from .analysis import (BACKEND_ID, MAX_BYTE_COUNT, WEIGHT_STREAMING_BUDGET, AliasView, DelegateInfo, DelegateRef,
                       TensorArg, analyze_pte, decode_blob, describe_aliases, load_program, lowered_modules,
                       parse_byte_count, printable, tensor_args)
from .signature import format_bounds, format_range, format_shape

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

#: Finding codes that mean "the input is damaged", not "the model is wrong".
BAD_INPUT_CODES = frozenset({"corrupt-blob", "corrupt-engine", "corrupt-program"})

ERROR, WARNING, INFO = "error", "warning", "info"


class ValidationError(ValueError):
    """Raised by :func:`check_program` when a program has validation errors;
    ``.result`` holds the full :class:`ValidationResult`."""

    def __init__(self, result: "ValidationResult") -> None:
        self.result = result
        lines = [f"{len(result.errors)} TensorRT profile validation error(s):"]
        lines += [f"  - {f.message}" for f in result.errors]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning" | "info"
    code: str
    message: str
    delegates: Tuple[DelegateRef, ...] = ()

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"

    def to_dict(self) -> Dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "message": self.message,
                "delegates": [d.to_dict() for d in self.delegates]}


@dataclass
class ValidationResult:
    """Findings plus the decoded delegates (for :mod:`etrt.inspect_pte`)."""

    source: Optional[str]
    delegates: List[DelegateInfo]
    findings: List[Finding]
    pte: Optional[Dict[str, Any]] = field(default=None, repr=False)

    @property
    def errors(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def infos(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == INFO]

    @property
    def ok(self) -> bool:
        """No errors (warnings and infos do not count)."""
        return not self.errors

    @property
    def bad_input(self) -> List[Finding]:
        """Errors that mean a damaged file rather than a wrong model."""
        return [f for f in self.errors if f.code in BAD_INPUT_CODES]

    @property
    def tensorrt_delegates(self) -> List[DelegateInfo]:
        return [d for d in self.delegates if d.is_tensorrt]

    def verdict(self) -> str:
        """``OK`` / ``FAILED`` with counts, one line."""
        n = len(self.tensorrt_delegates)
        counts = f"{len(self.errors)} error(s), {len(self.warnings)} warning(s)"
        word = "OK" if self.ok else "FAILED"
        return f"{word}: {n} TensorRT delegate(s), {counts}"

    def sorted_findings(self, infos: bool = True) -> List[Finding]:
        """Errors, then warnings, then (optionally) infos; each in discovery order."""
        order = (ERROR, WARNING, INFO) if infos else (ERROR, WARNING)
        return [f for sev in order for f in self.findings if f.severity == sev]

    def format(self, infos: bool = True) -> str:
        """The verdict line, then one indented line per finding (control
        characters a name brought into a message escaped, so each finding is
        one line and none reaches a terminal raw)."""
        return "\n".join([self.verdict()] + [f"  {printable(str(f))}" for f in self.sorted_findings(infos)])

    def raise_if_errors(self) -> "ValidationResult":
        if self.errors:
            raise ValidationError(self)
        return self

    def to_dict(self) -> Dict[str, Any]:
        return {"ok": self.ok, "verdict": self.verdict(),
                "errors": [f.to_dict() for f in self.errors],
                "warnings": [f.to_dict() for f in self.warnings],
                "infos": [f.to_dict() for f in self.infos]}


def _show_bytes(value: bytes) -> str:
    if not value:
        return "empty"
    text = "".join(chr(c) if 0x20 <= c < 0x7F and c not in (0x27, 0x5C) else f"\\x{c:02x}" for c in value[:64])
    return f"'{text}'" + (f"... ({len(value)} bytes)" if len(value) > 64 else "")


# --------------------------------------------------------------------------
# Checks


class _Checker:
    def __init__(self, delegates: List[DelegateInfo], plans: Optional[Sequence[Mapping[str, Any]]],
                 pte: Optional[Mapping[str, Any]] = None) -> None:
        self.delegates = delegates
        self.plans = plans
        self.pte = pte
        self.findings: List[Finding] = []

    def add(self, severity: str, code: str, message: str, *delegates: DelegateInfo) -> None:
        self.findings.append(Finding(severity, code, message, tuple(d.ref for d in delegates)))

    # -- per delegate ------------------------------------------------------------

    def run(self) -> List[Finding]:
        if self.pte is not None:
            self.check_constants(self.pte)
        trt = [d for d in self.delegates if d.is_tensorrt]
        if not trt:
            ids = sorted({d.ref.backend_id for d in self.delegates})
            self.add(INFO, "no-tensorrt-delegates",
                     f"the program has no {BACKEND_ID} delegates"
                     + (f" (backends: {', '.join(ids)})" if ids else " (no delegates at all)")
                     + "; there are no optimization profiles to check")
        for d in self.delegates:
            if not d.is_tensorrt:
                self.add(INFO, "foreign-backend",
                         f"{d.ref.label} is a {d.ref.backend_id} delegate, not TensorRT: profile requests do not "
                         "apply to it", d)
                continue
            self.check_one(d)
        usable = [d for d in trt if d.readable and d.signature is not None and not self.inconsistent(d)]
        # A profile request applies to one execution of one method, so the
        # delegates of different methods need not agree with each other.
        for mi in sorted({d.ref.method_index for d in usable}):
            self.check_cross([d for d in usable if d.ref.method_index == mi])
        return self.findings

    def inconsistent(self, d: DelegateInfo) -> bool:
        return any(f.code in ("signature-inconsistent", "signature-engine-mismatch", "engine-mismatch")
                   and d.ref in f.delegates
                   for f in self.findings)

    def check_one(self, d: DelegateInfo) -> None:
        label = d.ref.label
        if self.plans is not None and not d.calls:
            self.add(INFO, "never-called", f"{label} is never called by its method's instructions", d)
        if d.blob_error is not None:
            self.add(ERROR, "corrupt-blob", f"{label}: {d.blob_error}", d)
            return
        if d.engine_error is not None:
            self.add(ERROR, "corrupt-engine", f"{label}: {d.engine_error}; re-export the model", d)
            return
        if d.signature_error is not None:
            self.add(ERROR, "signature-inconsistent",
                     f"{label}: its profile_signature is not usable: {d.signature_error}; re-export the model", d)
        sig = d.blob_signature
        if sig is not None:
            for problem in sig.problems():
                self.add(ERROR, "signature-inconsistent",
                         f"{label}: its profile_signature contradicts itself: {problem}; regenerate the signature "
                         "from the engine's profiles (etrt.signature.Signature.from_torch_trt derives symbol ranges "
                         "from the bounds)", d)
            described = set(sig.input_names)
            missing = [b.name for b in d.input_bindings() if b.name not in described]
            if missing:
                self.add(WARNING, "signature-partial",
                         f"{label}: its profile_signature does not describe input(s) "
                         f"{', '.join(repr(n) for n in missing)}; their bounds are not checked. Describe every "
                         "engine input in the signature", d)
        self.check_aliases(d)
        self.check_compile_specs(d)
        if d.reference_engine is not None:
            self.check_engine(d)
        elif sig is None:
            dyn = [b.name for b in d.input_bindings() if -1 in b.shape]
            hint = (f" Its io_bindings mark dynamic dims on {', '.join(repr(n) for n in dyn)}; if the engine has "
                    "one profile, pins N > 0 will fail on it at run time." if dyn else "")
            self.add(INFO, "unverifiable",
                     f"{label} carries no profile_signature and its engine is an opaque TensorRT plan, so its "
                     f"profiles cannot be checked at export time.{hint} Re-export it with a signature "
                     "(etrt.signature, or 'profiles' in the IO description of 'etrt pack')", d)
        if d.tensor_args is not None or d.calls:
            self.check_calls(d)

    def check_aliases(self, d: DelegateInfo) -> None:
        """aliased_io as the runtime resolves it at load (see :func:`describe_aliases`)."""
        views = describe_aliases(d)
        for v in views:
            if v.status == "refused":
                self.add(ERROR, v.code or "alias-refused", f"{d.ref.label}: {v.problem}", d)
        # An input takes one aliased output at most.
        writer: Dict[str, AliasView] = {}
        for v in views:
            if v.status == "refused":
                continue  # already an error; the runtime stops there
            first = writer.setdefault(v.input, v)
            if first is not v:
                def source(x: AliasView) -> str:
                    return f"aliased_io[{x.index}]" if x.index is not None else "the engine's kv_cache_update"
                self.add(ERROR, "alias-conflict",
                         f"{d.ref.label}: input '{v.input}' is written in place by output '{first.output}' "
                         f"({source(first)}) and by output '{v.output}' ({source(v)}); an input takes one aliased "
                         "output at most, so the runtime refuses this delegate at load (InvalidProgram). "
                         "Re-export the model", d)

    def check_compile_specs(self, d: DelegateInfo) -> None:
        """The compile specs the runtime reads: weight_streaming_budget, at most once, a byte count."""
        specs = d.compile_spec_list if d.compile_spec_list is not None else list(d.compile_specs.items())
        budgets = [v for k, v in specs if k == WEIGHT_STREAMING_BUDGET]
        if len(budgets) > 1:
            self.add(ERROR, "bad-compile-spec",
                     f"{d.ref.label}: the '{WEIGHT_STREAMING_BUDGET}' compile spec appears {len(budgets)} times ("
                     + ", ".join(_show_bytes(v) for v in budgets) + "); the runtime refuses a delegate with more "
                     "than one (InvalidProgram). Re-export with one budget", d)
            return
        if not budgets:
            return
        value = budgets[0]
        n = parse_byte_count(value)
        if n is None:
            self.add(ERROR, "bad-compile-spec",
                     f"{d.ref.label}: compile spec '{WEIGHT_STREAMING_BUDGET}' is {_show_bytes(value)}, not a byte "
                     "count; the runtime refuses the delegate at load (InvalidProgram). The value must be one or "
                     f"more ASCII decimal digits (no sign, space, NUL or decimal point), at most {MAX_BYTE_COUNT} "
                     "bytes: re-export with a valid budget, e.g. '1073741824' for 1 GiB", d)
        elif d.reference_engine is not None and not d.reference_engine.streamable_weights:
            self.add(INFO, "weight-streaming-ignored",
                     f"{d.ref.label}: its weight_streaming_budget of {n} bytes is ignored at load: the engine has no "
                     "streamable weights (it was not built with weight streaming), so all its weights stay on the "
                     "device", d)

    def check_constants(self, pte: Mapping[str, Any]) -> None:
        """Where constants live, as ExecuTorch 1.5.1's runtime requires at Program::load and when a method loads.

        ExecuTorch's CMake builds (the 1.5.1 wheel's runtime among them) compile
        out the deprecated in-flatbuffer ``constant_buffer`` path: a program
        must carry a ``constant_segment`` with at least its placeholder offset,
        may not also use ``constant_buffer`` when it has constants, and its
        constant tensors must point into the segment."""
        program = pte.get("program") or {}
        refused = "ExecuTorch 1.5.1's runtime refuses the program at Program::load (InvalidProgram)"
        cbuf = program.get("constant_buffer") or []
        cseg = program.get("constant_segment")
        offsets = list((cseg or {}).get("offsets") or [])
        entries = f"{len(cbuf)} entr{'y' if len(cbuf) == 1 else 'ies'}"
        if not offsets:
            what = "no constant_segment" if cseg is None else "a constant_segment without offsets"
            self.add(ERROR, "runtime-refuses-program",
                     f"the program has {what} (its deprecated constant_buffer has {entries}), so it relies on the "
                     "constant_buffer path, which ExecuTorch's CMake builds (the 1.5.1 wheel's runtime among them) "
                     f"compile out: {refused}. Re-export the model with ExecuTorch 0.7 or later, which stores "
                     "constants in constant_segment")
            return
        segment_size = None
        if len(offsets) > 1:
            if cbuf:
                self.add(ERROR, "runtime-refuses-program",
                         f"the program stores constants both in the deprecated constant_buffer ({entries}) and in "
                         f"constant_segment ({len(offsets)} offsets); only one may be used, so {refused}. "
                         "Re-export the model")
                return
            segments = program.get("segments") or []
            index = cseg.get("segment_index", 0)
            if index >= len(segments):
                self.add(ERROR, "runtime-refuses-program",
                         f"constant_segment.segment_index {index} is not one of the program's {len(segments)} "
                         f"segment(s); {refused}. The .pte is corrupt: re-export the model")
                return
            seg = segments[index]
            base = (pte.get("extended_header") or {}).get("segment_base_offset", 0)
            end = base + seg.get("offset", 0) + seg.get("size", 0)
            size = pte.get("file_size")
            if size is not None and end > size:
                self.add(ERROR, "runtime-refuses-program",
                         f"the constant segment (segment {index}) ends at byte {end}, past the end of the {size}-byte "
                         f"file; {refused}. The .pte is truncated: re-export the model")
                return
            segment_size = seg.get("size", 0)
        from .pte import describe_value

        for plan in program.get("execution_plan") or []:
            bad = []
            for vi, value in enumerate(plan.get("values") or []):
                t = (value.get("val") or {}) if value.get("val_type") == "Tensor" else {}
                index = t.get("data_buffer_idx", 0)
                if index <= 0 or t.get("allocation_info") is not None:
                    continue
                if (t.get("extra_tensor_info") or {}).get("location") == "EXTERNAL":
                    continue  # named data, resolved elsewhere
                if len(offsets) == 1:
                    bad.append(f"value {vi} is a constant (data_buffer_idx {index}) but constant_segment holds no "
                               "constants (only the placeholder offset), so the runtime looks for it in the "
                               "deprecated constant_buffer, which its CMake builds compile out")
                elif index >= len(offsets):
                    bad.append(f"value {vi} is constant {index}, but constant_segment.offsets has {len(offsets)} "
                               "entries")
                else:
                    nbytes = describe_value(value).get("nbytes")
                    if nbytes is not None and segment_size is not None and offsets[index] + nbytes > segment_size:
                        bad.append(f"value {vi} is constant {index}: {nbytes} bytes at offset {offsets[index]} run "
                                   f"past the {segment_size}-byte constant segment")
            if bad:
                more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
                self.add(ERROR, "runtime-refuses-program",
                         f"method '{plan.get('name')}': {bad[0]}{more}; ExecuTorch 1.5.1's runtime refuses the "
                         "method when it loads (InvalidProgram). Re-export the model")

    def check_engine(self, d: DelegateInfo) -> None:
        """A reference engine can be read here: compare it with the blob."""
        label, eng, md = d.ref.label, d.reference_engine, d.metadata
        assert eng is not None and md is not None
        by_name = {t.name: t for t in eng.io}
        problems = []
        # Empty io_bindings: the runtime takes the engine's own IO tensors.
        if md.io_bindings and len(eng.io) != len(md.io_bindings):
            problems.append(f"the blob describes {len(md.io_bindings)} IO tensors, the engine has {len(eng.io)}")
        for b in md.io_bindings:
            t = by_name.get(b.name)
            if t is None:
                problems.append(f"the blob names IO tensor '{b.name}', which the engine does not have")
            elif t.is_input != b.is_input:
                problems.append(f"'{b.name}' is an {'input' if b.is_input else 'output'} in the blob but an "
                                f"{'input' if t.is_input else 'output'} of the engine")
            elif b.dtype and dtypes.normalize(b.dtype) != t.dtype:
                problems.append(f"'{b.name}' is {b.dtype} in the blob but {t.dtype} in the engine")
        for t in eng.inputs:
            if t.is_shape_tensor:
                problems.append(f"input '{t.name}' is a TensorRT shape tensor, which etrt does not support as "
                                "delegate IO")
        for t in eng.io:
            if t.on_host and not t.is_shape_tensor:
                problems.append(f"'{t.name}' is placed on the host (getTensorLocation returned kHOST) and is not a "
                                "shape tensor; etrt binds device memory only")
            if t.data_dependent:
                problems.append(f"output '{t.name}' has a data-dependent shape, which etrt cannot size before "
                                "running")
        if problems:
            self.add(ERROR, "engine-mismatch",
                     f"{label}: the blob and its reference engine do not belong together ("
                     + "; ".join(problems) + "); the runtime refuses it at init. Re-export the model", d)
        sig = d.blob_signature
        if sig is None:
            return
        engine_sig = d.engine_signature()
        if engine_sig is None:
            return
        diffs = []
        if sig.num_profiles != engine_sig.num_profiles:
            diffs.append(f"the signature has {sig.num_profiles} profiles, the engine {engine_sig.num_profiles}")
        else:
            engine_inputs = set(engine_sig.input_names)
            for inp in sig.inputs:
                if inp.name not in engine_inputs:
                    diffs.append(f"the signature describes input '{inp.name}', which the engine does not have")
                    continue
                actual = engine_sig.input(inp.name)
                for p, (want, have) in enumerate(zip(inp.profiles, actual.profiles)):
                    if want != have:
                        diffs.append(f"profile {p} input '{inp.name}': signature min {format_shape(want.min)} opt "
                                     f"{format_shape(want.opt)} max {format_shape(want.max)}, engine min "
                                     f"{format_shape(have.min)} opt {format_shape(have.opt)} max "
                                     f"{format_shape(have.max)}")
        if diffs:
            self.add(ERROR, "signature-engine-mismatch",
                     f"{label}: its profile_signature disagrees with the engine's own profiles ("
                     + "; ".join(diffs) + "); the runtime refuses it at init. Regenerate the signature from the "
                     "engine that is packed", d)

    def check_calls(self, d: DelegateInfo) -> None:
        label, md = d.ref.label, d.metadata
        assert md is not None and self.plans is not None
        plan = self.plans[d.ref.method_index]
        n_values = len(plan.get("values") or [])
        for call in d.calls:
            bad = [vi for vi in call.args if not 0 <= vi < n_values]
            if bad:
                self.add(ERROR, "corrupt-program",
                         f"{label}: the call at instruction {call.instruction} passes value {bad[0]}, but the "
                         f"method has {n_values} values; the .pte is corrupt, re-export the model", d)
                return
        bindings = d.arguments()
        if bindings is None:
            self.add(INFO, "bindings-from-engine",
                     f"{label}: its blob lists no io_bindings, so the runtime takes the IO tensors from the engine, "
                     "an opaque TensorRT plan here: the call's arguments cannot be checked against them", d)
            return
        n_in = sum(1 for b in bindings if b.is_input)
        aliased = set(d.aliased_outputs())
        n_aliased = sum(1 for b in bindings if not b.is_input and b.name in aliased)
        source = "the blob's io_bindings list" if md.io_bindings else "the engine has"
        for call in d.calls:
            args = tensor_args(plan, call) or []
            where = label if call is d.calls[0] else f"{label} (call at instruction {call.instruction})"
            pairs = d.match_args(args)
            if pairs is None:
                counts = f"{source} {n_in} input(s) and {len(bindings) - n_in} output(s)"
                if n_aliased:
                    counts += (f", {n_aliased} of them written in place into inputs: a call passes "
                               f"{len(bindings)} tensors, or {len(bindings) - n_aliased} without those outputs")
                self.add(ERROR, "arg-count-mismatch",
                         f"{where}: the call passes {len(args)} tensor(s), but {counts}; the runtime refuses the "
                         "call. The .pte and its engine do not match: re-export the model", d)
                continue
            for b, arg in pairs:
                if arg is None:
                    continue
                want = dtypes.normalize(b.dtype) if b.dtype else None
                have = arg.value.get("dtype")
                if want and have and want != have:
                    self.add(ERROR, "dtype-mismatch",
                             f"{where}: {'input' if b.is_input else 'output'} '{b.name}' is {b.dtype} in the blob, "
                             f"but the program passes value {arg.value_index} of dtype {have}; the runtime refuses "
                             "the call. Make the program tensor and the engine binding the same dtype", d)
            self.check_bounds(d, where, pairs)
            self.check_outputs(d, where, pairs)

    def check_bounds(self, d: DelegateInfo, where: str,
                     pairs: List[Tuple[_blob.IoBinding, Optional[TensorArg]]]) -> None:
        """Every profile's max inside the planned upper bound of the tensor it binds."""
        sig = d.signature
        if sig is None:
            return
        bound = {b.name: a for b, a in pairs if b.is_input and a is not None}
        for inp in sig.inputs:
            arg = bound.get(inp.name)
            if arg is None:
                continue
            sizes = arg.value["sizes"]
            dyn = arg.value["dynamism"]
            what = f"input '{inp.name}' (value {arg.value_index}, planned upper bound {format_shape(sizes)}"
            what += ", static)" if dyn == "STATIC" else ")"
            if len(sizes) == inp.rank:
                over = [(p, k, b.max[k], sizes[k]) for p, b in enumerate(inp.profiles)
                        for k in range(inp.rank) if b.max[k] > sizes[k]]
                if over:
                    detail = "; ".join(f"profile {p} dim {k} max {mx} > {ub}" for p, k, mx, ub in over)
                    worst = {}
                    for p, k, mx, ub in over:
                        worst[k] = max(worst.get(k, 0), mx)
                    fix = ", ".join(f"dim {k} to at least {mx}" for k, mx in sorted(worst.items()))
                    self.add(ERROR, "exceeds-planned-bounds",
                             f"{where}: {what}: {detail}. A profile may not admit shapes larger than the buffer "
                             f"ExecuTorch planned; lower those profiles' max, or re-export with a larger upper bound "
                             f"for {fix} (e.g. torch.export Dim max) so memory planning covers every profile", d)
                if dyn == "STATIC":
                    unreachable = [p for p, b in enumerate(inp.profiles) if not b.contains(sizes)]
                    if unreachable:
                        self.add(WARNING, "static-input-unreachable",
                                 f"{where}: {what} is static in the program but profile(s) "
                                 f"{', '.join(map(str, unreachable))} do not admit {format_shape(sizes)}; "
                                 "pinning those profiles always fails. Mark the tensor dynamic, or fix the profiles",
                                 d)
            else:
                cap = math.prod(sizes)
                over = [(p, math.prod(b.max)) for p, b in enumerate(inp.profiles) if math.prod(b.max) > cap]
                if over:
                    detail = "; ".join(f"profile {p} max {format_shape(inp.profiles[p].max)} = {n} elements"
                                       for p, n in over)
                    self.add(ERROR, "exceeds-planned-bounds",
                             f"{where}: {what}: {detail}, more than the {cap} elements planned. Lower those "
                             "profiles' max or re-export with a larger upper bound", d)
                self.add(WARNING, "rank-differs",
                         f"{where}: {what} has rank {len(sizes)} in the program but rank {inp.rank} in the "
                         "signature; only element counts were compared. Make the engine input and the program "
                         "tensor the same rank", d)

    def check_outputs(self, d: DelegateInfo, where: str,
                      pairs: List[Tuple[_blob.IoBinding, Optional[TensorArg]]]) -> None:
        """What each profile can make each output, against the capacity ExecuTorch planned for it.

        Only a reference engine can be evaluated here: its shape inference
        (every op kind, 1 to 8) gives each output's shape at every profile's
        min and max input shapes; outputs only grow with their inputs, so the
        max is the largest. An opaque TensorRT plan cannot be evaluated, and
        the finding says so (the runtime then refuses an oversized output at
        execute)."""
        eng = d.reference_engine
        outputs = [(b, arg) for b, arg in pairs if not b.is_input and arg is not None]
        if eng is None:
            if outputs and d.engine_kind == "tensorrt":
                self.add(INFO, "output-capacity-unchecked",
                         f"{where}: its engine is an opaque TensorRT plan, so the output shapes its profiles produce "
                         "cannot be computed here and the planned capacity of its outputs was not checked; the "
                         "runtime refuses an execution whose output exceeds its planned buffer (InvalidArgument)", d)
            return
        if not outputs:
            return
        produced = [(eng.output_shapes(p, "min"), eng.output_shapes(p, "max")) for p in range(eng.num_profiles)]
        for b, arg in outputs:
            t = eng.tensor(b.name)
            if t is None or t.is_input or t.data_dependent:
                continue  # engine-mismatch already says why
            sizes = tuple(arg.value["sizes"])
            dyn = arg.value["dynamism"]
            if dyn == "DYNAMIC_UNBOUND":
                continue  # no upper bound: ExecuTorch grows the buffer
            what = (f"output '{b.name}' (value {arg.value_index}, planned upper bound {format_shape(sizes)}"
                    + (", static)" if dyn == "STATIC" else ")"))
            over, ranks, static = [], [], []
            for p, (low, high) in enumerate(produced):
                lo, hi = low[b.name], high[b.name]
                if not sizes and hi == (1,):
                    continue  # the runtime fills a 0-d tensor from a [1] output
                if len(hi) != len(sizes):
                    ranks.append((p, hi))
                    continue
                dims = [(k, hi[k], sizes[k]) for k in range(len(hi)) if hi[k] > sizes[k]]
                if dims:
                    over.append((p, hi, dims))
                elif dyn == "STATIC" and (lo != sizes or hi != sizes):
                    static.append((p, lo, hi))
            if ranks:
                detail = "; ".join(f"profile {p} produces {format_shape(hi)}" for p, hi in ranks)
                self.add(ERROR, "output-rank-mismatch",
                         f"{where}: {what}: {detail}, of another rank; the runtime cannot resize the program tensor "
                         "to it and refuses those executions (InvalidArgument). Make the program tensor the engine "
                         "output's rank", d)
            if over:
                detail = "; ".join(f"profile {p} produces up to {format_shape(hi)} ("
                                   + ", ".join(f"dim {k}: {h} > {u}" for k, h, u in dims) + ")" for p, hi, dims in over)
                need = [max([sizes[k]] + [hi[k] for _, hi, _ in over]) for k in range(len(sizes))]
                self.add(ERROR, "exceeds-planned-output",
                         f"{where}: {what}: {detail}. The runtime refuses every execution whose output exceeds its "
                         f"planned buffer (InvalidArgument); re-export with an upper bound of at least "
                         f"{format_shape(need)} for this output (e.g. a larger torch.export Dim max), or lower those "
                         "profiles' max", d)
            if static:
                detail = "; ".join(f"profile {p} produces {format_shape(lo)}"
                                   + ("" if lo == hi else f" to {format_shape(hi)}") for p, lo, hi in static)
                self.add(WARNING, "static-output-mismatch",
                         f"{where}: {what} is static in the program, but {detail}; ExecuTorch cannot resize a static "
                         "tensor, so the executions that produce another shape fail. Mark the tensor dynamic, or fix "
                         "the profiles", d)

    # -- across delegates ------------------------------------------------------------

    def check_cross(self, usable: List[DelegateInfo]) -> None:
        multi = [d for d in usable if d.signature.num_profiles > 1]
        single = [d for d in usable if d.signature.num_profiles == 1]
        if multi:
            counts = {d.signature.num_profiles for d in multi}
            if len(counts) > 1:
                detail = ", ".join(f"{d.ref.label} has {d.signature.num_profiles}" for d in multi)
                self.add(ERROR, "profile-count-mismatch",
                         f"multi-profile TensorRT delegates disagree on the number of profiles ({detail}). A pinned "
                         "profile index applies to every delegate of the method, so it must mean the same regime "
                         "in each: rebuild them with the same profiles in the same order (one-profile static "
                         "delegates may stay as they are)", *multi)
            else:
                self.check_regimes(multi)
        for d in single:
            sig = d.signature
            if sig.is_static:
                self.add(INFO, "static-single-profile",
                         f"{d.ref.label} is static (one profile, fixed shapes): it stays on profile 0 and ignores "
                         "profile pins", d)
                continue
            dyn = ", ".join(f"'{n}' dim {k}: {format_range(lo, hi)}" for n, k, lo, hi in sig.dynamic_dims())
            if multi:
                n = multi[0].signature.num_profiles
                self.add(WARNING, "dynamic-single-profile",
                         f"{d.ref.label} has one profile but dynamic inputs ({dyn}). It runs on profile 0 under "
                         "automatic selection and under OptimizationProfileGuard(0), but a pin of profile N > 0 makes "
                         "it return an error at run time, because it cannot honor N (docs/design.md, decision 4). "
                         f"Build it with the same {n} profiles as the multi-profile delegates, or make its inputs "
                         "static", d)
            else:
                self.add(INFO, "dynamic-single-profile",
                         f"{d.ref.label} has one profile with dynamic inputs ({dyn}); pins of profile N > 0 fail "
                         "on it at run time (docs/design.md, decision 4)", d)

    def check_regimes(self, multi: List[DelegateInfo]) -> None:
        """Same count everywhere: compare shared symbols and shared input tensors index by index."""
        links: Dict[int, set] = {i: set() for i in range(len(multi))}
        flagged = set()
        # Named symbolic dimensions.
        symbols: Dict[str, List[int]] = {}
        for i, d in enumerate(multi):
            for name in d.signature.symbol_names():
                symbols.setdefault(name, []).append(i)
        for name, owners in symbols.items():
            first = owners[0]
            ref_ranges = multi[first].signature.symbol_ranges(name)
            for j in owners[1:]:
                links[first].add(j)
                links[j].add(first)
                other = multi[j].signature.symbol_ranges(name)
                bad = [p for p in range(len(ref_ranges)) if ref_ranges[p] != other[p]]
                if bad:
                    flagged.add((first, j))
                    a, b = multi[first], multi[j]
                    detail = "; ".join(f"profile {p}: {format_range(*ref_ranges[p])} in {a.ref.short}, "
                                       f"{format_range(*other[p])} in {b.ref.short}" for p in bad)
                    self.add(ERROR, "regime-mismatch",
                             f"profile index {', '.join(map(str, bad))} means different regimes in {a.ref.label} and "
                             f"{b.ref.label}: symbolic dim '{name}' differs ({detail}). Equal profile counts are "
                             f"not enough: rebuild the engines so that each profile index covers the same "
                             f"'{name}' range in every delegate (e.g. give every partition the same "
                             "Input(profiles=[...]))", a, b)
        # Input tensors read by several delegates.
        readers: Dict[Tuple[int, int], List[Tuple[int, str]]] = {}
        for i, d in enumerate(multi):
            if d.tensor_args is None:
                continue
            described = set(d.signature.input_names)
            for b in d.input_bindings():
                arg = d.bound_value(b.name)
                if arg is not None and b.name in described:
                    readers.setdefault((d.ref.method_index, arg.value_index), []).append((i, b.name))
        for (mi, vi), owners in readers.items():
            if len(owners) < 2:
                continue
            first, first_name = owners[0]
            a = multi[first]
            ia = a.signature.input(first_name)
            for j, name in owners[1:]:
                if j == first:
                    continue
                links[first].add(j)
                links[j].add(first)
                b = multi[j]
                ib = b.signature.input(name)
                if ia.rank != ib.rank or (first, j) in flagged:
                    continue
                bad = [p for p in range(len(ia.profiles))
                       if (ia.profiles[p].min, ia.profiles[p].max) != (ib.profiles[p].min, ib.profiles[p].max)]
                if bad:
                    flagged.add((first, j))
                    detail = "; ".join(f"profile {p}: {format_bounds(ia.profiles[p])} vs "
                                       f"{format_bounds(ib.profiles[p])}" for p in bad)
                    self.add(ERROR, "regime-mismatch",
                             f"profile index {', '.join(map(str, bad))} means different regimes in {a.ref.label} and "
                             f"{b.ref.label}: both read value {vi} (as '{first_name}' and '{name}') but admit "
                             f"different shapes ({detail}). Rebuild the engines with the same min/max for this "
                             "input at every profile index", a, b)
        # Anything not linked to the rest cannot be shown to agree.
        components = _components(links)
        if len(components) > 1:
            groups = [" + ".join(multi[i].ref.label for i in sorted(c)) for c in components]
            self.add(WARNING, "unlinked-regimes",
                     f"{len(multi)} multi-profile TensorRT delegates all have {multi[0].signature.num_profiles} "
                     "profiles, but equal profile counts prove nothing and these groups share no named symbolic "
                     f"dimension and no input tensor: {'; '.join(groups)}. Validation cannot show that each "
                     "profile index means the same regime in all of them; name the symbolic dimensions (e.g. "
                     "'seq_len') in every delegate's profile_signature", *multi)


def _components(links: Mapping[int, set]) -> List[List[int]]:
    seen, out = set(), []
    for start in sorted(links):
        if start in seen:
            continue
        stack, comp = [start], []
        seen.add(start)
        while stack:
            n = stack.pop()
            comp.append(n)
            for m in links[n]:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        out.append(sorted(comp))
    return out


# --------------------------------------------------------------------------
# Entry points


def validate_program(source: Any) -> ValidationResult:
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
    findings = _Checker(delegates, plans, pte).run()
    return ValidationResult(path, delegates, findings, pte)


def check_program(source: Any) -> ValidationResult:
    """Like :func:`validate_program`, but raises :class:`ValidationError`
    (message lists every error) when there are errors. For exporters::

        from etrt.validate import check_program
        check_program(executorch_program_manager)   # or a .pte path / bytes
    """
    return validate_program(source).raise_if_errors()
