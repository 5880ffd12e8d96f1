"""One delegate, decoded as far as it can be (:class:`DelegateInfo`): where
it sits (:class:`DelegateRef`), the calls that pass it tensors
(:class:`DelegateCall`, :class:`TensorArg`), what its blob holds, and its
arguments in the order the runtime binds them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import blob as _blob
from ..gpufree import GpufreeEngine
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
    #: where the blob's engine section is in :attr:`data`, (offset, size), once the blob has been read
    engine_span: Optional[Tuple[int, int]] = field(default=None, repr=False)
    blob_error: Optional[str] = None
    gpufree_engine: Optional[GpufreeEngine] = None
    engine_error: Optional[str] = None
    #: the runtime's resolution of the blob against a GPU-free NvInfer engine (``etrt_delegate_resolve``: arguments,
    #: aliases, states, and the load's first refusal), or None (an opaque TensorRT plan, an unreadable engine)
    resolution: Optional[Dict[str, Any]] = field(default=None, repr=False)
    #: the signature the blob carries (None when absent or unusable)
    blob_signature: Optional[Signature] = None
    signature_error: Optional[str] = None
    # Computed once: the GPU-free NvInfer engine's profiles as a signature, and the tensor the first call binds to each
    # binding (validation looks both up per binding; recomputing them made it quadratic).
    _engine_signature: Any = field(default=None, repr=False, compare=False)
    _bound: Optional[Dict[str, Optional[TensorArg]]] = field(default=None, repr=False, compare=False)
    _arguments: Optional[List[_blob.IoBinding]] = field(default=None, repr=False, compare=False)

    @property
    def is_tensorrt(self) -> bool:
        return self.ref.backend_id == BACKEND_ID

    @property
    def engine(self) -> Optional[bytes]:
        """The blob's engine bytes, or None. A copy made on each call: an engine is most of a blob, which
        :attr:`data` already holds, so it is not kept twice (:attr:`engine_span` says where it is)."""
        if self.engine_span is None:
            return None
        offset, size = self.engine_span
        return self.data[offset:offset + size]

    @property
    def readable(self) -> bool:
        """A TensorRT delegate whose blob (and GPU-free NvInfer engine, if it is one) decoded."""
        return self.is_tensorrt and self.metadata is not None and self.engine_error is None

    @property
    def signature(self) -> Optional[Signature]:
        """The blob's signature, else the one read from a GPU-free NvInfer engine."""
        if self.blob_signature is not None:
            return self.blob_signature
        return self.engine_signature()

    def engine_signature(self) -> Optional[Signature]:
        """The GPU-free NvInfer engine's own profiles as a signature (computed once), or None."""
        if self.gpufree_engine is None:
            return None
        if self._engine_signature is None:
            try:
                self._engine_signature = self.gpufree_engine.to_signature()
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
        if self.engine_span is None:
            return None
        if self.gpufree_engine is not None or self.engine_error is not None:
            return "gpufree"
        return "tensorrt"

    def arguments(self) -> Optional[List[_blob.IoBinding]]:
        """The engine IO tensors in the delegate's argument order, as the
        runtime binds them: the blob's input bindings in listed order, then its
        outputs (they may interleave in ``io_bindings``). With a GPU-free NvInfer engine,
        the runtime's own binding (:attr:`resolution`: the engine's dtypes and
        shapes; a blob with empty ``io_bindings`` takes the engine's IO); None for
        an opaque TensorRT plan without ``io_bindings``."""
        if self.metadata is None:
            return None
        r = self.resolution
        if self.bound_by_runtime:
            assert r is not None
            if self._arguments is None:  # computed once: validation and inspect ask per binding
                self._arguments = (
                    [_blob.IoBinding(t["name"], t["dtype"], list(t["shape"]), True) for t in r["inputs"]]
                    + [_blob.IoBinding(t["name"], t["dtype"], list(t["shape"]), False) for t in r["outputs"]])
            return self._arguments
        if self.metadata.io_bindings:
            return self.metadata.arguments()
        return None

    @property
    def bound_by_runtime(self) -> bool:
        """Whether :meth:`arguments` are the runtime's own binding of the blob to a GPU-free NvInfer engine (with the
        engine's dtypes and shapes), rather than the blob's io_bindings."""
        r = self.resolution
        return r is not None and (r["refusal"] is None or r["refusal"]["rule"] not in ("engine", "io"))

    def input_bindings(self) -> List[_blob.IoBinding]:
        return [b for b in self.arguments() or [] if b.is_input]

    def aliased_outputs(self) -> List[str]:
        """The outputs the runtime writes in place into an input: those the
        blob's ``aliased_io`` lists, plus, with a GPU-free NvInfer engine, the engine's
        own kv_cache_update aliases (the runtime applies those too)."""
        if self.metadata is None:
            return []
        names = [a.output for a in self.metadata.aliased_io]
        if self.resolution is not None:
            listed = set(names)
            names += [a["output"] for a in self.resolution["aliases"] if a["entry"] < 0 and a["output"] not in listed]
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
