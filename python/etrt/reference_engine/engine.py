"""The decoded engine (:class:`ReferenceEngine`, :class:`ReferenceTensor`,
:class:`ReferenceOp`) and :func:`read_reference_engine`, which checks the
header, decodes and validates the payload, and builds one."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..signature import Bounds, InputSignature, Signature
from .decoder import _Failed, _Reader, _decode_payload
from .format import (DTYPES, FLAG_CUDA_MODE, FLAG_STREAMABLE_WEIGHTS, FLAG_TRACING, FORMAT_VERSION, HEADER_SIZE,
                     OP_KINDS, OP_KV_CACHE_UPDATE, ReferenceEngineError, Shape, checksum, is_reference_engine)
from .model import _Invalid, _Model, _Tensor
from .shapes import _infer_shapes, _initial_shapes, _set_inputs
from .validation import _validate


@dataclass(frozen=True)
class ReferenceTensor:
    name: str
    is_input: bool
    is_shape_tensor: bool
    dtype: str
    shape: Tuple[int, ...]  # -1 marks a dynamic dim
    on_host: bool = False  # getTensorLocation says kHOST (IO flags bit 1)
    data_dependent: bool = False  # an output whose dynamic dims depend on input values (IO flags bit 2)


@dataclass(frozen=True)
class ReferenceOp:
    """One op of the engine's table. Operands are tensor ids (IO tensors, then
    constants, then intermediates); -1 marks an unused operand."""

    kind: int
    a: int
    b: int
    c: int
    d: int
    out: int
    factor: float

    @property
    def kind_name(self) -> str:
        return OP_KINDS.get(self.kind, f"unknown kind {self.kind}")


@dataclass(frozen=True)
class ReferenceEngine:
    """What ``read_reference_engine`` decodes. ``profiles[p][k]`` is the
    bounds of the k-th input (in IO order) under profile ``p``."""

    version: int
    size: int
    label: str
    tracing: bool
    switch_cost_ns: int
    requested_device_memory: int
    io: Tuple[ReferenceTensor, ...]
    num_constants: int
    num_intermediates: int
    profiles: Tuple[Tuple[Bounds, ...], ...]
    #: flags bit 1: a CUDA-mode engine (its tensors and weights live in device memory)
    cuda_mode: bool = False
    #: flags bit 2: built for weight streaming (getStreamableWeightsSize() > 0)
    streamable_weights: bool = False
    ops: Tuple[ReferenceOp, ...] = ()
    constant_names: Tuple[str, ...] = ()
    intermediate_names: Tuple[str, ...] = ()
    constant_shapes: Tuple[Shape, ...] = ()
    intermediate_dtypes: Tuple[str, ...] = ()
    #: getDeviceMemorySizeV2(): the scratch one context needs (max of the request and the intermediates' plan)
    device_memory_size: int = 0
    _index: Dict[str, object] = field(default_factory=dict, init=False, repr=False, compare=False)

    def _lookup(self, key: str):
        cache = self._index
        if key not in cache:
            if key == "io":
                cache[key] = {t.name: k for k, t in enumerate(self.io)}
            elif key == "names":
                cache[key] = [t.name for t in self.io] + list(self.constant_names) + list(self.intermediate_names)
            elif key == "aliases":
                alias: Dict[int, int] = {}
                for op in self.ops:
                    if op.kind == OP_KV_CACHE_UPDATE:
                        alias[op.out] = op.a
                cache[key] = alias
        return cache[key]

    @property
    def inputs(self) -> List[ReferenceTensor]:
        return [t for t in self.io if t.is_input]

    @property
    def outputs(self) -> List[ReferenceTensor]:
        return [t for t in self.io if not t.is_input]

    @property
    def num_profiles(self) -> int:
        return len(self.profiles)

    def tensor(self, name: str) -> Optional[ReferenceTensor]:
        """The IO tensor called ``name``, or None."""
        k = self._lookup("io").get(name)
        return None if k is None else self.io[k]

    def tensor_name(self, tensor_id: int) -> str:
        """The name of tensor ``tensor_id`` in the ops' id space."""
        names = self._lookup("names")
        return names[tensor_id] if 0 <= tensor_id < len(names) else f"#{tensor_id}"

    def aliased_input(self, output_name: str) -> Optional[str]:
        """The IO input that IO output ``output_name`` is written into in place
        (operand a of the kv_cache_update op writing it; TensorRT's
        ``getAliasedInputTensor``), or None when no such op writes it."""
        k = self._lookup("io").get(output_name)
        if k is None or self.io[k].is_input:
            return None
        a = self._lookup("aliases").get(k)
        return None if a is None else self.io[a].name

    def aliases(self) -> Dict[str, str]:
        """``{output: input}`` for every IO output the engine writes in place into an input."""
        return {self.io[out].name: self.io[a].name for out, a in sorted(self._lookup("aliases").items())}

    def to_signature(self) -> Signature:
        """The engine's profiles as a :class:`Signature` (no named symbolic dims:
        the engine does not know them)."""
        names = [t.name for t in self.inputs]
        return Signature(self.num_profiles, tuple(
            InputSignature(n, tuple(self.profiles[p][k] for p in range(self.num_profiles)))
            for k, n in enumerate(names)))

    def output_shapes(self, profile: int, which: str = "max") -> Dict[str, Shape]:
        """``{output name: shape}`` the engine produces with every input at
        profile ``profile``'s ``which`` ("min", "opt" or "max") shape. Every
        op's output dims are copies of input dims or constants', so at "max"
        these are the largest each output gets under that profile."""
        model = _model_of(self)
        shapes = _initial_shapes(model)
        _set_inputs(model, shapes, profile, ("min", "opt", "max").index(which))
        error = _infer_shapes(model, shapes)
        if error is not None:  # cannot happen for an engine this reader accepted
            raise ReferenceEngineError(f"reference engine: profile {profile}: {error}")
        return {t.name: shapes[k] for k, t in enumerate(self.io) if not t.is_input}


def _model_of(engine: ReferenceEngine) -> _Model:
    """The validation model of an accepted engine (for output_shapes)."""
    cached = engine._index.get("model")
    if cached is None:
        m = _Model()
        m.io = [_Tensor(t.name.encode(), t.is_input, int(t.is_shape_tensor) | int(t.on_host) << 1
                        | int(t.data_dependent) << 2, DTYPES.index(t.dtype), t.shape) for t in engine.io]
        m.constants = [(n.encode(), s, 0) for n, s in zip(engine.constant_names, engine.constant_shapes)]
        m.intermediates = [(n.encode(), DTYPES.index(d)) for n, d in zip(engine.intermediate_names,
                                                                           engine.intermediate_dtypes)]
        m.profiles = [[(b.min, b.opt, b.max) for b in row] for row in engine.profiles]
        m.ops = [(op.kind, op.a, op.b, op.c, op.d, op.out, op.factor) for op in engine.ops]
        engine._index["model"] = cached = m
    return cached


# --------------------------------------------------------------------------
# Reading


def read_reference_engine(data: bytes) -> ReferenceEngine:
    """Decodes and validates a reference engine exactly as the runtime's
    deserializer does, raising :class:`ReferenceEngineError` with the
    runtime's message for anything it refuses: a wrong magic or version, a
    payload size or checksum that does not match, unknown flags, dtypes or op
    kinds, counts above the limits or beyond the bytes present, trailing
    bytes, names that are empty, repeated, too long, not UTF-8 or hold a NUL,
    out-of-range tensor ids, a non-finite scale, shapes that do not flow
    through the ops at some profile's min, opt or max, and scratch memory
    above the limit."""
    view = memoryview(bytes(data))
    if not is_reference_engine(view):
        raise ReferenceEngineError(
            "reference engine: these bytes are not an engine of the GPU-free NvInfer implementation (they do not "
            "start with its magic 'ETRF'); a TensorRT plan runs on NVIDIA's TensorRT: rebuild etrt with "
            "-DTENSORRT_ROOT=<TensorRT installation> -DETRT_WITH_CUDA=ON")
    if len(view) < HEADER_SIZE:
        raise ReferenceEngineError(
            f"reference engine: truncated: {len(view)} bytes, the header alone is {HEADER_SIZE}")
    version, payload_size, expected, reserved = struct.unpack_from("<IQII", view, 4)
    if version != FORMAT_VERSION:
        raise ReferenceEngineError(
            f"reference engine: format version {version} is not the version this etrt reads ({FORMAT_VERSION}); "
            "rebuild the engine with this etrt's builder")
    if payload_size != len(view) - HEADER_SIZE:
        raise ReferenceEngineError(
            f"reference engine: the header promises a {payload_size}-byte payload but {len(view) - HEADER_SIZE} "
            "bytes follow it (truncated or padded blob)")
    payload = view[HEADER_SIZE:]
    actual = checksum(payload)
    if actual != expected:
        raise ReferenceEngineError(
            f"reference engine: checksum mismatch (header {expected}, payload {actual}): the engine bytes are damaged")
    if reserved != 0:
        raise ReferenceEngineError("reference engine: reserved header bytes are not zero")
    try:
        m = _decode_payload(_Reader(payload))
    except _Failed as e:
        raise ReferenceEngineError(f"reference engine: {e}") from None
    try:
        device_memory_size = _validate(m)
    except _Invalid as e:
        raise ReferenceEngineError(f"reference engine: invalid engine: {e}") from None

    io = tuple(ReferenceTensor(t.name.decode(), t.is_input, bool(t.flags & 1), DTYPES[t.dtype], t.shape,
                               on_host=bool(t.flags & 2), data_dependent=bool(t.flags & 4)) for t in m.io)
    return ReferenceEngine(
        version=version,
        size=len(view),
        label=m.label.decode(),
        tracing=bool(m.flags & FLAG_TRACING),
        switch_cost_ns=m.switch_cost_ns,
        requested_device_memory=m.requested_device_memory,
        io=io,
        num_constants=len(m.constants),
        num_intermediates=len(m.intermediates),
        profiles=tuple(tuple(Bounds(*bounds) for bounds in row) for row in m.profiles),
        cuda_mode=bool(m.flags & FLAG_CUDA_MODE),
        streamable_weights=bool(m.flags & FLAG_STREAMABLE_WEIGHTS),
        ops=tuple(ReferenceOp(*op) for op in m.ops),
        constant_names=tuple(c[0].decode() for c in m.constants),
        intermediate_names=tuple(t[0].decode() for t in m.intermediates),
        constant_shapes=tuple(c[1] for c in m.constants),
        intermediate_dtypes=tuple(DTYPES[t[1]] for t in m.intermediates),
        device_memory_size=device_memory_size,
    )


def try_read_reference_engine(data: bytes) -> Tuple[Optional[ReferenceEngine], Optional[str]]:
    """``(engine, None)`` for a readable reference engine, ``(None, error)`` for
    one the runtime refuses, ``(None, None)`` when ``data`` is not a reference
    engine."""
    if not is_reference_engine(data):
        return None, None
    try:
        return read_reference_engine(data), None
    except ReferenceEngineError as e:
        return None, str(e)
