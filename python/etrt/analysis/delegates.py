"""One delegate, decoded as far as it can be (:class:`DelegateInfo`): where
it sits (:class:`DelegateRef`), the calls that pass it tensors
(:class:`DelegateCall`, :class:`TensorArg`), what its blob holds, and its
arguments in the order the runtime binds them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import blob as _blob
from ..reference_engine import ReferenceEngine
from ..signature import Signature, SignatureError

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
        the runtime does: a call passes a tensor for every binding but the
        delegate's own state (which pairs with None), or also leaves out the aliased outputs (ExecuTorch leaves those out when the
        delegate owns the buffer; they pair with None). None when the count
        fits neither, or the bindings are unknown."""
        bindings = self.arguments()
        if bindings is None:
            return None
        # The delegate's own state (delegate_state) is never passed.
        owned = self.state_bindings()
        passed = [b for b in bindings if b.name not in owned]
        if len(args) == len(passed):
            it = iter(args)
            return [(b, None if b.name in owned else next(it)) for b in bindings]
        aliased = set(self.aliased_outputs()) - owned
        kept = [b for b in passed if b.is_input or b.name not in aliased]
        if not aliased or len(args) != len(kept):
            return None
        it = iter(args)
        return [(b, None if b.name in owned or (not b.is_input and b.name in aliased) else next(it)) for b in bindings]

    def state_bindings(self) -> set:
        """The names of the bindings the blob's ``delegate_state`` gives the delegate (inputs and outputs)."""
        if self.metadata is None:
            return set()
        return {s.input for s in self.metadata.delegate_state} | {s.output for s in self.metadata.delegate_state}

    def bound_value(self, binding_name: str) -> Optional[TensorArg]:
        """The program tensor passed for binding ``binding_name`` (first call)."""
        if self.tensor_args is None:
            return None
        if self._bound is None:
            self._bound = {}
            for b, arg in self.match_args(self.tensor_args) or []:
                self._bound.setdefault(b.name, arg)
        return self._bound.get(binding_name)


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
