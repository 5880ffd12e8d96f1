"""Reads the header, IO tensors and optimization profiles of an etrt
*reference engine* (the GPU-free engine, magic ``ETRF``), so that ``etrt
inspect`` and validation can show and check the profiles an engine really
has, not only what its signature claims.

The format is defined by ``nvinfer/src/format.{h,cpp}`` (see also
docs/reference-engine.md); little-endian throughout::

    header (24 bytes)
      0  char[4] magic "ETRF"
      4  u32     format version   (1)
      8  u64     payload size     bytes after the header; must match exactly
      16 u32     checksum         FNV-1a (32-bit) of the payload
      20 u32     reserved         0
    payload
      str  label                  u32 length + bytes
      u8   flags                  bit 0: tracing on
      i64  switch cost, ns
      u64  requested device memory, bytes
      u32  IO count,           then per tensor: str name, u8 is_input, u8 flags (bit 0 shape tensor, bit 1 on host, bit 2 data-dependent), u8 dtype, shape
      u32  constant count,     then per constant: str name, shape, u64 value count, f32 values
      u32  intermediate count, then per tensor: str name, u8 dtype
      u32  profile count,      then per profile, per input in IO order: shape min, shape opt, shape max
      u32  op count,           ...    (not read here)
    shape = u8 rank + rank x i64

Only what inspection needs is decoded; the C++ reader remains the authority on
whether an engine runs (ops, shape inference). This reader never reads past the
data and never trusts a count before checking that the bytes for it exist.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import List, Optional, Tuple

from .signature import Bounds, InputSignature, Signature

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "MAGIC",
    "ReferenceEngine",
    "ReferenceEngineError",
    "ReferenceTensor",
    "checksum",
    "is_reference_engine",
    "read_reference_engine",
    "try_read_reference_engine",
]

MAGIC = b"ETRF"
FORMAT_VERSION = 1
HEADER_SIZE = 24
MAX_RANK = 8
#: kMaxDim of nvinfer/src/model.h.
MAX_DIM = 2**31 - 1
KNOWN_FLAGS = 0x1
#: etrt::engine::DataType values, spelled as in the blob's io_bindings.
DTYPES = ("float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool")


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

    @property
    def inputs(self) -> List[ReferenceTensor]:
        return [t for t in self.io if t.is_input]

    @property
    def outputs(self) -> List[ReferenceTensor]:
        return [t for t in self.io if not t.is_input]

    @property
    def num_profiles(self) -> int:
        return len(self.profiles)

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

    def unpack(self, fmt: str, what: str) -> int:
        size = struct.calcsize(fmt)
        self.need(size, what)
        v = struct.unpack_from("<" + fmt, self.data, self.pos)[0]
        self.pos += size
        return v

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


def read_reference_engine(data: bytes) -> ReferenceEngine:
    """Decodes a reference engine's header, IO tensors and profiles.

    Raises :class:`ReferenceEngineError` for a wrong magic, a version this
    reader does not know, a payload size or checksum that does not match, and
    anything truncated or out of range in the part it reads.
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

    n_const = r.count(4 + 1 + 8, "constant")
    for _ in range(n_const):
        r.string("a constant name")
        r.shape("a constant shape")
        n = r.unpack("Q", "a constant's value count")
        if n > r.remaining() // 4:
            raise ReferenceEngineError(
                f"reference engine: a constant claims {n} values, only {r.remaining() // 4} fit in the remaining "
                "bytes")
        r.skip(4 * n, "constant values")

    n_inter = r.count(4 + 1, "intermediate")
    for _ in range(n_inter):
        r.string("an intermediate name")
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
    r.count(1 + 4 * 4, "op")  # present and plausible; the ops themselves are the C++ reader's business

    return ReferenceEngine(
        version=version,
        size=len(view),
        label=label,
        tracing=bool(flags & 1),
        switch_cost_ns=switch_cost,
        requested_device_memory=device_memory,
        io=tuple(io),
        num_constants=n_const,
        num_intermediates=n_inter,
        profiles=tuple(profiles),
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
