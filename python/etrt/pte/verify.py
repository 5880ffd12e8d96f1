"""Checks a ``.pte`` before anything decodes it: the file header, the
optional extended header (``eh00``) against the file size, and every offset
of the flatbuffer against the schema, like ``flatbuffers::Verifier`` (bounds,
alignment, vtables, NUL-terminated UTF-8 strings, union and enum values flatc
can print). Depth and table count are bounded, so an adversarial file costs
bounded time and memory and always ends in a :class:`PteError`.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .format import (EXTENDED_HEADER_LENGTH, EXTENDED_HEADER_MAGIC, EXTENDED_HEADER_MIN_LENGTH,
                     EXTENDED_HEADER_OFFSET, FILE_IDENTIFIER, INT32_MAX, PteError)
from .schema import SCALAR_SIZES, FbsSchema, FbsType, load_schema
from .toolchain import Toolchain, find_toolchain

__all__ = ["BYTES_FIELDS", "Verifier", "parse_header", "verify_pte_bytes"]

#: [ubyte] fields that are opaque bytes (returned as ``bytes`` by read_pte).
BYTES_FIELDS = {
    ("BackendDelegateInlineData", "data"),
    ("Buffer", "storage"),
    ("CompileSpec", "value"),
}


class Verifier:
    """Checks every offset in a flatbuffer against the schema (like
    flatbuffers::Verifier) and records where the opaque byte vectors are."""

    MAX_DEPTH = 64
    MAX_TABLES = 1_000_000

    def __init__(self, buf: memoryview, schema: FbsSchema) -> None:
        self.buf = buf
        self.end = len(buf)
        self.schema = schema
        self.tables = 0
        # (json path, position of the u32 length, data start, length)
        self.byte_vectors: List[Tuple[Tuple[Any, ...], int, int, int]] = []

    def fail(self, msg: str, path: Sequence[Any]) -> None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) or "<root>"
        raise PteError(f"corrupt or truncated .pte: {msg} at {where.lstrip('.')}")

    def need(self, pos: int, size: int, align: int, path: Sequence[Any], what: str) -> None:
        if pos < 0 or pos + size > self.end:
            self.fail(f"{what} at byte {pos} (+{size}) lies outside the {self.end}-byte flatbuffer", path)
        if align > 1 and pos % align:
            self.fail(f"{what} at byte {pos} is not {align}-byte aligned", path)

    def u8(self, p: int) -> int:
        return self.buf[p]

    def u16(self, p: int) -> int:
        return struct.unpack_from("<H", self.buf, p)[0]

    def u32(self, p: int) -> int:
        return struct.unpack_from("<I", self.buf, p)[0]

    def i32(self, p: int) -> int:
        return struct.unpack_from("<i", self.buf, p)[0]

    def deref(self, p: int, path: Sequence[Any], what: str) -> int:
        self.need(p, 4, 4, path, f"offset to {what}")
        off = self.u32(p)
        if off == 0 or off > INT32_MAX:
            self.fail(f"bad offset {off} to {what}", path)
        return p + off

    def verify(self) -> None:
        self.need(0, 8, 4, (), "flatbuffer header")
        root = self.u32(0)
        self.table(root, self.schema.root_type, (), 0)

    def scalar_size(self, t: FbsType) -> int:
        if t[0] == "scalar":
            return SCALAR_SIZES[t[1]]
        if t[0] == "enum":
            return SCALAR_SIZES[self.schema.enums[t[1]][0]]
        if t[0] == "struct":
            return self.schema.structs[t[1]][0]
        return 4  # offsets

    def table(self, t: int, tname: str, path: Tuple[Any, ...], depth: int) -> None:
        if depth > self.MAX_DEPTH:
            self.fail("tables nested too deeply", path)
        self.tables += 1
        if self.tables > self.MAX_TABLES:
            self.fail("too many tables", path)
        self.need(t, 4, 4, path, f"table {tname}")
        vt = t - self.i32(t)
        self.need(vt, 4, 2, path, f"vtable of {tname}")
        vsize, tsize = self.u16(vt), self.u16(vt + 2)
        if vsize < 4 or vsize % 2:
            self.fail(f"bad vtable size {vsize} for {tname}", path)
        self.need(vt, vsize, 2, path, f"vtable of {tname}")
        self.need(t, max(tsize, 4), 4, path, f"table {tname}")

        def slot_off(slot: int) -> int:
            return self.u16(vt + 4 + 2 * slot) if 4 + 2 * slot < vsize else 0

        for f in self.schema.tables[tname]:
            off = slot_off(f.slot)
            fpath = path + (f.name,)
            if f.type[0] == "union":
                toff = slot_off(f.slot - 1)
                utype = 0
                if toff:
                    if toff >= max(tsize, 4):
                        self.fail(f"field {f.name}_type offset {toff} outside table size {tsize}", fpath)
                    self.need(t + toff, 1, 1, fpath, "union type")
                    utype = self.u8(t + toff)
                if not off:
                    continue
                if off >= max(tsize, 4):
                    self.fail(f"field {f.name} offset {off} outside table size {tsize}", fpath)
                if not utype:
                    # flatc cannot print a union value whose type is NONE.
                    self.fail(f"union {f.name} has a value but no type", fpath)
                members = self.schema.unions[f.type[1]]
                if utype > len(members):
                    self.fail(f"unknown {f.type[1]} union type {utype}", fpath)
                target = self.deref(t + off, fpath, members[utype - 1])
                self.table(target, members[utype - 1], fpath, depth + 1)
                continue
            if not off:
                continue
            if off >= max(tsize, 4):
                self.fail(f"field {f.name} offset {off} outside table size {tsize}", fpath)
            p = t + off
            kind = f.type[0]
            if kind in ("scalar", "enum", "struct"):
                size = self.scalar_size(f.type)
                align = size if kind != "struct" else self.schema.structs[f.type[1]][1]
                self.need(p, size, align, fpath, f.name)
                if kind == "enum":
                    self.enum_value(p, f.type[1], fpath)
            elif kind == "string":
                self.string(self.deref(p, fpath, "string"), fpath)
            elif kind == "table":
                self.table(self.deref(p, fpath, f.type[1]), f.type[1], fpath, depth + 1)
            elif kind == "vector":
                self.vector(self.deref(p, fpath, "vector"), f.type[1], fpath, depth,
                            (tname, f.name) in BYTES_FIELDS)

    _FORMATS = {1: "b", 2: "h", 4: "i", 8: "q"}

    def enum_value(self, p: int, ename: str, path: Tuple[Any, ...]) -> None:
        # flatc --strict-json refuses to print a value the enum does not name.
        base, values = self.schema.enums[ename]
        fmt = self._FORMATS[SCALAR_SIZES[base]]
        if base.startswith("u") or base == "bool":
            fmt = fmt.upper()
        val = struct.unpack_from("<" + fmt, self.buf, p)[0]
        if val not in values.values():
            self.fail(f"{val} is not a {ename} value", path)

    def string(self, s: int, path: Tuple[Any, ...]) -> None:
        self.need(s, 4, 4, path, "string length")
        n = self.u32(s)
        self.need(s + 4, n + 1, 1, path, "string")
        if self.buf[s + 4 + n] != 0:
            self.fail("string is not NUL-terminated", path)
        try:
            bytes(self.buf[s + 4:s + 4 + n]).decode("utf-8")
        except UnicodeDecodeError:
            self.fail("string is not valid UTF-8", path)

    def vector(self, v: int, elem: FbsType, path: Tuple[Any, ...], depth: int, is_bytes: bool) -> None:
        self.need(v, 4, 4, path, "vector length")
        n = self.u32(v)
        kind = elem[0]
        if kind in ("scalar", "enum", "struct"):
            size = self.scalar_size(elem)
            if n * size > self.end:
                self.fail(f"vector of {n} elements overruns the buffer", path)
            self.need(v + 4, n * size, 1, path, f"vector of {n} elements")
            if is_bytes:
                self.byte_vectors.append((path, v, v + 4, n))
            if kind == "enum":
                for i in range(n):
                    self.enum_value(v + 4 + i * size, elem[1], path + (i,))
            return
        if n * 4 > self.end:
            self.fail(f"vector of {n} elements overruns the buffer", path)
        self.need(v + 4, n * 4, 4, path, f"vector of {n} offsets")
        for i in range(n):
            ep = path + (i,)
            target = self.deref(v + 4 + 4 * i, ep, "vector element")
            if kind == "string":
                self.string(target, ep)
            elif kind == "table":
                self.table(target, elem[1], ep, depth + 1)
            else:
                self.fail(f"unsupported vector element kind {kind}", ep)


def _le(data: bytes, off: int, size: int) -> int:
    return int.from_bytes(data[off:off + size], "little")


def parse_header(data: bytes, identifier: bytes, size: Optional[int] = None) -> Tuple[int, Optional[Dict[str, int]]]:
    """Returns (program_size, extended header or None) after checking the
    identifier and the extended header against the file's size: ``size``
    where ``data`` is only the file's beginning (its first
    EXTENDED_HEADER_OFFSET + EXTENDED_HEADER_LENGTH bytes, or all of a shorter
    file), else ``len(data)``."""
    if size is None:
        size = len(data)
    if size < 8:
        raise PteError(f"not a .pte: {size} bytes is too short for a flatbuffer header")
    ident = bytes(data[4:8])
    if ident != identifier:
        if ident[:2] == b"ET":
            raise PteError(
                f"unsupported .pte schema version: file identifier {ident!r}, "
                f"this reader's schema expects {identifier!r}")
        raise PteError(f"not a .pte: file identifier {ident!r} is not {identifier!r}")
    eh = None
    program_size = size
    if bytes(data[EXTENDED_HEADER_OFFSET:EXTENDED_HEADER_OFFSET + 4]) == EXTENDED_HEADER_MAGIC:
        h = EXTENDED_HEADER_OFFSET
        if size < h + EXTENDED_HEADER_MIN_LENGTH:
            raise PteError("truncated .pte: the extended header is cut off")
        length = _le(data, h + 4, 4)
        if length < EXTENDED_HEADER_MIN_LENGTH:
            raise PteError(f"corrupt .pte: extended header length {length} < {EXTENDED_HEADER_MIN_LENGTH}")
        eh = {
            "length": length,
            "program_size": _le(data, h + 8, 8),
            "segment_base_offset": _le(data, h + 16, 8),
            "segment_data_size": _le(data, h + 24, 8) if length >= EXTENDED_HEADER_LENGTH else 0,
        }
        program_size = eh["program_size"]
        if program_size < 8 + length:
            raise PteError(f"corrupt .pte: extended header program_size {program_size} is too small")
        if program_size > size:
            raise PteError(
                f"truncated .pte: the extended header says the program is {program_size} bytes, "
                f"the file has {size}")
        base = eh["segment_base_offset"]
        if base and base < program_size:
            raise PteError(f"corrupt .pte: segment_base_offset {base} < program_size {program_size}")
        expected = base + eh["segment_data_size"] if base else program_size
        if expected > size:
            raise PteError(
                f"truncated .pte: the extended header says the file is {expected} bytes, "
                f"it has {size}")
    return program_size, eh


def verify_pte_bytes(data: bytes, toolchain: Optional[Toolchain] = None) -> Dict[str, Any]:
    """Checks header, extended header and the whole flatbuffer of a .pte.

    Returns ``{"program_size", "extended_header"}``. Raises PteError.
    Needs only the schema (not flatc) from the toolchain.
    """
    tc = toolchain or find_toolchain()
    schema = load_schema(tc)
    program_size, eh = parse_header(data, schema.file_identifier or FILE_IDENTIFIER)
    Verifier(memoryview(data)[:program_size], schema).verify()
    return {"program_size": program_size, "extended_header": eh}
