"""Write and read ExecuTorch ``.pte`` programs without PyTorch.

The writer builds a Program as JSON that follows ExecuTorch's own flatbuffer
schema (``program.fbs`` + ``scalar_type.fbs``, shipped in the executorch
wheel) and lets the wheel's ``flatc`` turn it into the binary. Delegate blobs
are stored either in segments after the flatbuffer (default, like EXIR's
``extract_delegate_segments=True``) or inline in
``Program.backend_delegate_data``.

The reader checks the file header, the optional extended header (``eh00``)
and every offset of the flatbuffer against the schema before it lets ``flatc``
decode it to JSON, so a truncated or foreign file gives a :class:`PteError`
instead of a crashed ``flatc``.

Only the standard library is used. See docs/pte-packer.md.

Usage::

    from etrt.pte import Program, read_pte

    prog = Program()
    m = prog.method("forward", inputs=["x"], outputs=["y"])
    m.tensor("x", "float32", [1, 8], dynamic=True)
    m.tensor("y", "float32", [1, 8], dynamic=True)
    m.delegate_call("MyBackend", blob, args=["x", "y"], compile_specs={"k": b"v"})
    prog.write("model.pte")

    info = read_pte("model.pte")

Command line (the build-time front door, see :func:`main`)::

    python -m etrt.pte --spec spec.json --out model.pte [--depfile model.pte.d]
    python -m etrt.pte --dump model.pte
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = [
    "DTYPES",
    "FILE_IDENTIFIER",
    "Method",
    "PteError",
    "Program",
    "Toolchain",
    "ToolchainError",
    "describe_value",
    "find_toolchain",
    "load_spec",
    "main",
    "program_from_spec",
    "read_pte",
    "verify_pte_bytes",
]

# --------------------------------------------------------------------------
# Facts about the format (from program.fbs, exir/_serialize/_program.py and
# the runtime's program.cpp / method.cpp / tensor_parser*.cpp; see
# docs/pte-packer.md). The schema is the source of truth where it can be:
# the file identifier and the inline alignment are read from it at run time.
# --------------------------------------------------------------------------

#: ``file_identifier`` of program.fbs: bytes 4..8 of every .pte.
FILE_IDENTIFIER = b"ET12"
#: Program.version written by EXIR (exir/version.py EXECUTORCH_SCHEMA_VERSION).
SCHEMA_VERSION = 0
#: The optional extended header sits right after root offset + identifier.
EXTENDED_HEADER_OFFSET = 8
EXTENDED_HEADER_MAGIC = b"eh00"
#: magic, u32 length, u64 program_size, u64 segment_base_offset.
EXTENDED_HEADER_MIN_LENGTH = 24
#: ... + u64 segment_data_size (ExecuTorch >= 1.0 writes this length).
EXTENDED_HEADER_LENGTH = 32
#: EXIR's default segment alignment (serialize_pte_binary segment_alignment).
SEGMENT_ALIGNMENT = 128
#: ``force_align`` of BackendDelegateInlineData.data in the shipped schema.
INLINE_DELEGATE_ALIGNMENT = 16
#: Alignment of each planned tensor inside its planned buffer.
PLANNED_TENSOR_ALIGNMENT = 16
#: runtime kTensorDimensionLimit.
MAX_RANK = 16
#: Planned tensors live in memory_id 1; 0 is reserved (the runtime subtracts 1
#: and non_const_buffer_sizes[0] is a placeholder 0).
PLANNED_MEMORY_ID = 1

_INT32_MAX = 2**31 - 1

#: dtype name -> (ScalarType enum name in scalar_type.fbs, element size).
DTYPES: Dict[str, Tuple[str, int]] = {
    "float32": ("FLOAT", 4),
    "float16": ("HALF", 2),
    "bfloat16": ("BFLOAT16", 2),
    "float64": ("DOUBLE", 8),
    "int8": ("CHAR", 1),
    "uint8": ("BYTE", 1),
    "int16": ("SHORT", 2),
    "int32": ("INT", 4),
    "int64": ("LONG", 8),
    "bool": ("BOOL", 1),
}
_DTYPE_ALIASES = {
    "float": "float32", "half": "float16", "double": "float64",
    "long": "int64", "int": "int32", "fp32": "float32", "fp16": "float16",
    "bf16": "bfloat16", "f32": "float32", "f16": "float16", "i8": "int8",
    "u8": "uint8", "i32": "int32", "i64": "int64",
}
_SCALAR_TYPE_TO_DTYPE = {st: name for name, (st, _) in DTYPES.items()}


class PteError(ValueError):
    """The input is not a valid .pte, or a program description is invalid."""


class ToolchainError(RuntimeError):
    """flatc or the ExecuTorch schema could not be found or run."""


# --------------------------------------------------------------------------
# Locating flatc and the schema
# --------------------------------------------------------------------------

_SCHEMA_FILES = ("program.fbs", "scalar_type.fbs")


@dataclass(frozen=True)
class Toolchain:
    """Where flatc and ExecuTorch's program schema live."""

    flatc: str
    schema_dir: str

    @property
    def program_fbs(self) -> str:
        return os.path.join(self.schema_dir, "program.fbs")


def _executorch_roots() -> List[Path]:
    """Candidate directories of an installed ``executorch`` package.

    The package is never imported (its __init__ needs torch); find_spec on a
    top-level name only locates it.
    """
    roots: List[Path] = []

    def add(p: Union[str, Path]) -> None:
        p = Path(p)
        if p.is_dir() and p not in roots:
            roots.append(p)

    try:
        spec = importlib.util.find_spec("executorch")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        for loc in spec.submodule_search_locations or []:
            add(loc)
        if spec.origin and spec.origin not in ("namespace", "built-in"):
            add(Path(spec.origin).parent)
    for prefix in dict.fromkeys([sys.prefix, sys.exec_prefix, sys.base_prefix]):
        for sp in sorted(Path(prefix).glob("lib/python3*/site-packages/executorch")):
            add(sp)
        add(Path(prefix) / "Lib" / "site-packages" / "executorch")
    for entry in sys.path:
        if entry:
            add(Path(entry) / "executorch")
    return roots


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_toolchain() -> Toolchain:
    """Finds flatc and the schema directory.

    Order: ``$ETRT_FLATC`` / ``$ETRT_EXECUTORCH_SCHEMA_DIR``; else the
    executorch wheel visible to this interpreter (``data/bin/flatc``,
    ``exir/_serialize/program.fbs``); else ``flatc`` on PATH (the schema has
    no PATH fallback).
    """
    roots = _executorch_roots()

    flatc = os.environ.get("ETRT_FLATC")
    if flatc:
        if not _is_executable(flatc):
            raise ToolchainError(f"ETRT_FLATC={flatc!r} is not an executable file")
    else:
        for root in roots:
            cand = root / "data" / "bin" / "flatc"
            if _is_executable(str(cand)):
                flatc = str(cand)
                break
        else:
            flatc = shutil.which("flatc")
    if not flatc:
        raise ToolchainError(
            "flatc not found: set ETRT_FLATC, install the executorch wheel into this "
            f"interpreter ({sys.executable}), or put flatc on PATH")

    schema_dir = os.environ.get("ETRT_EXECUTORCH_SCHEMA_DIR")
    if schema_dir:
        missing = [f for f in _SCHEMA_FILES if not os.path.isfile(os.path.join(schema_dir, f))]
        if missing:
            raise ToolchainError(
                f"ETRT_EXECUTORCH_SCHEMA_DIR={schema_dir!r} lacks {', '.join(missing)}")
    else:
        for root in roots:
            cand = root / "exir" / "_serialize"
            if all((cand / f).is_file() for f in _SCHEMA_FILES):
                schema_dir = str(cand)
                break
    if not schema_dir:
        raise ToolchainError(
            "ExecuTorch schema (program.fbs, scalar_type.fbs) not found: set "
            "ETRT_EXECUTORCH_SCHEMA_DIR or install the executorch wheel into this "
            f"interpreter ({sys.executable})")
    return Toolchain(flatc=flatc, schema_dir=schema_dir)


def _run_flatc(toolchain: Toolchain, args: Sequence[str], what: str, timeout: float = 900) -> None:
    try:
        proc = subprocess.run([toolchain.flatc, *args], capture_output=True, timeout=timeout)
    except OSError as e:
        raise ToolchainError(f"cannot run flatc ({toolchain.flatc}): {e}") from e
    except subprocess.TimeoutExpired as e:
        raise ToolchainError(f"flatc timed out after {timeout:.0f}s while {what}") from e
    if proc.returncode != 0:
        out = (proc.stderr or b"") + (proc.stdout or b"")
        # flatc prints its whole usage text before the error; keep the tail.
        text = out.decode(errors="replace").strip()
        if "error:" in text:
            text = text[text.rindex("error:"):]
        sig = f" (signal {-proc.returncode})" if proc.returncode < 0 else ""
        raise ToolchainError(f"flatc failed{sig} while {what}: {text[-2000:]}")


# --------------------------------------------------------------------------
# A small reader of flatbuffer schemas (the subset program.fbs uses) and a
# verifier of flatbuffer data driven by it, so that flatc never sees a buffer
# it could crash on.
# --------------------------------------------------------------------------

_SCALAR_SIZES = {
    "bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
    "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
    "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
    "long": 8, "ulong": 8, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

# Type descriptors: ("scalar", base) ("enum", name) ("string",) ("table", name)
# ("struct", name) ("union", name) ("vector", elem)
_Type = Tuple[Any, ...]


@dataclass
class _FbsField:
    name: str
    type: _Type
    slot: int  # vtable slot; a union uses slot-1 for its _type byte
    deprecated: bool = False


@dataclass
class _FbsSchema:
    tables: Dict[str, List[_FbsField]] = field(default_factory=dict)
    structs: Dict[str, Tuple[int, int, List[Tuple[str, _Type]]]] = field(default_factory=dict)
    enums: Dict[str, Tuple[str, Dict[str, int]]] = field(default_factory=dict)
    unions: Dict[str, List[str]] = field(default_factory=dict)
    root_type: Optional[str] = None
    file_identifier: Optional[bytes] = None
    max_force_align: int = 1
    delegate_alignment: Optional[int] = None


_TOKEN_RE = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.]*|-?[0-9][0-9A-Za-z_.+-]*|[{}\[\]():;,=]',
    re.S)


def _tokenize(text: str, where: str) -> List[str]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise ToolchainError(f"cannot parse schema {where} near {text[pos:pos + 30]!r}")
        tok = m.group(0)
        pos = m.end()
        if tok[0].isspace() or tok.startswith("//") or tok.startswith("/*"):
            continue
        out.append(tok)
    return out


class _FbsParser:
    def __init__(self) -> None:
        self.schema = _FbsSchema()
        self._raw_tables: Dict[str, List[Tuple[str, str, Dict[str, str]]]] = {}
        self._raw_structs: Dict[str, List[Tuple[str, str]]] = {}
        self._seen: set = set()

    def parse_file(self, path: str) -> None:
        path = os.path.abspath(path)
        if path in self._seen:
            return
        self._seen.add(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for line in text.splitlines():
            m = re.search(r"force_align\s*:\s*(\d+)", line)
            if m:
                self.schema.max_force_align = max(self.schema.max_force_align, int(m.group(1)))
                if "@executorch-delegate-alignment" in line:
                    self.schema.delegate_alignment = int(m.group(1))
        toks = _tokenize(text, path)
        i = 0

        def expect(t: str) -> None:
            nonlocal i
            if i >= len(toks) or toks[i] != t:
                got = toks[i] if i < len(toks) else "<eof>"
                raise ToolchainError(f"schema {path}: expected {t!r}, got {got!r}")
            i += 1

        def metadata() -> Dict[str, str]:
            nonlocal i
            meta: Dict[str, str] = {}
            if i < len(toks) and toks[i] == "(":
                i += 1
                while toks[i] != ")":
                    key = toks[i]
                    i += 1
                    val = ""
                    if toks[i] == ":":
                        val = toks[i + 1].strip('"')
                        i += 2
                    meta[key] = val
                    if toks[i] == ",":
                        i += 1
                i += 1
            return meta

        while i < len(toks):
            kw = toks[i]
            i += 1
            if kw == "include":
                inc = toks[i].strip('"')
                i += 1
                expect(";")
                self.parse_file(os.path.join(os.path.dirname(path), inc))
            elif kw in ("namespace", "root_type", "file_extension", "attribute"):
                val = toks[i]
                i += 1
                expect(";")
                if kw == "root_type":
                    self.schema.root_type = val.split(".")[-1]
            elif kw == "file_identifier":
                self.schema.file_identifier = toks[i].strip('"').encode()
                i += 1
                expect(";")
            elif kw in ("table", "struct"):
                name = toks[i].split(".")[-1]
                i += 1
                metadata()
                expect("{")
                fields = []
                while toks[i] != "}":
                    fname = toks[i]
                    i += 1
                    expect(":")
                    if toks[i] == "[":
                        ftype = "[" + toks[i + 1].split(".")[-1]
                        i += 2
                        if toks[i] == ":":  # fixed-size array in a struct
                            raise ToolchainError(f"schema {path}: fixed arrays unsupported")
                        expect("]")
                    else:
                        ftype = toks[i].split(".")[-1]
                        i += 1
                    if toks[i] == "=":
                        i += 2
                    meta = metadata()
                    expect(";")
                    fields.append((fname, ftype, meta))
                if kw == "table":
                    self._raw_tables[name] = fields
                else:
                    self._raw_structs[name] = [(f, t) for f, t, _ in fields]
                i += 1
            elif kw == "enum":
                name = toks[i].split(".")[-1]
                i += 1
                expect(":")
                base = toks[i]
                i += 1
                metadata()
                expect("{")
                values: Dict[str, int] = {}
                nxt = 0
                while toks[i] != "}":
                    vname = toks[i]
                    i += 1
                    if toks[i] == "=":
                        nxt = int(toks[i + 1], 0)
                        i += 2
                    values[vname] = nxt
                    nxt += 1
                    if toks[i] == ",":
                        i += 1
                i += 1
                self.schema.enums[name] = (base, values)
            elif kw == "union":
                name = toks[i].split(".")[-1]
                i += 1
                metadata()
                expect("{")
                members = []
                while toks[i] != "}":
                    members.append(toks[i].split(".")[-1])
                    i += 1
                    if toks[i] == ":":
                        raise ToolchainError(f"schema {path}: aliased union members unsupported")
                    if toks[i] == ",":
                        i += 1
                i += 1
                self.schema.unions[name] = members
            elif kw == ";":
                continue
            else:
                raise ToolchainError(f"schema {path}: unsupported declaration {kw!r}")

    def _resolve(self, tname: str) -> _Type:
        if tname.startswith("["):
            return ("vector", self._resolve(tname[1:]))
        if tname in _SCALAR_SIZES:
            return ("scalar", tname)
        if tname == "string":
            return ("string",)
        if tname in self.schema.enums:
            return ("enum", tname)
        if tname in self.schema.unions:
            return ("union", tname)
        if tname in self._raw_tables:
            return ("table", tname)
        if tname in self._raw_structs:
            return ("struct", tname)
        raise ToolchainError(f"schema: unknown type {tname!r}")

    def finish(self) -> _FbsSchema:
        s = self.schema
        for sname in self._raw_structs:
            self._layout_struct(sname)
        for tname, fields in self._raw_tables.items():
            out: List[_FbsField] = []
            slot = 0
            explicit = any("id" in meta for _, _, meta in fields)
            for fname, ftype, meta in fields:
                t = self._resolve(ftype)
                if explicit:
                    slot = int(meta["id"])
                elif t[0] == "union":
                    slot += 1  # the implicit <name>_type byte comes first
                out.append(_FbsField(fname, t, slot, "deprecated" in meta))
                slot += 1
            s.tables[tname] = out
        if s.root_type is None or s.root_type not in s.tables:
            raise ToolchainError("schema: missing root_type")
        return s

    def _layout_struct(self, name: str) -> Tuple[int, int]:
        if name in self.schema.structs:
            size, align, _ = self.schema.structs[name]
            return size, align
        size, align, fields = 0, 1, []
        for fname, ftype in self._raw_structs[name]:
            t = self._resolve(ftype)
            if t[0] == "scalar":
                fs = fa = _SCALAR_SIZES[t[1]]
            elif t[0] == "enum":
                fs = fa = _SCALAR_SIZES[self.schema.enums[t[1]][0]]
            elif t[0] == "struct":
                fs, fa = self._layout_struct(t[1])
            else:
                raise ToolchainError(f"schema: struct {name} has non-inline field {fname}")
            size = (size + fa - 1) // fa * fa + fs
            align = max(align, fa)
            fields.append((fname, t))
        size = (size + align - 1) // align * align
        self.schema.structs[name] = (size, align, fields)
        return size, align


_SCHEMA_CACHE: Dict[str, _FbsSchema] = {}


def _load_schema(toolchain: Toolchain) -> _FbsSchema:
    key = os.path.abspath(toolchain.program_fbs)
    if key not in _SCHEMA_CACHE:
        p = _FbsParser()
        p.parse_file(toolchain.program_fbs)
        _SCHEMA_CACHE[key] = p.finish()
    return _SCHEMA_CACHE[key]


#: [ubyte] fields that are opaque bytes (returned as ``bytes`` by read_pte).
_BYTES_FIELDS = {
    ("BackendDelegateInlineData", "data"),
    ("Buffer", "storage"),
    ("CompileSpec", "value"),
}


class _Verifier:
    """Checks every offset in a flatbuffer against the schema (like
    flatbuffers::Verifier) and records where the opaque byte vectors are."""

    MAX_DEPTH = 64
    MAX_TABLES = 1_000_000

    def __init__(self, buf: memoryview, schema: _FbsSchema) -> None:
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
        if off == 0 or off > _INT32_MAX:
            self.fail(f"bad offset {off} to {what}", path)
        return p + off

    def verify(self) -> None:
        self.need(0, 8, 4, (), "flatbuffer header")
        root = self.u32(0)
        self.table(root, self.schema.root_type, (), 0)

    def scalar_size(self, t: _Type) -> int:
        if t[0] == "scalar":
            return _SCALAR_SIZES[t[1]]
        if t[0] == "enum":
            return _SCALAR_SIZES[self.schema.enums[t[1]][0]]
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
                            (tname, f.name) in _BYTES_FIELDS)

    _FORMATS = {1: "b", 2: "h", 4: "i", 8: "q"}

    def enum_value(self, p: int, ename: str, path: Tuple[Any, ...]) -> None:
        # flatc --strict-json refuses to print a value the enum does not name.
        base, values = self.schema.enums[ename]
        fmt = self._FORMATS[_SCALAR_SIZES[base]]
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

    def vector(self, v: int, elem: _Type, path: Tuple[Any, ...], depth: int, is_bytes: bool) -> None:
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


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


def _le(data: bytes, off: int, size: int) -> int:
    return int.from_bytes(data[off:off + size], "little")


def _parse_header(data: bytes, identifier: bytes) -> Tuple[int, Optional[Dict[str, int]]]:
    """Returns (program_size, extended header or None) after checking the
    identifier and the extended header against the data length."""
    if len(data) < 8:
        raise PteError(f"not a .pte: {len(data)} bytes is too short for a flatbuffer header")
    ident = bytes(data[4:8])
    if ident != identifier:
        if ident[:2] == b"ET":
            raise PteError(
                f"unsupported .pte schema version: file identifier {ident!r}, "
                f"this reader's schema expects {identifier!r}")
        raise PteError(f"not a .pte: file identifier {ident!r} is not {identifier!r}")
    eh = None
    program_size = len(data)
    if bytes(data[EXTENDED_HEADER_OFFSET:EXTENDED_HEADER_OFFSET + 4]) == EXTENDED_HEADER_MAGIC:
        h = EXTENDED_HEADER_OFFSET
        if len(data) < h + EXTENDED_HEADER_MIN_LENGTH:
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
        if program_size > len(data):
            raise PteError(
                f"truncated .pte: the extended header says the program is {program_size} bytes, "
                f"the file has {len(data)}")
        base = eh["segment_base_offset"]
        if base and base < program_size:
            raise PteError(f"corrupt .pte: segment_base_offset {base} < program_size {program_size}")
        expected = base + eh["segment_data_size"] if base else program_size
        if expected > len(data):
            raise PteError(
                f"truncated .pte: the extended header says the file is {expected} bytes, "
                f"it has {len(data)}")
    return program_size, eh


def verify_pte_bytes(data: bytes, toolchain: Optional[Toolchain] = None) -> Dict[str, Any]:
    """Checks header, extended header and the whole flatbuffer of a .pte.

    Returns ``{"program_size", "extended_header"}``. Raises PteError.
    Needs only the schema (not flatc) from the toolchain.
    """
    tc = toolchain or find_toolchain()
    schema = _load_schema(tc)
    program_size, eh = _parse_header(data, schema.file_identifier or FILE_IDENTIFIER)
    _Verifier(memoryview(data)[:program_size], schema).verify()
    return {"program_size": program_size, "extended_header": eh}


_NONFINITE_LINE = re.compile(r'^(\s*(?:"[A-Za-z0-9_]+"\s*:\s*)?)(-?)(inf|nan)(\s*,?\s*)$', re.M)


def _decode_json(text: str) -> Any:
    def repl(m: "re.Match[str]") -> str:
        tok = "NaN" if m.group(3) == "nan" else m.group(2) + "Infinity"
        return m.group(1) + tok + m.group(4)

    return json.loads(_NONFINITE_LINE.sub(repl, text))


def _set_path(obj: Any, path: Sequence[Any], value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def read_pte(source: Union[str, os.PathLike, bytes, bytearray, memoryview],
             toolchain: Optional[Toolchain] = None) -> Dict[str, Any]:
    """Decodes a .pte into the schema's JSON (via flatc) plus what flatc
    cannot see (headers, segments).

    ``source`` is a path or the file's bytes. Returns::

        {
          "path": str | None, "file_size": int, "identifier": "ET12",
          "extended_header": None | {"length", "program_size",
                                     "segment_base_offset", "segment_data_size"},
          "program": {...},   # flatc --json --strict-json --defaults-json output;
                              # BackendDelegateInlineData.data, Buffer.storage and
                              # CompileSpec.value are ``bytes``
          "delegates": [{"method", "method_index", "delegate_index", "id",
                         "location": "INLINE" | "SEGMENT", "index",
                         "data": bytes, "compile_specs": {key: bytes}}],
        }

    Raises PteError for anything that is not a well-formed .pte (wrong
    identifier, truncated, offsets out of range, segment out of range),
    ToolchainError if flatc/schema are missing, OSError if unreadable.
    """
    path: Optional[str] = None
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    else:
        path = os.fspath(source)
        with open(path, "rb") as f:
            data = f.read()
    tc = toolchain or find_toolchain()
    schema = _load_schema(tc)
    identifier = schema.file_identifier or FILE_IDENTIFIER
    program_size, eh = _parse_header(data, identifier)
    ver = _Verifier(memoryview(data)[:program_size], schema)
    ver.verify()

    # flatc prints [ubyte] one number per line; hand it a copy in which the
    # opaque byte vectors are empty and put their bytes back afterwards.
    patched = bytearray(data[:program_size])
    blobs = []
    for vpath, len_pos, start, n in ver.byte_vectors:
        blobs.append((vpath, bytes(data[start:start + n])))
        if n:
            patched[len_pos:len_pos + 4] = b"\0\0\0\0"
    with tempfile.TemporaryDirectory(prefix="etrt-pte-") as tmp:
        bin_path = os.path.join(tmp, "program.bin")
        with open(bin_path, "wb") as f:
            f.write(patched)
        _run_flatc(tc, ["--json", "--raw-binary", "--strict-json", "--defaults-json",
                        "-o", tmp, tc.program_fbs, "--", bin_path], "decoding the program")
        with open(os.path.join(tmp, "program.json"), encoding="utf-8") as f:
            program = _decode_json(f.read())
    for vpath, blob in blobs:
        _set_path(program, vpath, blob)

    segments = program.get("segments") or []
    delegates = []
    for mi, plan in enumerate(program.get("execution_plan") or []):
        for di, d in enumerate(plan.get("delegates") or []):
            ref = d.get("processed") or {}
            loc, idx = ref.get("location", "INLINE"), ref.get("index", 0)
            where = f"method {plan.get('name')!r} delegate {di} ({d.get('id')!r})"
            if loc == "INLINE":
                inline = program.get("backend_delegate_data") or []
                if idx >= len(inline):
                    raise PteError(f"corrupt .pte: {where} refers to inline data {idx}, "
                                   f"the program has {len(inline)}")
                blob = inline[idx].get("data", b"")
            elif loc == "SEGMENT":
                if eh is None or not eh["segment_base_offset"]:
                    raise PteError(f"corrupt .pte: {where} is stored in segment {idx} "
                                   "but the file has no segment data (no extended header)")
                if idx >= len(segments):
                    raise PteError(f"corrupt .pte: {where} refers to segment {idx}, "
                                   f"the program has {len(segments)}")
                seg = segments[idx]
                start = eh["segment_base_offset"] + seg["offset"]
                if start + seg["size"] > len(data):
                    raise PteError(f"truncated .pte: segment {idx} of {where} ends at byte "
                                   f"{start + seg['size']}, the file has {len(data)}")
                blob = data[start:start + seg["size"]]
            else:
                raise PteError(f"corrupt .pte: {where} has unknown data location {loc!r}")
            delegates.append({
                "method": plan.get("name"),
                "method_index": mi,
                "delegate_index": di,
                "id": d.get("id"),
                "location": loc,
                "index": idx,
                "data": blob,
                "compile_specs": {c.get("key"): c.get("value", b"")
                                  for c in (d.get("compile_specs") or [])},
            })
    return {
        "path": path,
        "file_size": len(data),
        "identifier": identifier.decode(),
        "extended_header": eh,
        "program": program,
        "delegates": delegates,
    }


def describe_value(value: Mapping[str, Any]) -> Dict[str, Any]:
    """Summarizes one decoded ``EValue`` (an entry of ``execution_plan[i].values``).

    Tensors: ``{"kind": "tensor", "dtype", "scalar_type", "sizes",
    "dim_order", "dynamism", "planned", "memory_id", "offset", "nbytes",
    "constant"}`` (``nbytes`` at the upper-bound sizes, None for an unknown
    dtype). Others: ``{"kind": "int"|"bool"|"double"|"none"|..., "value"}``.
    """
    vtype = value.get("val_type", "NONE")
    val = value.get("val") or {}
    if vtype == "Tensor":
        st = val.get("scalar_type")
        dtype = _SCALAR_TYPE_TO_DTYPE.get(st)
        sizes = list(val.get("sizes") or [])
        alloc = val.get("allocation_info")
        nbytes = None
        if dtype is not None:
            nbytes = DTYPES[dtype][1] * math.prod(sizes)
        return {
            "kind": "tensor",
            "dtype": dtype,
            "scalar_type": st,
            "sizes": sizes,
            "dim_order": list(val.get("dim_order") or []),
            "dynamism": val.get("shape_dynamism", "STATIC"),
            "planned": alloc is not None,
            "memory_id": alloc.get("memory_id") if alloc else None,
            "offset": (alloc.get("memory_offset_low", 0) | (alloc.get("memory_offset_high", 0) << 32))
            if alloc else None,
            "nbytes": nbytes,
            "constant": alloc is None and val.get("data_buffer_idx", 0) > 0,
        }
    simple = {"Int": ("int", "int_val"), "Bool": ("bool", "bool_val"),
              "Double": ("double", "double_val"), "String": ("string", "string_val")}
    if vtype in simple:
        kind, key = simple[vtype]
        return {"kind": kind, "value": val.get(key)}
    if vtype in ("NONE", "Null"):
        return {"kind": "none", "value": None}
    return {"kind": vtype, "value": val}


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _dtype(name: str) -> str:
    key = str(name).lower()
    if key.startswith("torch."):
        key = key[6:]
    key = _DTYPE_ALIASES.get(key, key)
    if key not in DTYPES:
        raise PteError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}")
    return key


def _as_bytes(v: Any, what: str) -> bytes:
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    raise PteError(f"{what} must be bytes or str, not {type(v).__name__}")


@dataclass
class _Value:
    name: str
    kind: str  # tensor | int | bool | double
    dtype: Optional[str] = None
    sizes: Tuple[int, ...] = ()
    dynamic: bool = False
    dim_order: Tuple[int, ...] = ()
    planned: bool = True
    scalar: Any = None

    @property
    def nbytes(self) -> int:
        assert self.dtype is not None
        return DTYPES[self.dtype][1] * math.prod(self.sizes)


@dataclass
class _DelegateCall:
    backend_id: str
    blob: bytes
    args: List[str]
    compile_specs: List[Tuple[str, bytes]]


class Method:
    """One ExecutionPlan: values, inputs/outputs and delegate calls in order.

    Created by :meth:`Program.method`. Names are local to the method and are
    not stored in the .pte (the format has no value names).
    """

    def __init__(self, name: str, inputs: Optional[Sequence[str]] = None,
                 outputs: Optional[Sequence[str]] = None) -> None:
        if not name or not isinstance(name, str):
            raise PteError("a method needs a non-empty name")
        self.name = name
        self.inputs: List[str] = list(inputs or [])
        self.outputs: List[str] = list(outputs or [])
        self._values: Dict[str, _Value] = {}
        self._calls: List[_DelegateCall] = []

    # -- values ----------------------------------------------------------
    def _add(self, v: _Value) -> str:
        if not v.name or not isinstance(v.name, str):
            raise PteError(f"method {self.name!r}: a value needs a non-empty string name")
        if v.name in self._values:
            raise PteError(f"method {self.name!r}: value {v.name!r} is defined twice")
        self._values[v.name] = v
        return v.name

    def tensor(self, name: str, dtype: str, sizes: Sequence[int], dynamic: bool = False,
               *, dim_order: Optional[Sequence[int]] = None, planned: bool = True) -> str:
        """Declares a tensor. ``sizes`` is the shape, or its upper bound when
        ``dynamic`` (serialized as DYNAMIC_BOUND). ``planned=False`` leaves it
        without a planned slot: the runtime then shares the caller's memory
        for an input, and an output needs ``Module::set_output``."""
        dt = _dtype(dtype)
        try:
            sz = tuple(int(s) for s in sizes)
        except (TypeError, ValueError):
            raise PteError(f"method {self.name!r}: tensor {name!r} sizes must be integers: {sizes!r}")
        if len(sz) > MAX_RANK:
            raise PteError(f"method {self.name!r}: tensor {name!r} has rank {len(sz)} > {MAX_RANK}")
        for s in sz:
            if s < 0 or s > _INT32_MAX:
                raise PteError(f"method {self.name!r}: tensor {name!r} size {s} outside 0..{_INT32_MAX}")
        order = tuple(range(len(sz))) if dim_order is None else tuple(int(d) for d in dim_order)
        if sorted(order) != list(range(len(sz))):
            raise PteError(f"method {self.name!r}: tensor {name!r} dim_order {list(order)} "
                           f"is not a permutation of 0..{len(sz) - 1}")
        return self._add(_Value(name, "tensor", dtype=dt, sizes=sz, dynamic=bool(dynamic),
                                dim_order=order, planned=bool(planned)))

    def int_value(self, name: str, value: int) -> str:
        """Declares an Int EValue (e.g. a SymInt argument to a delegate). As a
        method input, the runtime requires callers to pass this same value."""
        if isinstance(value, bool) or not isinstance(value, int) or not -2**63 <= value < 2**63:
            raise PteError(f"method {self.name!r}: int value {name!r} must be a 64-bit int")
        return self._add(_Value(name, "int", scalar=value))

    def bool_value(self, name: str, value: bool) -> str:
        return self._add(_Value(name, "bool", scalar=bool(value)))

    def double_value(self, name: str, value: float) -> str:
        return self._add(_Value(name, "double", scalar=float(value)))

    def set_io(self, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        self.inputs, self.outputs = list(inputs), list(outputs)

    # -- instructions ----------------------------------------------------
    def delegate_call(self, backend_id: str, blob: Union[bytes, bytearray, memoryview],
                      args: Sequence[str],
                      compile_specs: Optional[Union[Mapping[str, Any], Iterable[Tuple[str, Any]]]] = None
                      ) -> int:
        """Appends a BackendDelegate and a DelegateCall instruction. ``args``
        are value names, inputs first then outputs, as the backend expects
        them. Returns the delegate's index in this method."""
        if not backend_id or not isinstance(backend_id, str):
            raise PteError(f"method {self.name!r}: delegate_call needs a backend id")
        if not isinstance(blob, (bytes, bytearray, memoryview)):
            raise PteError(f"method {self.name!r}: the blob for {backend_id!r} must be bytes")
        items = compile_specs.items() if isinstance(compile_specs, Mapping) else (compile_specs or [])
        specs = []
        for key, val in items:
            if not key or not isinstance(key, str):
                raise PteError(f"method {self.name!r}: compile spec keys must be non-empty strings")
            specs.append((key, _as_bytes(val, f"compile spec {key!r}")))
        self._calls.append(_DelegateCall(backend_id, bytes(blob), [str(a) for a in args], specs))
        return len(self._calls) - 1

    # -- checks and layout ------------------------------------------------
    def _check(self) -> None:
        where = f"method {self.name!r}"
        for role, names in (("input", self.inputs), ("output", self.outputs)):
            for n in names:
                if n not in self._values:
                    raise PteError(f"{where}: {role} {n!r} is not a declared value")
        if len(set(self.inputs)) != len(self.inputs):
            raise PteError(f"{where}: an input is listed twice: {self.inputs}")
        for i, c in enumerate(self._calls):
            for a in c.args:
                if a not in self._values:
                    raise PteError(f"{where}: delegate call {i} ({c.backend_id}) argument {a!r} "
                                   "is not a declared value")

    def memory_plan(self) -> Tuple[Dict[str, Tuple[int, int]], int]:
        """({tensor name: (offset, nbytes)}, buffer size) of planned buffer 1:
        every planned tensor at its upper-bound size, 16-byte aligned, in
        declaration order, no sharing."""
        plan: Dict[str, Tuple[int, int]] = {}
        cursor = 0
        for v in self._values.values():
            if v.kind == "tensor" and v.planned:
                cursor = _align(cursor, PLANNED_TENSOR_ALIGNMENT)
                plan[v.name] = (cursor, v.nbytes)
                cursor += v.nbytes
        return plan, _align(cursor, PLANNED_TENSOR_ALIGNMENT)

    def _to_json(self, delegate_refs: Sequence[Tuple[str, int]]) -> Dict[str, Any]:
        index = {n: i for i, n in enumerate(self._values)}
        plan, total = self.memory_plan()
        values = []
        for v in self._values.values():
            if v.kind == "tensor":
                t: Dict[str, Any] = {
                    "scalar_type": DTYPES[v.dtype][0],  # type: ignore[index]
                    "storage_offset": 0,
                    "sizes": list(v.sizes),
                    "dim_order": list(v.dim_order),
                    "requires_grad": False,
                    "data_buffer_idx": 0,
                    "layout": 0,
                    "shape_dynamism": "DYNAMIC_BOUND" if v.dynamic else "STATIC",
                }
                if v.name in plan:
                    off = plan[v.name][0]
                    t["allocation_info"] = {
                        "memory_id": PLANNED_MEMORY_ID,
                        "memory_offset_low": off & 0xFFFFFFFF,
                        "memory_offset_high": off >> 32,
                    }
                values.append({"val_type": "Tensor", "val": t})
            elif v.kind == "int":
                values.append({"val_type": "Int", "val": {"int_val": v.scalar}})
            elif v.kind == "bool":
                values.append({"val_type": "Bool", "val": {"bool_val": v.scalar}})
            else:
                d = v.scalar
                if not math.isfinite(d):
                    d = "nan" if math.isnan(d) else ("inf" if d > 0 else "-inf")
                values.append({"val_type": "Double", "val": {"double_val": d}})
        inputs = [index[n] for n in self.inputs]
        outputs = [index[n] for n in self.outputs]
        delegates, instructions = [], []
        for i, (c, (loc, ref)) in enumerate(zip(self._calls, delegate_refs)):
            delegates.append({
                "id": c.backend_id,
                "processed": {"location": loc, "index": ref},
                "compile_specs": [{"key": k, "value": list(v)} for k, v in c.compile_specs],
            })
            instructions.append({"instr_args_type": "DelegateCall",
                                 "instr_args": {"delegate_index": i,
                                                "args": [index[a] for a in c.args]}})
        n_in, n_out = len(inputs), len(outputs)
        # pytree specs as EXIR writes them: ((x, ...), {}) in, tuple/leaf out.
        inp_spec = f"T2#{n_in}#0(T{n_in}{'#1' * n_in}({','.join('$' * n_in)}),D0())"
        out_spec = "$" if n_out == 1 else f"T{n_out}{'#1' * n_out}({','.join('$' * n_out)})"
        return {
            "name": self.name,
            "container_meta_type": {"encoded_inp_str": inp_spec, "encoded_out_str": out_spec},
            "values": values,
            "inputs": inputs,
            "outputs": outputs,
            "chains": [{"inputs": inputs, "outputs": outputs, "instructions": instructions}],
            "operators": [],
            "delegates": delegates,
            "non_const_buffer_sizes": [0, total] if plan else [0],
        }


_STORAGES = ("segment", "inline")



_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where the OS allows
    (Linux's /proc/self/status); elsewhere set and restored under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_atomic(path: Union[str, os.PathLike], data: bytes) -> None:
    """Writes ``data`` to ``path`` through a temporary file in the same folder
    and a rename, so a reader never sees a half-written ``.pte``. The file gets
    the mode a plain ``open(path, "w")`` would give a new file, 0666 minus the
    umask (the temporary file's own 0600 is not kept, nor the mode of a file
    it replaces)."""
    parent = os.path.dirname(os.path.abspath(os.fspath(path)))
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".etrt-", suffix=".pte", dir=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

class Program:
    """Builds a .pte holding one or more methods made of delegate calls.

    ``delegate_storage``: ``"segment"`` (default; blobs follow the flatbuffer,
    128-byte aligned, behind an ``eh00`` extended header; good for large
    engines) or ``"inline"`` (blobs in Program.backend_delegate_data,
    ``delegate_alignment``-byte aligned, default 16 from the schema; blobs go
    through flatc's JSON, so keep them small). Identical blobs are stored once.

    The value/call helpers on Program (``tensor``, ``int_value``,
    ``delegate_call``, ...) act on the most recently created method, creating
    ``"forward"`` first if there is none.
    """

    def __init__(self, delegate_storage: str = "segment", *,
                 delegate_alignment: Optional[int] = None,
                 segment_alignment: int = SEGMENT_ALIGNMENT) -> None:
        if delegate_storage not in _STORAGES:
            raise PteError(f"delegate_storage must be one of {_STORAGES}, not {delegate_storage!r}")
        for what, a in (("delegate_alignment", delegate_alignment), ("segment_alignment", segment_alignment)):
            if a is not None and (not isinstance(a, int) or a <= 0 or a & (a - 1)):
                raise PteError(f"{what} must be a power of two, not {a!r}")
        self.delegate_storage = delegate_storage
        self.delegate_alignment = delegate_alignment
        self.segment_alignment = segment_alignment
        self.methods: List[Method] = []

    def method(self, name: str, inputs: Optional[Sequence[str]] = None,
               outputs: Optional[Sequence[str]] = None) -> Method:
        if any(m.name == name for m in self.methods):
            raise PteError(f"method {name!r} is defined twice")
        m = Method(name, inputs, outputs)
        self.methods.append(m)
        return m

    def _current(self) -> Method:
        return self.methods[-1] if self.methods else self.method("forward")

    def tensor(self, name: str, dtype: str, sizes: Sequence[int], dynamic: bool = False, **kw: Any) -> str:
        return self._current().tensor(name, dtype, sizes, dynamic, **kw)

    def int_value(self, name: str, value: int) -> str:
        return self._current().int_value(name, value)

    def delegate_call(self, backend_id: str, blob: bytes, args: Sequence[str],
                      compile_specs: Optional[Mapping[str, Any]] = None) -> int:
        return self._current().delegate_call(backend_id, blob, args, compile_specs)

    def set_io(self, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        self._current().set_io(inputs, outputs)

    # -- serialization ----------------------------------------------------
    def _layout(self) -> Tuple[Dict[str, Any], List[bytes], List[bytes]]:
        """Returns (program JSON, inline blobs, segment blobs)."""
        if not self.methods:
            raise PteError("a program needs at least one method")
        for m in self.methods:
            m._check()
        inline: List[bytes] = []
        seg_blobs: List[bytes] = []
        inline_idx: Dict[bytes, int] = {}
        seg_idx: Dict[bytes, int] = {}
        plans = []
        for m in self.methods:
            refs = []
            for c in m._calls:
                if self.delegate_storage == "segment" and c.blob:
                    if c.blob not in seg_idx:
                        seg_idx[c.blob] = len(seg_blobs)
                        seg_blobs.append(c.blob)
                    # segment 0 is the (empty) constant segment
                    refs.append(("SEGMENT", 1 + seg_idx[c.blob]))
                else:
                    if c.blob not in inline_idx:
                        inline_idx[c.blob] = len(inline)
                        inline.append(c.blob)
                    refs.append(("INLINE", inline_idx[c.blob]))
            plans.append(m._to_json(refs))
        segments = [{"offset": 0, "size": 0}]
        end = 0
        for b in seg_blobs:
            off = _align(end, self.segment_alignment)
            segments.append({"offset": off, "size": len(b)})
            end = off + len(b)
        program = {
            "version": SCHEMA_VERSION,
            "execution_plan": plans,
            "constant_buffer": [],
            "backend_delegate_data": [{"data": f"@@ETRT_INLINE_{i}@@"} for i in range(len(inline))],
            "segments": segments,
            # offsets[0] is the placeholder that non-constant tensors
            # (data_buffer_idx 0) point at; one entry = no constants.
            "constant_segment": {"segment_index": 0, "offsets": [0]},
        }
        return program, inline, seg_blobs

    def to_json(self) -> Dict[str, Any]:
        """The Program as flatc JSON (inline blobs as lists of ints)."""
        program, inline, _ = self._layout()
        for i, b in enumerate(inline):
            program["backend_delegate_data"][i]["data"] = list(b)
        return program

    def to_bytes(self, toolchain: Optional[Toolchain] = None) -> bytes:
        tc = toolchain or find_toolchain()
        schema = _load_schema(tc)
        program, inline, seg_blobs = self._layout()
        text = json.dumps(program, indent=None)
        for i, b in enumerate(inline):
            text = text.replace(f'"@@ETRT_INLINE_{i}@@"', "[" + ",".join(map(str, b)) + "]", 1)
        with tempfile.TemporaryDirectory(prefix="etrt-pte-") as tmp:
            schema_dir = os.path.join(tmp, "schema")
            os.mkdir(schema_dir)
            for name in _SCHEMA_FILES:
                with open(os.path.join(tc.schema_dir, name), encoding="utf-8") as f:
                    src = f.read()
                if self.delegate_alignment is not None:
                    src = "\n".join(
                        re.sub(r"\(\s*force_align\s*:\s*\d+\s*\)",
                               f"(force_align: {self.delegate_alignment})", line)
                        if "@executorch-delegate-alignment" in line else line
                        for line in src.splitlines())
                with open(os.path.join(schema_dir, name), "w", encoding="utf-8") as f:
                    f.write(src)
            json_path = os.path.join(tmp, "program.json")
            with open(json_path, "w", encoding="utf-8") as f:
                f.write(text)
            out_dir = os.path.join(tmp, "out")
            os.mkdir(out_dir)
            _run_flatc(tc, ["--binary", "-o", out_dir, os.path.join(schema_dir, "program.fbs"), json_path],
                       "encoding the program")
            produced = os.listdir(out_dir)
            if len(produced) != 1:
                raise ToolchainError(f"flatc produced {produced} instead of one binary")
            with open(os.path.join(out_dir, produced[0]), "rb") as f:
                fb = f.read()
        identifier = schema.file_identifier or FILE_IDENTIFIER
        if fb[4:8] != identifier:
            raise ToolchainError(f"flatc output has identifier {fb[4:8]!r}, expected {identifier!r}")
        if not seg_blobs:
            data = fb
        else:
            max_align = max(schema.max_force_align, self.delegate_alignment or 1)
            header_len = _align(EXTENDED_HEADER_LENGTH, max_align)
            program_size = len(fb) + header_len
            base = _align(program_size, self.segment_alignment)
            seg_data = bytearray()
            for b in seg_blobs:
                seg_data += b"\0" * (_align(len(seg_data), self.segment_alignment) - len(seg_data))
                seg_data += b
            header = (EXTENDED_HEADER_MAGIC + struct.pack("<IQQQ", EXTENDED_HEADER_LENGTH, program_size,
                                                          base, len(seg_data)))
            header += b"\0" * (header_len - len(header))
            root = struct.unpack_from("<I", fb, 0)[0]
            data = (struct.pack("<I", root + header_len) + fb[4:8] + header + fb[8:]
                    + b"\0" * (base - program_size) + bytes(seg_data))
        verify_pte_bytes(data, tc)  # self-check before anything is written
        return data

    def write(self, path: Union[str, os.PathLike], toolchain: Optional[Toolchain] = None) -> Dict[str, Any]:
        """Writes the .pte (atomically) and returns a summary:
        ``{"path", "size", "delegate_storage", "methods": {name:
        {"non_const_buffer_sizes", "tensors": {name: {"offset", "nbytes"}}}}}``."""
        data = self.to_bytes(toolchain)
        path = os.fspath(path)
        write_atomic(path, data)
        methods = {}
        for m in self.methods:
            plan, total = m.memory_plan()
            methods[m.name] = {
                "non_const_buffer_sizes": [0, total] if plan else [0],
                "tensors": {n: {"offset": o, "nbytes": b} for n, (o, b) in plan.items()},
            }
        return {"path": path, "size": len(data), "delegate_storage": self.delegate_storage,
                "methods": methods}


# --------------------------------------------------------------------------
# The JSON spec front door
# --------------------------------------------------------------------------


def _spec_blob(call: Mapping[str, Any], base: Path, where: str, deps: List[str]) -> bytes:
    keys = [k for k in ("blob_file", "blob_hex", "blob_text") if k in call]
    if len(keys) != 1:
        raise PteError(f"{where}: give exactly one of blob_file, blob_hex, blob_text")
    k = keys[0]
    if k == "blob_file":
        p = Path(call[k])
        if not p.is_absolute():
            p = base / p
        try:
            data = p.read_bytes()
        except OSError as e:
            raise PteError(f"{where}: cannot read blob_file {str(p)!r}: {e.strerror}") from e
        deps.append(str(p.resolve()))
        return data
    if k == "blob_hex":
        try:
            return bytes.fromhex(str(call[k]))
        except ValueError as e:
            raise PteError(f"{where}: blob_hex is not hex: {e}") from e
    return str(call[k]).encode("utf-8")


def _spec_compile_specs(specs: Any, where: str) -> List[Tuple[str, bytes]]:
    if specs is None:
        return []
    items = specs.items() if isinstance(specs, Mapping) else [(s.get("key"), s.get("value")) for s in specs]
    out = []
    for key, val in items:
        if isinstance(val, Mapping) and set(val) == {"hex"}:
            try:
                out.append((key, bytes.fromhex(val["hex"])))
            except ValueError as e:
                raise PteError(f"{where}: compile spec {key!r} hex: {e}") from e
        elif isinstance(val, str):
            out.append((key, val.encode("utf-8")))
        else:
            raise PteError(f"{where}: compile spec {key!r} must be a string or {{\"hex\": ...}}")
    return out


def program_from_spec(spec: Mapping[str, Any], base_dir: Union[str, os.PathLike] = ".",
                      deps: Optional[List[str]] = None) -> Program:
    """Builds a Program from a spec dict (format in docs/pte-packer.md).
    Relative ``blob_file`` paths are resolved against ``base_dir``; the files
    read are appended to ``deps``."""
    if not isinstance(spec, Mapping):
        raise PteError("the spec must be a JSON object")
    deps = deps if deps is not None else []
    base = Path(base_dir)
    known_top = {"delegate_storage", "delegate_alignment", "segment_alignment", "methods",
                 "name", "values", "inputs", "outputs", "delegate_calls", "comment"}
    unknown = set(spec) - known_top
    if unknown:
        raise PteError(f"spec: unknown keys {sorted(unknown)}")
    prog = Program(spec.get("delegate_storage", "segment"),
                   delegate_alignment=spec.get("delegate_alignment"),
                   segment_alignment=spec.get("segment_alignment", SEGMENT_ALIGNMENT))
    if "methods" in spec:
        if any(k in spec for k in ("values", "inputs", "outputs", "delegate_calls", "name")):
            raise PteError("spec: give either 'methods' or one method's keys at the top level, not both")
        methods = spec["methods"]
        if not isinstance(methods, list) or not methods:
            raise PteError("spec: 'methods' must be a non-empty list")
    else:
        methods = [{k: spec[k] for k in ("name", "values", "inputs", "outputs", "delegate_calls") if k in spec}]
    for mi, ms in enumerate(methods):
        if not isinstance(ms, Mapping):
            raise PteError(f"spec: methods[{mi}] must be an object")
        unknown = set(ms) - {"name", "values", "inputs", "outputs", "delegate_calls", "comment"}
        if unknown:
            raise PteError(f"spec: methods[{mi}] has unknown keys {sorted(unknown)}")
        m = prog.method(ms.get("name", "forward"), ms.get("inputs", []), ms.get("outputs", []))
        for vi, v in enumerate(ms.get("values", [])):
            where = f"spec: method {m.name!r} values[{vi}]"
            if not isinstance(v, Mapping) or "name" not in v:
                raise PteError(f"{where}: needs a 'name'")
            kind = v.get("type", "tensor")
            if kind == "tensor":
                unknown = set(v) - {"name", "type", "dtype", "sizes", "dynamic", "dim_order", "planned", "comment"}
                if unknown:
                    raise PteError(f"{where}: unknown keys {sorted(unknown)}")
                if "dtype" not in v or "sizes" not in v:
                    raise PteError(f"{where}: a tensor needs 'dtype' and 'sizes'")
                m.tensor(v["name"], v["dtype"], v["sizes"], bool(v.get("dynamic", False)),
                         dim_order=v.get("dim_order"), planned=bool(v.get("planned", True)))
            elif kind in ("int", "bool", "double"):
                if "value" not in v:
                    raise PteError(f"{where}: an {kind} needs a 'value'")
                getattr(m, f"{kind}_value")(v["name"], v["value"])
            else:
                raise PteError(f"{where}: unknown type {kind!r} (tensor, int, bool, double)")
        for ci, c in enumerate(ms.get("delegate_calls", [])):
            where = f"spec: method {m.name!r} delegate_calls[{ci}]"
            if not isinstance(c, Mapping):
                raise PteError(f"{where}: must be an object")
            unknown = set(c) - {"backend_id", "blob_file", "blob_hex", "blob_text", "args",
                                "compile_specs", "comment"}
            if unknown:
                raise PteError(f"{where}: unknown keys {sorted(unknown)}")
            if "backend_id" not in c:
                raise PteError(f"{where}: needs a 'backend_id'")
            m.delegate_call(c["backend_id"], _spec_blob(c, base, where, deps), c.get("args", []),
                            _spec_compile_specs(c.get("compile_specs"), where))
    return prog


def load_spec(path: Union[str, os.PathLike], deps: Optional[List[str]] = None) -> Program:
    """Reads a spec file; relative blob paths are relative to the spec's directory."""
    p = Path(path)
    try:
        spec = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise PteError(f"cannot read spec {str(p)!r}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise PteError(f"spec {str(p)!r} is not valid JSON: {e}") from e
    return program_from_spec(spec, p.parent, deps)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return {"bytes": len(obj), "sha256": hashlib.sha256(obj).hexdigest(),
                "head": obj[:16].hex()}
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


def _depfile_escape(p: str) -> str:
    return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m etrt.pte",
        description="Write a .pte from a JSON spec, or dump a .pte as JSON.")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--spec", help="JSON spec to pack (see docs/pte-packer.md)")
    g.add_argument("--dump", metavar="PTE", help="print a .pte as JSON (blobs summarized)")
    ap.add_argument("--out", help="output .pte (with --spec)")
    ap.add_argument("--delegate-storage", choices=_STORAGES,
                    help="override the spec's delegate_storage")
    ap.add_argument("--depfile", help="write a Makefile-style depfile (with --spec)")
    args = ap.parse_args(argv)
    try:
        if args.dump:
            info = read_pte(args.dump)
            json.dump(_jsonable(info), sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        if not args.out:
            ap.error("--spec needs --out")
        deps: List[str] = []
        prog = load_spec(args.spec, deps)
        if args.delegate_storage:
            prog.delegate_storage = args.delegate_storage
        prog.write(args.out)
        if args.depfile:
            with open(args.depfile, "w", encoding="utf-8") as f:
                f.write(_depfile_escape(os.path.abspath(args.out)) + ": "
                        + " ".join(_depfile_escape(d) for d in
                                   [str(Path(args.spec).resolve()), *deps]) + "\n")
        return 0
    except (PteError, ToolchainError, OSError) as e:
        print(f"etrt.pte: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
