"""A reader of flatbuffer schemas: the subset of the .fbs language that
ExecuTorch's program.fbs and scalar_type.fbs use.

It gives the verifier (:mod:`etrt.pte.verify`) every table's fields with
their vtable slots, every struct's layout, enum values and union members, so
that flatc never sees a buffer it could crash on; and it gives the writer the
schema's file identifier and alignments.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .toolchain import Toolchain, ToolchainError

__all__ = ["FbsField", "FbsSchema", "FbsType", "SCALAR_SIZES", "load_schema"]

SCALAR_SIZES = {
    "bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
    "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
    "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
    "long": 8, "ulong": 8, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

# Type descriptors: ("scalar", base) ("enum", name) ("string",) ("table", name)
# ("struct", name) ("union", name) ("vector", elem)
FbsType = Tuple[Any, ...]


@dataclass
class FbsField:
    name: str
    type: FbsType
    slot: int  # vtable slot; a union uses slot-1 for its _type byte
    deprecated: bool = False


@dataclass
class FbsSchema:
    tables: Dict[str, List[FbsField]] = field(default_factory=dict)
    structs: Dict[str, Tuple[int, int, List[Tuple[str, FbsType]]]] = field(default_factory=dict)
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
        self.schema = FbsSchema()
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

    def _resolve(self, tname: str) -> FbsType:
        if tname.startswith("["):
            return ("vector", self._resolve(tname[1:]))
        if tname in SCALAR_SIZES:
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

    def finish(self) -> FbsSchema:
        s = self.schema
        for sname in self._raw_structs:
            self._layout_struct(sname)
        for tname, fields in self._raw_tables.items():
            out: List[FbsField] = []
            slot = 0
            explicit = any("id" in meta for _, _, meta in fields)
            for fname, ftype, meta in fields:
                t = self._resolve(ftype)
                if explicit:
                    slot = int(meta["id"])
                elif t[0] == "union":
                    slot += 1  # the implicit <name>_type byte comes first
                out.append(FbsField(fname, t, slot, "deprecated" in meta))
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
                fs = fa = SCALAR_SIZES[t[1]]
            elif t[0] == "enum":
                fs = fa = SCALAR_SIZES[self.schema.enums[t[1]][0]]
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


_SCHEMA_CACHE: Dict[str, FbsSchema] = {}


def load_schema(toolchain: Toolchain) -> FbsSchema:
    """The parsed program.fbs of ``toolchain`` (parsed once per path)."""
    key = os.path.abspath(toolchain.program_fbs)
    if key not in _SCHEMA_CACHE:
        p = _FbsParser()
        p.parse_file(toolchain.program_fbs)
        _SCHEMA_CACHE[key] = p.finish()
    return _SCHEMA_CACHE[key]
