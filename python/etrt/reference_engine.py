"""Reads an etrt *reference engine* (the GPU-free engine, magic ``ETRF``):
its header, flags, IO tensors, constants, intermediates, optimization
profiles and op table, so that ``etrt inspect`` and validation can show and
check what an engine really has (profiles, in-place aliases, the shapes each
profile produces), not only what its blob claims.

The format is defined by ``nvinfer/src/format.{h,cpp}`` (see also
nvinfer/README.md); little-endian throughout::

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

This reader refuses exactly what the C++ deserializer refuses (the decoder of
``nvinfer/src/format.cpp``, then ``validate()`` of ``nvinfer/src/model.cpp``:
structure, the limits, shape inference at every profile's min, opt and max
shapes, and the scratch memory plan), with the same messages;
``tests/vectors/engine/`` holds both to it. It never reads past the data, and
checks every declared count against its limit and against the bytes present
before it builds anything sized by it.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from .dtypes import DATA_TYPES, element_size
from .signature import Bounds, InputSignature, Signature

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "LIMITS",
    "MAGIC",
    "OP_KINDS",
    "OP_KV_CACHE_UPDATE",
    "ReferenceEngine",
    "ReferenceEngineError",
    "ReferenceOp",
    "ReferenceTensor",
    "checksum",
    "escape_name",
    "is_reference_engine",
    "read_reference_engine",
    "try_read_reference_engine",
]

MAGIC = b"ETRF"
FORMAT_VERSION = 2
HEADER_SIZE = 24
MAX_RANK = 8
FLAG_TRACING = 0x1
FLAG_CUDA_MODE = 0x2
FLAG_STREAMABLE_WEIGHTS = 0x4
KNOWN_FLAGS = FLAG_TRACING | FLAG_CUDA_MODE | FLAG_STREAMABLE_WEIGHTS
#: etrt::DataType values, spelled as in the blob's io_bindings (:data:`etrt.dtypes.DATA_TYPES`).
DTYPES = DATA_TYPES
#: Bytes per element, by DataType value.
ELEMENT_SIZES = tuple(element_size(d) for d in DATA_TYPES)
#: gpufree::OpKind values and their names.
OP_KINDS = {1: "embedding", 2: "add", 3: "add_bias", 4: "scale", 5: "matmul", 6: "identity",
            7: "kv_cache_update", 8: "causal_attention"}
OP_EMBEDDING, OP_ADD, OP_ADD_BIAS, OP_SCALE, OP_MATMUL, OP_IDENTITY, OP_KV_CACHE_UPDATE, OP_CAUSAL_ATTENTION = range(1, 9)
#: u8 kind + five i32 operands + f32 factor.
OP_RECORD_SIZE = 1 + 5 * 4 + 4

# The limits of nvinfer/src/model.h (docs/limits.md); kept equal by tests/vectors/engine.
MAX_DIM = 2**31 - 1
MAX_TENSOR_BYTES = 2**40
MAX_SWITCH_COST_NS = 10_000_000_000
MAX_IO_TENSORS = 16384
MAX_CONSTANTS = 65536
MAX_INTERMEDIATES = 65536
MAX_OPS = 65536
MAX_PROFILES = 256
MAX_PROFILE_ENTRIES = 65536
MAX_SHAPE_INFERENCE_WORK = 2**16
MAX_NAME_LENGTH = 4096
MAX_DEVICE_MEMORY = 64 * 2**30
SCRATCH_ALIGNMENT = 256
#: Every limit by name, for docs and tests.
LIMITS = {
    "max_dim": MAX_DIM, "max_tensor_bytes": MAX_TENSOR_BYTES, "max_switch_cost_ns": MAX_SWITCH_COST_NS,
    "max_io_tensors": MAX_IO_TENSORS, "max_constants": MAX_CONSTANTS, "max_intermediates": MAX_INTERMEDIATES,
    "max_ops": MAX_OPS, "max_profiles": MAX_PROFILES, "max_profile_entries": MAX_PROFILE_ENTRIES,
    "max_shape_inference_work": MAX_SHAPE_INFERENCE_WORK, "max_name_length": MAX_NAME_LENGTH,
    "max_device_memory": MAX_DEVICE_MEMORY,
}

_U64_MAX = 2**64 - 1

Shape = Tuple[int, ...]


class ReferenceEngineError(ValueError):
    """The bytes start like a reference engine but the runtime would refuse them."""


# --------------------------------------------------------------------------
# Names in messages


def _utf8_sequence_length(raw: bytes, i: int) -> int:
    """Length of the well-formed UTF-8 sequence (RFC 3629) at ``raw[i]``, or 0."""
    c = raw[i]
    if c < 0x80:
        return 1
    lo, hi = 0x80, 0xBF
    if 0xC2 <= c <= 0xDF:
        n = 2
    elif 0xE0 <= c <= 0xEF:
        n = 3
        lo = 0xA0 if c == 0xE0 else lo
        hi = 0x9F if c == 0xED else hi
    elif 0xF0 <= c <= 0xF4:
        n = 4
        lo = 0x90 if c == 0xF0 else lo
        hi = 0x8F if c == 0xF4 else hi
    else:
        return 0
    if len(raw) - i < n or not lo <= raw[i + 1] <= hi:
        return 0
    if any(not 0x80 <= raw[i + k] <= 0xBF for k in range(2, n)):
        return 0
    return n


def _is_valid_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")  # Python's strict codec draws RFC 3629's line
        return True
    except UnicodeDecodeError:
        return False


def escape_name(name) -> str:
    """A name as error messages quote it (the C++ readers' ``escape_name``):
    control characters, DEL and bytes that are not UTF-8 as ``\\xNN``, a
    backslash as ``\\\\``, the rest as is. Takes bytes or str."""
    raw = name.encode("utf-8", "surrogateescape") if isinstance(name, str) else bytes(name)
    if all(0x20 <= c < 0x7F and c != 0x5C for c in raw):
        return raw.decode("ascii")
    out: List[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == 0x5C:
            out.append("\\\\")
            i += 1
            continue
        n = 0 if c < 0x20 or c == 0x7F else _utf8_sequence_length(raw, i)
        if n == 0:
            out.append(f"\\x{c:02x}")
            i += 1
        else:
            out.append(raw[i:i + n].decode("utf-8"))
            i += n
    return "".join(out)


def _shape_str(s: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in s[:MAX_RANK]) + "]"


# --------------------------------------------------------------------------
# The decoded engine


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


# --------------------------------------------------------------------------
# Decoding (nvinfer/src/format.cpp, word for word in its messages)


def checksum(data: bytes) -> int:
    """FNV-1a, 32-bit."""
    h = 2166136261
    for b in bytes(data):
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def is_reference_engine(data: bytes) -> bool:
    """True when ``data`` starts with the reference engine's magic (says nothing about the rest)."""
    return bytes(data[:4]) == MAGIC


class _Failed(Exception):
    """A refusal; the message is what follows ``reference engine: ``."""


class _Reader:
    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.pos = 0

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def need(self, n: int, what: str) -> None:
        if n > self.remaining():
            raise _Failed(f"truncated: {what} needs {n} bytes at payload offset {self.pos}, only "
                          f"{self.remaining()} remain")

    def _le(self, n: int, fmt: str, what: str) -> int:
        self.need(n, what)
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += n
        return v

    def u8(self) -> int:
        return self._le(1, "<B", "a byte")

    def u32(self) -> int:
        return self._le(4, "<I", "a u32")

    def u64(self) -> int:
        return self._le(8, "<Q", "a u64")

    def i32(self) -> int:
        return self._le(4, "<i", "a u32")

    def i64(self) -> int:
        return self._le(8, "<q", "a u64")

    def f32(self) -> float:
        return self._le(4, "<f", "a u32")

    def str(self, what: str) -> bytes:
        n = self.u32()
        if n > MAX_NAME_LENGTH:
            raise _Failed(f"{what} is {n} bytes long, above the limit of {MAX_NAME_LENGTH}")
        self.need(n, what)
        raw = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return raw

    def shape(self, what: str) -> Shape:
        rank = self.u8()
        if rank > MAX_RANK:
            raise _Failed(f"{what} has rank {rank}, above the maximum {MAX_RANK}")
        return tuple(self.i64() for _ in range(rank))

    def count(self, min_record: int, limit: int, what: str) -> int:
        n = self.u32()
        if n > limit:
            raise _Failed(f"the {what} count {n} is above the limit of {limit}")
        if n * min_record > self.remaining():
            raise _Failed(f"the {what} count {n} needs at least {n * min_record} more bytes, only "
                          f"{self.remaining()} remain")
        return n


@dataclass
class _Tensor:
    name: bytes
    is_input: bool
    flags: int
    dtype: int
    shape: Shape


@dataclass
class _Model:
    """The C++ Model, names as raw bytes until validation has accepted them."""

    label: bytes = b""
    flags: int = 0
    switch_cost_ns: int = 0
    requested_device_memory: int = 0
    io: List[_Tensor] = field(default_factory=list)
    constants: List[Tuple[bytes, Shape, int]] = field(default_factory=list)  # name, shape, value count
    intermediates: List[Tuple[bytes, int]] = field(default_factory=list)  # name, dtype
    profiles: List[List[Tuple[Shape, Shape, Shape]]] = field(default_factory=list)
    ops: List[Tuple[int, int, int, int, int, int, float]] = field(default_factory=list)

    @property
    def num_io(self) -> int:
        return len(self.io)

    @property
    def num_tensors(self) -> int:
        return len(self.io) + len(self.constants) + len(self.intermediates)

    def is_constant(self, t: int) -> bool:
        return len(self.io) <= t < len(self.io) + len(self.constants)

    def is_intermediate(self, t: int) -> bool:
        return len(self.io) + len(self.constants) <= t < self.num_tensors

    def name(self, t: int) -> bytes:
        if t < len(self.io):
            return self.io[t].name
        if self.is_constant(t):
            return self.constants[t - len(self.io)][0]
        return self.intermediates[t - len(self.io) - len(self.constants)][0]

    def dtype(self, t: int) -> int:
        if t < len(self.io):
            return self.io[t].dtype
        if self.is_constant(t):
            return 0  # float32
        return self.intermediates[t - len(self.io) - len(self.constants)][1]

    def constant_shape(self, t: int) -> Shape:
        return self.constants[t - len(self.io)][1]

    def quoted(self, t: int) -> str:
        return f"'{escape_name(self.name(t))}'"


def _decode_payload(r: _Reader) -> _Model:
    m = _Model()
    m.label = r.str("the label")
    m.flags = r.u8()
    if m.flags & ~KNOWN_FLAGS:
        raise _Failed(f"unknown flags {m.flags}")
    m.switch_cost_ns = r.i64()
    m.requested_device_memory = r.u64()

    for _ in range(r.count(4 + 3 + 1, MAX_IO_TENSORS, "IO tensor")):
        name = r.str("an IO tensor name")
        is_input = r.u8() != 0
        io_flags = r.u8()
        if io_flags & ~7:
            raise _Failed(f"IO tensor '{escape_name(name)}' has unknown io_flags {io_flags}")
        dtype = r.u8()
        if dtype >= len(DTYPES):
            raise _Failed(f"IO tensor '{escape_name(name)}' has unknown dtype {dtype}")
        m.io.append(_Tensor(name, is_input, io_flags, dtype, r.shape("an IO tensor shape")))

    for _ in range(r.count(4 + 1 + 8, MAX_CONSTANTS, "constant")):
        name = r.str("a constant name")
        shape = r.shape("a constant shape")
        n = r.u64()
        if n > r.remaining() // 4:
            raise _Failed(f"constant '{escape_name(name)}' claims {n} values, only {r.remaining() // 4} fit in the "
                          "remaining bytes")
        r.pos += 4 * n  # the values: known to be there, not needed here
        m.constants.append((name, shape, n))

    for _ in range(r.count(4 + 1, MAX_INTERMEDIATES, "intermediate")):
        name = r.str("an intermediate name")
        dtype = r.u8()
        if dtype >= len(DTYPES):
            raise _Failed(f"intermediate '{escape_name(name)}' has unknown dtype {dtype}")
        m.intermediates.append((name, dtype))

    n_inputs = sum(1 for t in m.io if t.is_input)
    n_profiles = r.count(3 * n_inputs, MAX_PROFILES, "profile")
    if n_inputs == 0 and n_profiles > 1:
        raise _Failed("an engine without inputs has one profile")
    if n_profiles * n_inputs > MAX_PROFILE_ENTRIES:
        raise _Failed(f"{n_profiles} profiles x {n_inputs} inputs = {n_profiles * n_inputs} profile bounds, above the "
                      f"limit of {MAX_PROFILE_ENTRIES}")
    for _ in range(n_profiles):
        row = []
        for _ in range(n_inputs):
            row.append((r.shape("a profile min shape"), r.shape("a profile opt shape"),
                        r.shape("a profile max shape")))
        m.profiles.append(row)

    n_ops = r.count(OP_RECORD_SIZE, MAX_OPS, "op")
    if n_profiles * n_ops > MAX_SHAPE_INFERENCE_WORK:
        raise _Failed(f"{n_profiles} profiles x {n_ops} ops = {n_profiles * n_ops} shape inferences per bound, above "
                      f"the limit of {MAX_SHAPE_INFERENCE_WORK}")
    for _ in range(n_ops):
        r.need(OP_RECORD_SIZE, "a byte")  # counted above: always there
        m.ops.append(struct.unpack_from("<Biiiiif", r.data, r.pos))
        r.pos += OP_RECORD_SIZE
    if r.remaining():
        raise _Failed(f"{r.remaining()} unexpected bytes after the last op")
    return m


# --------------------------------------------------------------------------
# Validation (nvinfer/src/model.cpp validate(), word for word in its messages)


class _Invalid(Exception):
    """What validate() refuses; the message follows ``reference engine: invalid engine: ``."""


def _element_size(dtype: int) -> int:
    return ELEMENT_SIZES[dtype] if 0 <= dtype < len(ELEMENT_SIZES) else 0


def _tensor_bytes(shape: Shape, dtype: int) -> Optional[int]:
    """numel x element size, None when dynamic, overflowing u64 on the way, or above MAX_TENSOR_BYTES."""
    n = _element_size(dtype)
    if n == 0 or len(shape) > MAX_RANK:
        return None
    for d in shape:
        if d < 0:
            return None
        n *= d
        if n > _U64_MAX:
            return None
    return n if n <= MAX_TENSOR_BYTES else None


def _valid_shape(s: Shape, allow_dynamic: bool) -> bool:
    return len(s) <= MAX_RANK and all((allow_dynamic and d == -1) or 0 <= d <= MAX_DIM for d in s)


def _check_name(name: bytes, what: str) -> None:
    if len(name) > MAX_NAME_LENGTH:
        raise _Invalid(f"{what} is {len(name)} bytes long, above the limit of {MAX_NAME_LENGTH}")
    if b"\x00" in name:
        raise _Invalid(f"{what} '{escape_name(name)}' contains a NUL byte; NvInfer names are C strings, so no caller "
                       "could name it")
    if not _is_valid_utf8(name):
        raise _Invalid(f"{what} '{escape_name(name)}' is not valid UTF-8")


def _operand_count(kind: int) -> int:
    if kind in (OP_SCALE, OP_IDENTITY):
        return 1
    if kind == OP_KV_CACHE_UPDATE:
        return 3
    if kind == OP_CAUSAL_ATTENTION:
        return 4
    return 2


def _kind_name(kind: int) -> str:
    return OP_KINDS.get(kind, "unknown")


def _validate_structure(m: _Model) -> None:
    if not m.label:
        raise _Invalid("the engine has no label; give the builder a non-empty name")
    _check_name(m.label, "the label")
    if not m.io:
        raise _Invalid("the engine has no IO tensors")
    for n, limit, what in ((len(m.io), MAX_IO_TENSORS, "IO tensors"), (len(m.constants), MAX_CONSTANTS, "constants"),
                           (len(m.intermediates), MAX_INTERMEDIATES, "intermediates"), (len(m.ops), MAX_OPS, "ops"),
                           (len(m.profiles), MAX_PROFILES, "optimization profiles")):
        if n > limit:
            raise _Invalid(f"the engine has {n} {what}, above the limit of {limit}")
    n_inputs = sum(1 for t in m.io if t.is_input)
    n_profiles = len(m.profiles)
    if n_profiles * n_inputs > MAX_PROFILE_ENTRIES:
        raise _Invalid(f"{n_profiles} profiles x {n_inputs} inputs = {n_profiles * n_inputs} profile bounds, above the "
                       f"limit of {MAX_PROFILE_ENTRIES}")
    if n_profiles * len(m.ops) > MAX_SHAPE_INFERENCE_WORK:
        raise _Invalid(f"{n_profiles} profiles x {len(m.ops)} ops = {n_profiles * len(m.ops)} shape inferences per "
                       f"bound, above the limit of {MAX_SHAPE_INFERENCE_WORK}")

    names: Dict[bytes, int] = {}
    for t in range(m.num_tensors):
        name = m.name(t)
        if not name:
            raise _Invalid(f"tensor #{t} has an empty name")
        _check_name(name, f"tensor #{t} name")
        if name in names:
            raise _Invalid(f"tensor name '{escape_name(name)}' is used twice; names must be unique")
        names[name] = t

    has_output = False
    for t in m.io:
        name = escape_name(t.name)
        if not _valid_shape(t.shape, True):
            raise _Invalid(f"IO tensor '{name}' has an invalid shape {_shape_str(t.shape)} (rank 0..{MAX_RANK}, dims "
                           f"-1 or 0..{MAX_DIM})")
        if t.is_input and t.flags & 4:
            raise _Invalid(f"input '{name}' is marked data-dependent; only outputs can be")
        if not t.is_input and t.flags & 1:
            raise _Invalid(f"output '{name}' is marked as a shape tensor; only inputs can be")
        has_output = has_output or not t.is_input
    if not has_output:
        raise _Invalid("the engine has no outputs")

    for cname, shape, count in m.constants:
        name = escape_name(cname)
        if not _valid_shape(shape, False):
            raise _Invalid(f"constant '{name}' has an invalid shape {_shape_str(shape)}; constants need static dims")
        nbytes = _tensor_bytes(shape, 0)
        if nbytes is None:
            raise _Invalid(f"constant '{name}' is too large")
        if count != nbytes // 4:
            raise _Invalid(f"constant '{name}' of shape {_shape_str(shape)} needs {nbytes // 4} values, got {count}")

    if not m.profiles:
        raise _Invalid("the engine has no optimization profiles; it needs at least one")
    for p, profile in enumerate(m.profiles):
        where = f"profile {p}"
        if len(profile) != n_inputs:  # the decoder cannot make one; kept for the builder's sake
            raise _Invalid(f"{where} has bounds for {len(profile)} inputs, the engine has {n_inputs}")
        k = 0
        for t in m.io:
            if not t.is_input:
                continue
            mn, opt, mx = profile[k]
            k += 1
            name = escape_name(t.name)
            rank = len(t.shape)
            for b in (mn, opt, mx):
                if len(b) != rank or not _valid_shape(b, False):
                    raise _Invalid(f"{where}, input '{name}': bounds min {_shape_str(mn)} opt {_shape_str(opt)} max "
                                   f"{_shape_str(mx)} must be static shapes of the declared rank {rank}")
            for d in range(rank):
                dim = f"{where}, input '{name}' dim {d}: "
                if t.shape[d] >= 0 and (mn[d] != t.shape[d] or opt[d] != t.shape[d] or mx[d] != t.shape[d]):
                    raise _Invalid(f"{dim}declared static {t.shape[d]} but the profile says min {mn[d]} opt {opt[d]} "
                                   f"max {mx[d]}")
                if mn[d] > opt[d] or opt[d] > mx[d]:
                    raise _Invalid(f"{dim}needs min <= opt <= max, got {mn[d]} <= {opt[d]} <= {mx[d]}")
            if _tensor_bytes(mx, t.dtype) is None:
                raise _Invalid(f"{where}, input '{name}': max shape {_shape_str(mx)} is too large")

    if not 0 <= m.switch_cost_ns <= MAX_SWITCH_COST_NS:
        raise _Invalid(f"switch cost {m.switch_cost_ns} ns is outside [0, {MAX_SWITCH_COST_NS}]")
    if m.requested_device_memory > MAX_DEVICE_MEMORY:
        raise _Invalid(f"device memory size {m.requested_device_memory} is above the limit {MAX_DEVICE_MEMORY}")

    n_tensors = m.num_tensors
    available = [m.is_constant(t) or (t < m.num_io and m.io[t].is_input) for t in range(n_tensors)]
    updated_by: Dict[int, int] = {}
    for k, (kind, a, b, c, d, out, factor) in enumerate(m.ops):
        where = f"op #{k} ({_kind_name(kind)})"
        if kind not in OP_KINDS:
            raise _Invalid(f"{where} has an unknown kind")
        arity = _operand_count(kind)
        operands = (a, b, c, d)
        if not 0 <= out < n_tensors:
            raise _Invalid(f"{where} refers to a tensor that does not exist")
        for i in range(4):
            if i < arity:
                if not 0 <= operands[i] < n_tensors:
                    raise _Invalid(f"{where} refers to a tensor that does not exist")
            elif operands[i] != -1:
                raise _Invalid(f"{where} has operand {i} set, but {_kind_name(kind)} takes {arity}")
        writable = m.is_intermediate(out) or (out < m.num_io and not m.io[out].is_input)
        if not writable:
            raise _Invalid(f"{where} writes {m.quoted(out)}, which is not an output or intermediate")
        if available[out]:
            raise _Invalid(f"{where} writes {m.quoted(out)}, which another op already wrote")
        for operand in operands:
            if operand < 0:
                continue
            if not available[operand]:
                raise _Invalid(f"{where} reads {m.quoted(operand)} before any op writes it")
            if operand < m.num_io and m.io[operand].flags & 1:
                raise _Invalid(f"{where} reads shape tensor {m.quoted(operand)}; ops cannot compute on those")
        expect = where + ": "
        is_float = (lambda t: m.dtype(t) == 0)
        is_index = (lambda t: m.dtype(t) in (5, 6))
        if kind == OP_EMBEDDING:
            if m.dtype(a) not in (5, 6):
                raise _Invalid(f"{expect}ids {m.quoted(a)} must be int64 or int32, not {DTYPES[m.dtype(a)]}")
            if not m.is_constant(b) or len(m.constant_shape(b)) != 2:
                raise _Invalid(f"{expect}table {m.quoted(b)} must be a constant of shape [V, H]")
        elif kind == OP_ADD:
            if not is_float(a) or not is_float(b):
                raise _Invalid(f"{expect}operands {m.quoted(a)} and {m.quoted(b)} must be float32")
        elif kind == OP_ADD_BIAS:
            if not is_float(a):
                raise _Invalid(f"{expect}input {m.quoted(a)} must be float32")
            if not m.is_constant(b) or len(m.constant_shape(b)) != 1:
                raise _Invalid(f"{expect}bias {m.quoted(b)} must be a constant of shape [H]")
        elif kind == OP_SCALE:
            if not is_float(a):
                raise _Invalid(f"{expect}input {m.quoted(a)} must be float32")
            if not math.isfinite(factor):
                raise _Invalid(f"{expect}scale factor must be finite")
        elif kind == OP_MATMUL:
            if not is_float(a):
                raise _Invalid(f"{expect}input {m.quoted(a)} must be float32")
            if not m.is_constant(b) or len(m.constant_shape(b)) != 2:
                raise _Invalid(f"{expect}weight {m.quoted(b)} must be a constant of shape [K, N]")
        elif kind == OP_KV_CACHE_UPDATE:
            cache_is_input = a < m.num_io and m.io[a].is_input
            out_is_output = out < m.num_io and not m.io[out].is_input
            if not cache_is_input or not is_float(a):
                raise _Invalid(f"{expect}cache {m.quoted(a)} must be a float32 engine input")
            if not out_is_output:
                raise _Invalid(f"{expect}its result {m.quoted(out)} must be an engine output: it shares the cache "
                               "input's memory")
            if m.io[out].shape != m.io[a].shape:
                raise _Invalid(f"{expect}output {m.quoted(out)} is declared {_shape_str(m.io[out].shape)} but the "
                               f"cache {m.quoted(a)} it aliases is {_shape_str(m.io[a].shape)}")
            if a in updated_by:
                raise _Invalid(f"{expect}cache {m.quoted(a)} is already updated by op #{updated_by[a]}; an input is "
                               "aliased by one output at most")
            updated_by[a] = k
            if not is_float(b):
                raise _Invalid(f"{expect}update {m.quoted(b)} must be float32")
            if not is_index(c):
                raise _Invalid(f"{expect}write indices {m.quoted(c)} must be int32 or int64")
        elif kind == OP_CAUSAL_ATTENTION:
            if not is_float(a) or not is_float(b) or not is_float(c):
                raise _Invalid(f"{expect}queries {m.quoted(a)}, keys {m.quoted(b)} and values {m.quoted(c)} must be "
                               "float32")
            if not is_index(d):
                raise _Invalid(f"{expect}positions {m.quoted(d)} must be int32 or int64")
            if not math.isfinite(factor):
                raise _Invalid(f"{expect}scale factor must be finite")
        produced = m.dtype(a) if kind == OP_IDENTITY else 0
        if m.dtype(out) != produced:
            raise _Invalid(f"{where} produces {DTYPES[produced]} but {m.quoted(out)} is {DTYPES[m.dtype(out)]}")
        available[out] = True
    for t in range(n_tensors):
        if not available[t]:
            raise _Invalid(f"{'intermediate ' if m.is_intermediate(t) else 'output '}{m.quoted(t)} is never written "
                           "by any op")


def _initial_shapes(m: _Model) -> List[Shape]:
    return [()] * m.num_tensors


def _set_inputs(m: _Model, shapes: List[Shape], profile: int, which: int) -> None:
    k = 0
    for i, t in enumerate(m.io):
        if t.is_input:
            shapes[i] = m.profiles[profile][k][which]
            k += 1


def _infer_shapes(m: _Model, shapes: List[Shape]) -> Optional[str]:
    """nvinfer's infer_shapes: fills every tensor's shape from the inputs'; the refusal, or None."""
    n_io = m.num_io
    for i, (_, shape, _) in enumerate(m.constants):
        shapes[n_io + i] = shape

    def op_name(k: int) -> str:
        kind, out = m.ops[k][0], m.ops[k][5]
        return f"op #{k} ({_kind_name(kind)} -> {m.quoted(out)})"

    for k, (kind, a_id, b_id, c_id, d_id, out_id, _) in enumerate(m.ops):
        a = shapes[a_id]
        out = a
        if kind == OP_EMBEDDING:
            table = shapes[b_id]
            if len(a) >= MAX_RANK:
                return f"{op_name(k)}: ids {_shape_str(a)} leave no room for the hidden dim"
            out = a + (table[1],)
        elif kind == OP_ADD:
            if a != shapes[b_id]:
                return (f"{op_name(k)}: operands {m.quoted(a_id)} {_shape_str(a)} and {m.quoted(b_id)} "
                        f"{_shape_str(shapes[b_id])} must have the same shape")
        elif kind == OP_ADD_BIAS:
            bias = shapes[b_id]
            if len(a) < 1 or a[-1] != bias[0]:
                return f"{op_name(k)}: input {m.quoted(a_id)} {_shape_str(a)} must end in the bias length {bias[0]}"
        elif kind == OP_MATMUL:
            w = shapes[b_id]
            if len(a) < 1 or a[-1] != w[0]:
                return (f"{op_name(k)}: input {m.quoted(a_id)} {_shape_str(a)} must end in K = {w[0]} to multiply "
                        f"weight {m.quoted(b_id)} {_shape_str(w)}")
            out = a[:-1] + (w[1],)
        elif kind == OP_KV_CACHE_UPDATE:
            update, indices = shapes[b_id], shapes[c_id]
            if (len(a) != 3 or len(update) != 3 or update[0] != a[0] or update[2] != a[2] or update[1] > a[1]):
                return (f"{op_name(k)}: cache {m.quoted(a_id)} {_shape_str(a)} must be [B, T, D] and update "
                        f"{m.quoted(b_id)} {_shape_str(update)} [B, S, D] with S <= T")
            if len(indices) != 1 or indices[0] != a[0]:
                return (f"{op_name(k)}: write indices {m.quoted(c_id)} {_shape_str(indices)} must be [B] = "
                        f"[{a[0]}]")
        elif kind == OP_CAUSAL_ATTENTION:
            keys, values, positions = shapes[b_id], shapes[c_id], shapes[d_id]
            if (len(a) != 3 or len(keys) != 3 or len(values) != 3 or keys[0] != a[0] or keys[2] != a[2]
                    or values[0] != a[0] or values[1] != keys[1] or a[1] > keys[1]):
                return (f"{op_name(k)}: queries {m.quoted(a_id)} {_shape_str(a)}, keys {m.quoted(b_id)} "
                        f"{_shape_str(keys)} and values {m.quoted(c_id)} {_shape_str(values)} must be [B, S, D], "
                        "[B, T, D] and [B, T, E], S <= T")
            if len(positions) != 1 or positions[0] != a[0]:
                return (f"{op_name(k)}: positions {m.quoted(d_id)} {_shape_str(positions)} must be [B] = "
                        f"[{a[0]}]")
            out = a[:2] + (values[2],)
        if out_id < n_io:
            declared = m.io[out_id].shape
            if len(declared) != len(out) or any(0 <= dd != o for dd, o in zip(declared, out)):
                return (f"{op_name(k)} produces {_shape_str(out)} but output {m.quoted(out_id)} is declared "
                        f"{_shape_str(declared)}")
        shapes[out_id] = out
    return None


def _plan_memory(m: _Model) -> int:
    """nvinfer's plan_memory: the scratch a context needs (device_memory_size()); raises _Invalid."""
    need = [0] * len(m.intermediates)
    shapes = _initial_shapes(m)
    base = m.num_io + len(m.constants)
    for p in range(len(m.profiles)):
        _set_inputs(m, shapes, p, 2)
        error = _infer_shapes(m, shapes)
        if error is not None:
            raise _Invalid(error)
        for i, (name, dtype) in enumerate(m.intermediates):
            nbytes = _tensor_bytes(shapes[base + i], dtype)
            if nbytes is None:
                raise _Invalid(f"intermediate '{escape_name(name)}' is too large under profile {p}")
            need[i] = max(need[i], nbytes)
    offset = 0
    for n in need:
        offset += (n + SCRATCH_ALIGNMENT - 1) // SCRATCH_ALIGNMENT * SCRATCH_ALIGNMENT
        if offset > MAX_DEVICE_MEMORY:
            raise _Invalid(f"the intermediates need more than {MAX_DEVICE_MEMORY} bytes of scratch memory, the limit")
    return max(offset, m.requested_device_memory)


def _validate(m: _Model) -> int:
    """validate(): structure, every profile's min, opt and max shapes, the memory plan; returns the plan's size."""
    _validate_structure(m)
    shapes = _initial_shapes(m)
    for p in range(len(m.profiles)):
        for w, which in enumerate(("min", "opt", "max")):
            _set_inputs(m, shapes, p, w)
            error = _infer_shapes(m, shapes)
            if error is not None:
                raise _Invalid(f"profile {p} ({which} shapes): {error}")
    return _plan_memory(m)


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
