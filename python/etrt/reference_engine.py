"""Reads an etrt *reference engine* (the GPU-free engine, magic ``ETRF``):
its header, flags, IO tensors, optimization profiles and op table, so that
``etrt inspect`` and validation can show and check what an engine really has
(profiles, in-place aliases), not only what its blob claims.

The format is defined by ``nvinfer/src/format.{h,cpp}`` (see also
docs/reference-engine.md); little-endian throughout::

    header (24 bytes)
      0  char[4] magic "ETRF"
      4  u32     format version   (2; other versions are refused)
      8  u64     payload size     bytes after the header; must match exactly
      16 u32     checksum         FNV-1a (32-bit) of the payload
      20 u32     reserved         0
    payload
      str  label                  u32 length + bytes
      u8   flags                  bit 0 tracing on, bit 1 CUDA mode (tensors in device memory),
                                  bit 2 streamable weights (built for weight streaming); other bits refused
      i64  switch cost, ns
      u64  requested device memory, bytes
      u32  IO count,           then per tensor: str name, u8 is_input, u8 flags, u8 dtype, shape
                               (IO flags: bit 0 shape tensor, bit 1 on host, bit 2 data-dependent)
      u32  constant count,     then per constant: str name, shape, u64 value count, f32 values
      u32  intermediate count, then per tensor: str name, u8 dtype
      u32  profile count,      then per profile, per input in IO order: shape min, shape opt, shape max
      u32  op count,           then per op: u8 kind, i32 a, i32 b, i32 c, i32 d, i32 out, f32 factor
                               (25 bytes; unused operands are -1); nothing may follow the last op
    shape = u8 rank + rank x i64

Op kinds: 1 embedding, 2 add, 3 add_bias, 4 scale, 5 matmul, 6 identity,
7 kv_cache_update (a = the cache, an IO input; b = the update; c = the write
indices; out = an IO output that shares the cache's memory, as TensorRT's
``getAliasedInputTensor`` reports it), 8 causal_attention (a = queries, b =
keys, c = values, d = positions). Tensor ids index one space: IO tensors
first (engine order), then constants, then intermediates.

Everything is decoded, but only the structure inspection and validation rely
on is checked here (counts, ranges, profile bounds, op kinds, operand ids,
the kv_cache_update wiring); the C++ reader remains the authority on whether
an engine runs (op types, shape inference). This reader never reads past the
data and never trusts a count before checking that the bytes for it exist.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from .signature import Bounds, InputSignature, Signature

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "MAGIC",
    "OP_KINDS",
    "OP_KV_CACHE_UPDATE",
    "ReferenceEngine",
    "ReferenceEngineError",
    "ReferenceOp",
    "ReferenceTensor",
    "checksum",
    "is_reference_engine",
    "read_reference_engine",
    "try_read_reference_engine",
]

MAGIC = b"ETRF"
FORMAT_VERSION = 2
HEADER_SIZE = 24
MAX_RANK = 8
#: kMaxDim of nvinfer/src/model.h.
MAX_DIM = 2**31 - 1
FLAG_TRACING = 0x1
FLAG_CUDA_MODE = 0x2
FLAG_STREAMABLE_WEIGHTS = 0x4
KNOWN_FLAGS = FLAG_TRACING | FLAG_CUDA_MODE | FLAG_STREAMABLE_WEIGHTS
#: etrt::engine::DataType values, spelled as in the blob's io_bindings.
DTYPES = ("float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool")
#: gpufree::OpKind values and their names.
OP_KINDS = {1: "embedding", 2: "add", 3: "add_bias", 4: "scale", 5: "matmul", 6: "identity",
            7: "kv_cache_update", 8: "causal_attention"}
OP_KV_CACHE_UPDATE = 7
#: u8 kind + five i32 operands + f32 factor.
OP_RECORD_SIZE = 1 + 5 * 4 + 4


class ReferenceEngineError(ValueError):
    """The bytes start like a reference engine but cannot be read."""


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
        return next((t for t in self.io if t.name == name), None)

    def tensor_name(self, tensor_id: int) -> str:
        """The name of tensor ``tensor_id`` in the ops' id space."""
        names = [t.name for t in self.io] + list(self.constant_names) + list(self.intermediate_names)
        return names[tensor_id] if 0 <= tensor_id < len(names) else f"#{tensor_id}"

    def aliased_input(self, output_name: str) -> Optional[str]:
        """The IO input that IO output ``output_name`` is written into in place
        (operand a of the kv_cache_update op writing it; TensorRT's
        ``getAliasedInputTensor``), or None when no such op writes it."""
        index = next((k for k, t in enumerate(self.io) if t.name == output_name and not t.is_input), None)
        if index is None:
            return None
        for op in self.ops:
            if op.kind == OP_KV_CACHE_UPDATE and op.out == index:
                return self.io[op.a].name
        return None

    def aliases(self) -> Dict[str, str]:
        """``{output: input}`` for every IO output the engine writes in place into an input."""
        out = {}
        for t in self.outputs:
            target = self.aliased_input(t.name)
            if target is not None:
                out[t.name] = target
        return out

    def to_signature(self) -> Signature:
        """The engine's profiles as a :class:`Signature` (no named symbolic dims:
        the engine does not know them)."""
        names = [t.name for t in self.inputs]
        return Signature(self.num_profiles, tuple(
            InputSignature(n, tuple(self.profiles[p][k] for p in range(self.num_profiles)))
            for k, n in enumerate(names)))


def checksum(data: bytes) -> int:
    """FNV-1a, 32-bit."""
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def is_reference_engine(data: bytes) -> bool:
    """True when ``data`` starts with the reference engine's magic (says nothing about the rest)."""
    return bytes(data[:4]) == MAGIC


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def need(self, n: int, what: str) -> None:
        if n > self.remaining():
            raise ReferenceEngineError(
                f"reference engine: truncated: {what} needs {n} bytes at payload offset {self.pos}, only "
                f"{self.remaining()} remain")

    def unpack(self, fmt: str, what: str):
        size = struct.calcsize("<" + fmt)
        self.need(size, what)
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += size
        return v[0] if len(v) == 1 else v

    def skip(self, n: int, what: str) -> None:
        self.need(n, what)
        self.pos += n

    def string(self, what: str) -> str:
        n = self.unpack("I", f"the length of {what}")
        self.need(n, what)
        raw = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def shape(self, what: str) -> Tuple[int, ...]:
        rank = self.unpack("B", f"the rank of {what}")
        if rank > MAX_RANK:
            raise ReferenceEngineError(f"reference engine: {what} has rank {rank}, above the maximum {MAX_RANK}")
        self.need(8 * rank, what)
        dims = struct.unpack_from(f"<{rank}q", self.data, self.pos)
        self.pos += 8 * rank
        return tuple(dims)

    def count(self, min_record: int, what: str) -> int:
        n = self.unpack("I", f"the {what} count")
        if n * min_record > self.remaining():
            raise ReferenceEngineError(
                f"reference engine: the {what} count {n} needs at least {n * min_record} more bytes, only "
                f"{self.remaining()} remain")
        return n


def _check_op(k: int, op: ReferenceOp, io: List[ReferenceTensor], n_tensors: int) -> None:
    where = f"reference engine: op #{k} ({op.kind_name})"
    if op.kind not in OP_KINDS:
        raise ReferenceEngineError(f"reference engine: op #{k} has unknown kind {op.kind}; rebuild the engine with "
                                   "this etrt's builder")
    if not 0 <= op.out < n_tensors:
        raise ReferenceEngineError(f"{where} writes tensor #{op.out}, which does not exist ({n_tensors} tensors)")
    for name, operand in (("a", op.a), ("b", op.b), ("c", op.c), ("d", op.d)):
        if not -1 <= operand < n_tensors:
            raise ReferenceEngineError(
                f"{where} operand {name} is tensor #{operand}, which does not exist ({n_tensors} tensors)")
    if op.kind == OP_KV_CACHE_UPDATE:
        if not (0 <= op.a < len(io) and io[op.a].is_input):
            raise ReferenceEngineError(f"{where}: its cache (operand a, tensor #{op.a}) must be an engine input")
        if not (op.out < len(io) and not io[op.out].is_input):
            raise ReferenceEngineError(
                f"{where}: its result (tensor #{op.out}) must be an engine output: it shares the cache's memory")


def read_reference_engine(data: bytes) -> ReferenceEngine:
    """Decodes a reference engine: header, flags, IO tensors, profiles and ops.

    Raises :class:`ReferenceEngineError` for a wrong magic, a version this
    reader does not know, a payload size or checksum that does not match,
    unknown flags or op kinds, and anything truncated, trailing or out of range.
    """
    view = memoryview(bytes(data))
    if not is_reference_engine(view):
        raise ReferenceEngineError("reference engine: the bytes do not start with the magic 'ETRF'")
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
            "bytes follow it (truncated or padded engine)")
    payload = view[HEADER_SIZE:]
    actual = checksum(payload)
    if actual != expected:
        raise ReferenceEngineError(
            f"reference engine: checksum mismatch (header {expected}, payload {actual}): the engine bytes are damaged")
    if reserved != 0:
        raise ReferenceEngineError("reference engine: reserved header bytes are not zero")

    r = _Reader(payload)
    label = r.string("the label")
    flags = r.unpack("B", "the flags")
    if flags & ~KNOWN_FLAGS:
        raise ReferenceEngineError(f"reference engine: unknown flags {flags}")
    switch_cost = r.unpack("q", "the switch cost")
    device_memory = r.unpack("Q", "the requested device memory")

    io: List[ReferenceTensor] = []
    for _ in range(r.count(4 + 3 + 1, "IO tensor")):
        name = r.string("an IO tensor name")
        is_input = r.unpack("B", "is_input") != 0
        io_flags = r.unpack("B", "the IO flags")
        if io_flags & ~7:
            raise ReferenceEngineError(f"reference engine: IO tensor {name!r} has unknown flags {io_flags}")
        is_shape = bool(io_flags & 1)
        dtype = r.unpack("B", "a dtype")
        if dtype >= len(DTYPES):
            raise ReferenceEngineError(f"reference engine: IO tensor '{name}' has unknown dtype {dtype}")
        if any(t.name == name for t in io):
            raise ReferenceEngineError(f"reference engine: IO tensor name '{name}' is used twice")
        io.append(ReferenceTensor(name, is_input, is_shape, DTYPES[dtype], r.shape("an IO tensor shape"),
                                  on_host=bool(io_flags & 2), data_dependent=bool(io_flags & 4)))

    constant_names = []
    for _ in range(r.count(4 + 1 + 8, "constant")):
        constant_names.append(r.string("a constant name"))
        r.shape("a constant shape")
        n = r.unpack("Q", "a constant's value count")
        if n > r.remaining() // 4:
            raise ReferenceEngineError(
                f"reference engine: a constant claims {n} values, only {r.remaining() // 4} fit in the remaining "
                "bytes")
        r.skip(4 * n, "constant values")

    intermediate_names = []
    for _ in range(r.count(4 + 1, "intermediate")):
        intermediate_names.append(r.string("an intermediate name"))
        r.skip(1, "an intermediate dtype")

    n_inputs = sum(1 for t in io if t.is_input)
    n_profiles = r.count(3 * n_inputs, "profile")
    if n_profiles == 0:
        raise ReferenceEngineError("reference engine: the engine has no optimization profiles")
    if n_inputs == 0 and n_profiles > 1:
        raise ReferenceEngineError("reference engine: an engine without inputs has one profile")
    profiles = []
    for p in range(n_profiles):
        row = []
        for t in (t for t in io if t.is_input):
            mn = r.shape(f"profile {p} min of '{t.name}'")
            opt = r.shape(f"profile {p} opt of '{t.name}'")
            mx = r.shape(f"profile {p} max of '{t.name}'")
            rank = len(t.shape)
            if not len(mn) == len(opt) == len(mx) == rank or any(
                    not 0 <= a <= b <= c <= MAX_DIM for a, b, c in zip(mn, opt, mx)):
                raise ReferenceEngineError(
                    f"reference engine: profile {p} of input '{t.name}' has min {list(mn)}, opt {list(opt)}, max "
                    f"{list(mx)}; bounds must have the input's rank {rank} and satisfy 0 <= min <= opt <= max "
                    f"<= {MAX_DIM}")
            for d, declared in enumerate(t.shape):
                if declared >= 0 and not mn[d] == opt[d] == mx[d] == declared:
                    raise ReferenceEngineError(
                        f"reference engine: profile {p} of input '{t.name}' dim {d}: declared static {declared} but "
                        f"the profile says min {mn[d]} opt {opt[d]} max {mx[d]}")
            row.append(Bounds(mn, opt, mx))
        profiles.append(tuple(row))

    n_tensors = len(io) + len(constant_names) + len(intermediate_names)
    ops = []
    for k in range(r.count(OP_RECORD_SIZE, "op")):
        op = ReferenceOp(*r.unpack("Biiiiif", f"op #{k}"))
        _check_op(k, op, io, n_tensors)
        ops.append(op)
    if r.remaining():
        raise ReferenceEngineError(
            f"reference engine: {r.remaining()} unexpected bytes after the last op; the engine is damaged or was "
            "written by another etrt, rebuild it with this etrt's builder")

    return ReferenceEngine(
        version=version,
        size=len(view),
        label=label,
        tracing=bool(flags & FLAG_TRACING),
        switch_cost_ns=switch_cost,
        requested_device_memory=device_memory,
        io=tuple(io),
        num_constants=len(constant_names),
        num_intermediates=len(intermediate_names),
        profiles=tuple(profiles),
        cuda_mode=bool(flags & FLAG_CUDA_MODE),
        streamable_weights=bool(flags & FLAG_STREAMABLE_WEIGHTS),
        ops=tuple(ops),
        constant_names=tuple(constant_names),
        intermediate_names=tuple(intermediate_names),
    )


def try_read_reference_engine(data: bytes) -> Tuple[Optional[ReferenceEngine], Optional[str]]:
    """``(engine, None)`` for a readable reference engine, ``(None, error)`` for
    a damaged one, ``(None, None)`` when ``data`` is not a reference engine."""
    if not is_reference_engine(data):
        return None, None
    try:
        return read_reference_engine(data), None
    except ReferenceEngineError as e:
        return None, str(e)
