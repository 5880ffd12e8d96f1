"""What a program's delegates are, decoded as far as they can be: the model
that :mod:`etrt.validate` checks and :mod:`etrt.inspect_pte` reports.

:func:`load_program` reads a source (a ``.pte`` path or bytes, an object with
a ``.buffer``, a :func:`etrt.pte.read_pte` dict); :func:`analyze_pte` decodes
every delegate of it (:class:`DelegateInfo`: where it sits, its blob header
and metadata, signature, reference engine, and the tensors each call passes);
:func:`lowered_modules` and :func:`decode_blob` do the same for lowered
delegates before serialization. :func:`describe_aliases` resolves a
delegate's in-place aliases as the runtime does at load.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from . import blob as _blob
from . import dtypes
from .reference_engine import ReferenceEngine, try_read_reference_engine
from .signature import Signature, SignatureError, format_shape

__all__ = [
    "AliasView",
    "BACKEND_ID",
    "DelegateCall",
    "DelegateInfo",
    "DelegateRef",
    "MAX_BYTE_COUNT",
    "TensorArg",
    "WEIGHT_STREAMING_BUDGET",
    "analyze_pte",
    "decode_blob",
    "describe_aliases",
    "load_program",
    "lowered_modules",
    "parse_byte_count",
    "printable",
    "tensor_args",
]

#: The backend id of TensorRT delegates (Torch-TensorRT's and etrt's).
BACKEND_ID = "TensorRTBackend"


@dataclass(frozen=True)
class DelegateRef:
    """Where a delegate sits: its method, its index in the method's delegate
    table, and the instruction that calls it (None if never called or unknown)."""

    method: str
    method_index: int
    delegate_index: int
    instruction: Optional[int]
    backend_id: str

    @property
    def short(self) -> str:
        """``delegate 1`` (for repeated mentions inside one message)."""
        return f"delegate {self.delegate_index}"

    @property
    def label(self) -> str:
        """``'forward' delegate 1 (instruction 2)``."""
        text = f"'{self.method}' delegate {self.delegate_index}"
        if self.instruction is not None:
            text += f" (instruction {self.instruction})"
        return text

    def to_dict(self) -> Dict[str, Any]:
        return {"method": self.method, "method_index": self.method_index, "delegate_index": self.delegate_index,
                "instruction": self.instruction, "backend_id": self.backend_id}


@dataclass
class TensorArg:
    """A tensor argument of a delegate call: its position among the call's
    args, its value index in the method, and :func:`etrt.pte.describe_value`."""

    arg_position: int
    value_index: int
    value: Dict[str, Any]


@dataclass
class DelegateCall:
    chain: int
    instruction: int
    args: List[int]  # value indices


@dataclass
class DelegateInfo:
    """One delegate of the program, decoded as far as it can be."""

    ref: DelegateRef
    data: bytes = field(repr=False)
    location: Optional[str] = None  # "INLINE" | "SEGMENT" | None (not from a .pte)
    storage_index: Optional[int] = None
    compile_specs: Dict[str, bytes] = field(default_factory=dict, repr=False)
    #: every compile spec in file order, repeated keys included (None when not from a .pte)
    compile_spec_list: Optional[List[Tuple[str, bytes]]] = field(default=None, repr=False)
    calls: List[DelegateCall] = field(default_factory=list)
    #: tensor args of the first call, in order (None when not from a .pte)
    tensor_args: Optional[List[TensorArg]] = None
    header: Optional[Dict[str, Any]] = None
    metadata: Optional[_blob.Metadata] = None
    engine: Optional[bytes] = field(default=None, repr=False)
    blob_error: Optional[str] = None
    reference_engine: Optional[ReferenceEngine] = None
    engine_error: Optional[str] = None
    #: the signature the blob carries (None when absent or unusable)
    blob_signature: Optional[Signature] = None
    signature_error: Optional[str] = None
    # Computed once: the reference engine's profiles as a signature, and the tensor the first call binds to each
    # binding (validation looks both up per binding; recomputing them made it quadratic).
    _engine_signature: Any = field(default=None, repr=False, compare=False)
    _bound: Optional[Dict[str, Optional[TensorArg]]] = field(default=None, repr=False, compare=False)

    @property
    def is_tensorrt(self) -> bool:
        return self.ref.backend_id == BACKEND_ID

    @property
    def readable(self) -> bool:
        """A TensorRT delegate whose blob (and reference engine, if it is one) decoded."""
        return self.is_tensorrt and self.metadata is not None and self.engine_error is None

    @property
    def signature(self) -> Optional[Signature]:
        """The blob's signature, else the one read from a reference engine."""
        if self.blob_signature is not None:
            return self.blob_signature
        return self.engine_signature()

    def engine_signature(self) -> Optional[Signature]:
        """The reference engine's own profiles as a signature (computed once), or None."""
        if self.reference_engine is None:
            return None
        if self._engine_signature is None:
            try:
                self._engine_signature = self.reference_engine.to_signature()
            except SignatureError:
                self._engine_signature = False
        return self._engine_signature or None

    @property
    def signature_source(self) -> Optional[str]:
        if self.blob_signature is not None:
            return "blob"
        if self.signature is not None:
            return "engine"
        return None

    @property
    def num_profiles(self) -> Optional[int]:
        sig = self.signature
        return sig.num_profiles if sig is not None else None

    @property
    def engine_kind(self) -> Optional[str]:
        if self.engine is None:
            return None
        if self.reference_engine is not None or self.engine_error is not None:
            return "reference"
        return "tensorrt"

    def arguments(self) -> Optional[List[_blob.IoBinding]]:
        """The engine IO tensors in the delegate's argument order, as the
        runtime binds them: the blob's input bindings in listed order, then its
        outputs (they may interleave in ``io_bindings``). A blob with empty
        ``io_bindings`` takes the engine's own IO tensors: known here for a
        reference engine, None for an opaque TensorRT plan."""
        if self.metadata is None:
            return None
        if self.metadata.io_bindings:
            return self.metadata.arguments()
        if self.reference_engine is None:
            return None
        return _arguments_from_engine(self.reference_engine)

    def input_bindings(self) -> List[_blob.IoBinding]:
        return [b for b in self.arguments() or [] if b.is_input]

    def aliased_outputs(self) -> List[str]:
        """The outputs the runtime writes in place into an input: those the
        blob's ``aliased_io`` lists, plus the engine's own kv_cache_update
        aliases when the engine is readable (the runtime applies those too)."""
        if self.metadata is None:
            return []
        names = [a.output for a in self.metadata.aliased_io]
        if self.reference_engine is not None:
            listed = set(names)
            names += [o for o in self.reference_engine.aliases() if o not in listed]
        return names

    def match_args(self, args: Sequence[TensorArg]) -> Optional[List[Tuple[_blob.IoBinding, Optional[TensorArg]]]]:
        """Pairs each argument binding with the tensor a call passes for it, as
        the runtime does: a call passes a tensor for every binding, or for every
        binding but the aliased outputs (ExecuTorch leaves those out when the
        delegate owns the buffer; they pair with None). None when the count
        fits neither, or the bindings are unknown."""
        bindings = self.arguments()
        if bindings is None:
            return None
        if len(args) == len(bindings):
            return list(zip(bindings, args))
        aliased = set(self.aliased_outputs())
        kept = [b for b in bindings if b.is_input or b.name not in aliased]
        if not aliased or len(args) != len(kept):
            return None
        it = iter(args)
        return [(b, None if not b.is_input and b.name in aliased else next(it)) for b in bindings]

    def bound_value(self, binding_name: str) -> Optional[TensorArg]:
        """The program tensor passed for binding ``binding_name`` (first call)."""
        if self.tensor_args is None:
            return None
        if self._bound is None:
            self._bound = {}
            for b, arg in self.match_args(self.tensor_args) or []:
                self._bound.setdefault(b.name, arg)
        return self._bound.get(binding_name)


@dataclass(frozen=True)
class AliasView:
    """One output the runtime writes in place into an input, as the runtime
    treats it (see :func:`describe_aliases`)."""

    output: str
    input: str
    kind: str
    #: the blob's aliased_io entry, or None for an alias only the engine declares
    index: Optional[int]
    #: "ok" (checked here, the runtime accepts it), "unchecked" (the runtime
    #: checks it against an opaque engine) or "refused" (the runtime refuses the delegate)
    status: str
    #: what was checked, for ``etrt inspect`` ("the engine agrees", "shapes match", ...)
    detail: str
    #: for a refused alias: the finding's code and message (without the delegate label)
    code: Optional[str] = None
    problem: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"output": self.output, "input": self.input, "kind": self.kind, "index": self.index,
                "source": "blob" if self.index is not None else "engine", "status": self.status,
                "detail": self.detail}


def _control(c: str) -> bool:
    o = ord(c)
    return o < 0x20 or 0x7F <= o <= 0x9F


def printable(text: str) -> str:
    """``text`` with control characters (C0 with newlines, DEL, C1) as
    ``\\xNN``: names come from the file, and a report prints them to a terminal."""
    if not any(_control(c) for c in text):
        return text
    return "".join(f"\\x{ord(c):02x}" if _control(c) else c for c in text)


def _typed_shape(dtype: str, shape: Sequence[int]) -> str:
    return f"{dtype or '?'} {format_shape(list(shape))}"


def describe_aliases(d: "DelegateInfo") -> List[AliasView]:
    """The delegate's in-place aliases as the runtime resolves them at load:
    each ``aliased_io`` entry (its kind must be ``kv_cache_update``, whose pair
    must be the engine's own, or ``user``, whose output and input must have one
    shape and type), then each alias the engine declares that the blob leaves
    out (the runtime applies those too). A kv_cache_update pair is compared
    with a reference engine's op table; a user pair with the engine's declared
    IO shapes (``-1`` dims included, exactly) when the engine is readable, else
    with the io_bindings shapes when both are given."""
    md, eng = d.metadata, d.reference_engine
    if md is None:
        return []
    views: List[AliasView] = []
    by_name = {b.name: b for b in md.io_bindings}
    for k, a in enumerate(md.aliased_io):
        what = f"aliased_io[{k}] (output '{a.output}', input '{a.input}', kind '{a.kind}')"

        def view(status: str, detail: str, code: Optional[str] = None, problem: Optional[str] = None) -> None:
            views.append(AliasView(a.output, a.input, a.kind, k, status, detail, code, problem))

        if a.kind not in _blob.ALIAS_KINDS:
            view("refused", f"unknown kind '{a.kind}': the runtime refuses this delegate", "alias-unknown-kind",
                 f"{what} has an unknown kind; the runtime knows '{_blob.ALIAS_KIND_KV_CACHE_UPDATE}' and "
                 f"'{_blob.ALIAS_KIND_USER}' and refuses this delegate at load (InvalidProgram). Re-export the "
                 "model with one of them")
        elif a.kind == _blob.ALIAS_KIND_USER:
            out_t = eng.tensor(a.output) if eng is not None else None
            in_t = eng.tensor(a.input) if eng is not None else None
            ob, ib = by_name.get(a.output), by_name.get(a.input)
            if out_t is not None and in_t is not None:
                found = (out_t.dtype, list(out_t.shape), in_t.dtype, list(in_t.shape), "the engine declares")
            elif ob is not None and ib is not None and ob.shape and ib.shape:
                found = (dtypes.normalize(ob.dtype) if ob.dtype else "", list(ob.shape),
                         dtypes.normalize(ib.dtype) if ib.dtype else "", list(ib.shape), "the io_bindings give")
            else:
                view("unchecked", "user; the shapes are not known here, the runtime compares the engine's at load")
                continue
            odt, oshape, idt, ishape, source = found
            if oshape == ishape and (not odt or not idt or odt == idt):
                view("ok", "user; shapes match" + ("" if source == "the engine declares" else " in the io_bindings"))
            else:
                view("refused",
                     f"user; the output is {_typed_shape(odt, oshape)} but the input is {_typed_shape(idt, ishape)}: "
                     "the runtime refuses this delegate", "alias-shape-mismatch",
                     f"{what}: {source} the output as {_typed_shape(odt, oshape)} but the input as "
                     f"{_typed_shape(idt, ishape)}; a user alias writes the output into the input's memory, so the "
                     "runtime refuses this delegate at load unless both have one shape (every dim, -1 included) and "
                     "one type. Re-export the model with matching shapes, or without the alias")
        elif eng is None:
            view("unchecked", "kv_cache_update; the runtime checks it against the engine's getAliasedInputTensor at "
                              "load")
        else:
            target = eng.aliased_input(a.output)
            if target == a.input:
                view("ok", "kv_cache_update; the engine agrees")
            else:
                says = "none (no kv_cache_update op writes it)" if target is None else f"'{target}'"
                view("refused",
                     f"kv_cache_update; the engine DISAGREES, its alias for '{a.output}' is {says}: the runtime "
                     "refuses this delegate", "alias-engine-mismatch",
                     f"{what} disagrees with the engine, whose alias for output '{a.output}' is {says}; the runtime "
                     "refuses this delegate at load (InvalidProgram). The blob and its engine do not belong "
                     "together: re-export the model")
    if eng is not None:
        listed = {a.output for a in md.aliased_io}
        names = {b.name for b in d.arguments() or []}
        for out, inp in eng.aliases().items():
            if out in listed or out not in names or inp not in names:
                continue  # a binding the engine lacks is an engine-mismatch finding already
            views.append(AliasView(out, inp, _blob.ALIAS_KIND_KV_CACHE_UPDATE, None, "ok",
                                   "kv_cache_update, declared by the engine; the blob's aliased_io does not list it, "
                                   "the runtime applies it anyway"))
    return views


#: The compile spec that sets TensorRT's weight-streaming budget (bytes).
WEIGHT_STREAMING_BUDGET = "weight_streaming_budget"
#: The largest byte count the runtime reads (2^63 - 1).
MAX_BYTE_COUNT = 2**63 - 1


def parse_byte_count(value: bytes) -> Optional[int]:
    """A byte count as the runtime reads the ``weight_streaming_budget``
    compile spec: one or more ASCII decimal digits and nothing else (no sign,
    space, NUL or decimal point), at most 2^63 - 1. None for anything else."""
    value = bytes(value)
    if not value or any(not 0x30 <= c <= 0x39 for c in value):
        return None
    n = int(value.decode("ascii"))
    return n if n <= MAX_BYTE_COUNT else None


def _name_index(name: str) -> int:
    """The number after the last '.' or '_' of ``name`` ("output_1" -> 1), or -1."""
    at = max(name.rfind("."), name.rfind("_"))
    digits = name[at + 1:]
    if at < 0 or not digits or len(digits) > 9 or any(not "0" <= c <= "9" for c in digits):
        return -1
    return int(digits)


def _arguments_from_engine(engine: ReferenceEngine) -> List[_blob.IoBinding]:
    """The arguments of a delegate whose blob lists no io_bindings, in the
    runtime's order: every engine input, then every output; within each, by
    the names' numeric suffixes ("input_0", "input_1", ...) when every name has
    a distinct one, else in engine order."""
    out = []
    for inputs in (True, False):
        group = [t for t in engine.io if t.is_input == inputs]
        ordered = sorted(group, key=lambda t: _name_index(t.name))
        keys = [_name_index(t.name) for t in ordered]
        distinct = all(k >= 0 for k in keys) and all(a < b for a, b in zip(keys, keys[1:]))
        out += [_blob.IoBinding(t.name, t.dtype, list(t.shape), inputs) for t in (ordered if distinct else group)]
    return out


# --------------------------------------------------------------------------
# Loading


def load_program(source: Any) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Turns ``source`` into ``(read_pte dict, path or None)``.

    ``source``: a path, the file's bytes, an object with a ``.buffer`` holding
    the bytes (ExecuTorch's ``ExecutorchProgramManager``; unverified here since
    PyTorch cannot be installed in etrt's CI), or an already decoded
    :func:`etrt.pte.read_pte` dict. Raises :class:`etrt.pte.PteError` for a
    file that is not a readable ``.pte`` and ``TypeError`` for anything else.
    """
    from .pte import read_pte

    if isinstance(source, Mapping) and "program" in source and "delegates" in source:
        return dict(source), source.get("path")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return read_pte(bytes(source)), None
    if isinstance(source, (str, os.PathLike)):
        return read_pte(source), os.fspath(source)
    buf = getattr(source, "buffer", None)
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return read_pte(bytes(buf)), None
    raise TypeError(
        f"cannot validate a {type(source).__name__}: pass a .pte path or bytes, an ExecuTorch program with a "
        "'.buffer' (ExecutorchProgramManager, after to_executorch()), or lowered delegates "
        "(objects with backend_id and processed_bytes)")


def lowered_modules(source: Any) -> Optional[List[Tuple[str, str, bytes]]]:
    """``[(method, backend_id, processed_bytes)]`` when ``source`` is a lowered
    program before serialization: an iterable of objects with ``backend_id``
    and ``processed_bytes`` (ExecuTorch's ``LoweredBackendModule``) or of
    ``(backend_id, bytes)`` pairs, or an object with ``exported_program()``
    whose graph modules hold such modules (``EdgeProgramManager`` after
    ``to_backend``). Duck-typed: ExecuTorch's Python API needs PyTorch, which
    etrt's CI cannot install, so this path is unverified against it."""

    def as_lowered(obj: Any) -> Optional[Tuple[str, bytes]]:
        backend_id = getattr(obj, "backend_id", None)
        data = getattr(obj, "processed_bytes", None)
        if isinstance(backend_id, str) and isinstance(data, (bytes, bytearray, memoryview)):
            return backend_id, bytes(data)
        if (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str)
                and isinstance(obj[1], (bytes, bytearray, memoryview))):
            return obj[0], bytes(obj[1])
        return None

    if isinstance(source, (str, bytes, bytearray, memoryview, Mapping, os.PathLike)):
        return None
    if isinstance(getattr(source, "buffer", None), (bytes, bytearray, memoryview)):
        return None  # a serialized program (ExecutorchProgramManager): the .pte path checks more
    if callable(getattr(source, "exported_program", None)):
        names = sorted(getattr(source, "methods", None) or ["forward"])
        out = []
        for name in names:
            try:
                ep = source.exported_program(name)
            except TypeError:
                ep = source.exported_program()
            gm = getattr(ep, "graph_module", None)
            modules = gm.modules() if gm is not None and hasattr(gm, "modules") else []
            for m in modules:
                lowered = as_lowered(m)
                if lowered is not None:
                    out.append((str(name), *lowered))
        return out
    if isinstance(source, Iterable):
        items = list(source)
        lowered_items = [as_lowered(x) for x in items]
        if items and all(x is not None for x in lowered_items):
            return [("<lowered>", b, d) for b, d in lowered_items]  # type: ignore[misc]
    return None


# --------------------------------------------------------------------------
# Decoding delegates


def decode_blob(d: DelegateInfo) -> None:
    """Fills in what a TensorRT delegate's blob holds (header, metadata,
    engine, signature, reference engine) or why it cannot be read."""
    if not d.is_tensorrt:
        return
    data = d.data
    if len(data) >= _blob.HEADER_SIZE and data[:4] in (_blob.MAGIC_TR01, _blob.MAGIC_TR02):
        magic, mo, ms, eo, es, _ = struct.unpack(_blob.HEADER_FORMAT, data[:_blob.HEADER_SIZE])
        d.header = {"magic": magic.decode(), "metadata_offset": mo, "metadata_size": ms,
                    "engine_offset": eo, "engine_size": es, "blob_size": len(data)}
    try:
        d.metadata, d.engine = _blob.parse_blob(data)
    except _blob.BlobError as e:
        d.blob_error = str(e)
        return
    if d.metadata.profile_signature is not None:
        try:
            d.blob_signature = Signature.from_blob(d.metadata.profile_signature)
        except SignatureError as e:
            d.signature_error = str(e)
    d.reference_engine, d.engine_error = try_read_reference_engine(d.engine)


def analyze_pte(pte: Mapping[str, Any]) -> List[DelegateInfo]:
    """Decodes every delegate of a :func:`etrt.pte.read_pte` result: blob
    header and metadata, signature, reference engine, and the tensors each
    delegate call passes."""
    program = pte["program"]
    plans = program.get("execution_plan") or []
    calls: Dict[Tuple[int, int], List[DelegateCall]] = {}
    for mi, plan in enumerate(plans):
        for ci, chain in enumerate(plan.get("chains") or []):
            for ii, instr in enumerate(chain.get("instructions") or []):
                if instr.get("instr_args_type") == "DelegateCall":
                    a = instr.get("instr_args") or {}
                    calls.setdefault((mi, a.get("delegate_index", 0)), []).append(
                        DelegateCall(ci, ii, list(a.get("args") or [])))
    out = []
    for dd in pte["delegates"]:
        mi, di = dd["method_index"], dd["delegate_index"]
        cs = calls.get((mi, di), [])
        ref = DelegateRef(dd["method"] or f"method {mi}", mi, di, cs[0].instruction if cs else None, dd["id"] or "")
        raw = ((plans[mi].get("delegates") or [])[di].get("compile_specs") or []) if mi < len(plans) else []
        info = DelegateInfo(ref=ref, data=bytes(dd["data"]), location=dd["location"], storage_index=dd["index"],
                            compile_specs=dict(dd.get("compile_specs") or {}), calls=cs,
                            compile_spec_list=[(c.get("key") or "", bytes(c.get("value") or b"")) for c in raw])
        if cs:
            info.tensor_args = tensor_args(plans[mi], cs[0])
        decode_blob(info)
        out.append(info)
    return out


def tensor_args(plan: Mapping[str, Any], call: DelegateCall) -> Optional[List[TensorArg]]:
    from .pte import describe_value

    values = plan.get("values") or []
    out = []
    for pos, vi in enumerate(call.args):
        if not 0 <= vi < len(values):
            return None  # a corrupt-program finding of etrt.validate
        v = describe_value(values[vi])
        if v["kind"] == "tensor":
            out.append(TensorArg(pos, vi, v))
    return out
