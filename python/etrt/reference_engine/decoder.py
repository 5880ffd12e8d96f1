"""Decoding the payload into the validation model
(``nvinfer/src/format.cpp``, word for word in its messages): bounded reads
that never go past the data, and every count checked against its limit and
the bytes present before anything is built for it."""

from __future__ import annotations

import struct

from .format import (DTYPES, KNOWN_FLAGS, MAX_CONSTANTS, MAX_INTERMEDIATES, MAX_IO_TENSORS, MAX_NAME_LENGTH, MAX_OPS,
                     MAX_PROFILE_ENTRIES, MAX_PROFILES, MAX_RANK, MAX_SHAPE_INFERENCE_WORK, OP_RECORD_SIZE, Shape,
                     escape_name)
from .model import _Model, _Tensor


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
