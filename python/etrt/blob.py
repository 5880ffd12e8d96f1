"""The TR01/TR02 blob a TensorRT delegate carries inside a ``.pte``.

Layout (little-endian), Torch-TensorRT's, so the files it exports load unchanged::

    0   magic[4]            b"TR01", or b"TR02" when aliased_io is non-empty
    4   u32 metadata_offset 32
    8   u32 metadata_size
    12  u32 engine_offset   16-byte aligned
    16  u64 engine_size
    24  reserved[8]         01 00 00 00 00 00 00 00 (ignored on read)
    32  compact JSON metadata, zero padding, then the serialized engine

etrt appends one optional metadata key, ``profile_signature``. This module and
the C++ reader/writer in ``src/blob/`` write the same bytes for the same
metadata and refuse the same blobs; ``tests/vectors/blob/`` pins both.
Pure Python: no PyTorch, no numpy, so it runs wherever an exporter does.
See ``docs/blob-format.md``.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "ALIAS_KINDS",
    "ALIAS_KIND_KV_CACHE_UPDATE",
    "ALIAS_KIND_USER",
    "AliasedIo",
    "BlobError",
    "ENGINE_ALIGNMENT",
    "HEADER_SIZE",
    "IoBinding",
    "MAGIC_TR01",
    "MAGIC_TR02",
    "Metadata",
    "ProfileBounds",
    "ProfileSignature",
    "SignatureInput",
    "SymbolicDim",
    "metadata_from_json",
    "metadata_to_json",
    "parse_blob",
    "validate_metadata",
    "write_blob",
]

MAGIC_TR01 = b"TR01"
MAGIC_TR02 = b"TR02"
HEADER_FORMAT = "<4sIIIQ8s"
HEADER_SIZE = struct.calcsize(HEADER_FORMAT)
ENGINE_ALIGNMENT = 16
# Upstream's writer puts 1 in the first reserved byte; mirrored so bytes match.
RESERVED = b"\x01" + b"\x00" * 7
# What upstream's readers give an aliased_io entry without "kind" (or with "").
ALIAS_KIND_KV_CACHE_UPDATE = "kv_cache_update"
# An output the exporter declares written into an input (not tracked by TensorRT).
ALIAS_KIND_USER = "user"
# The kinds the runtime accepts; the readers keep any other kind so tools can
# show it, and the runtime refuses the delegate at load.
ALIAS_KINDS = (ALIAS_KIND_KV_CACHE_UPDATE, ALIAS_KIND_USER)
# TensorRT's Dims holds at most 8 dimensions.
MAX_SIGNATURE_RANK = 8
# Upper limits (src/blob/metadata.h and blob.h, docs/limits.md): far above any
# real engine. The reader checks each count before it builds anything sized by
# it; validate_metadata holds written metadata to the same numbers.
MAX_METADATA_SIZE = 16 * 2**20
MAX_IO_BINDINGS = 16384  # io_bindings entries, and profile_signature.inputs
MAX_ALIASES = 16384
MAX_PROFILES = 256  # profile_signature.num_profiles
MAX_SYMBOLIC_DIMS = 8 * MAX_IO_BINDINGS
MAX_PROFILE_ENTRIES = 65536  # signature inputs x profiles, symbolic dims x profiles
MAX_NAME_LENGTH = 4096  # bytes of a binding name or dtype, alias output/input/kind, signature names

_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1
_RE_EXPORT = "; the .pte is truncated or corrupt, re-export the model"


class BlobError(ValueError):
    """A blob or metadata that etrt will not read; the message says why and what to do."""


@dataclass
class IoBinding:
    name: str
    dtype: str = ""  # informational; upstream often leaves it ""
    shape: List[int] = field(default_factory=list)  # informational; -1 marks a dynamic dim
    is_input: bool = True  # upstream's default


@dataclass
class AliasedIo:
    output: str
    input: str
    kind: str = ALIAS_KIND_KV_CACHE_UPDATE


@dataclass
class ProfileBounds:
    min: List[int]
    opt: List[int]
    max: List[int]


@dataclass
class SignatureInput:
    name: str
    profiles: List[ProfileBounds] = field(default_factory=list)  # one per profile index


@dataclass
class SymbolicDim:
    name: str
    input: str
    dim: int
    ranges: List[Tuple[int, int]] = field(default_factory=list)  # one [lo, hi] per profile index


@dataclass
class ProfileSignature:
    num_profiles: int = 1
    inputs: List[SignatureInput] = field(default_factory=list)
    symbolic_dims: List[SymbolicDim] = field(default_factory=list)


@dataclass
class Metadata:
    # The engine's IO tensors; inputs and outputs may interleave (see arguments()).
    # Empty: the runtime takes the engine's own IO tensors.
    io_bindings: List[IoBinding] = field(default_factory=list)
    aliased_io: List[AliasedIo] = field(default_factory=list)
    hardware_compatible: bool = False
    device_id: int = 0
    serialized_metadata: str = ""
    target_platform: str = ""
    profile_signature: Optional[ProfileSignature] = None

    @property
    def num_inputs(self) -> int:
        return sum(1 for b in self.io_bindings if b.is_input)

    @property
    def num_outputs(self) -> int:
        return len(self.io_bindings) - self.num_inputs

    def arguments(self) -> List[IoBinding]:
        """The bindings in the delegate's argument order: the inputs in their
        listed order, then the outputs in theirs."""
        return [b for b in self.io_bindings if b.is_input] + [b for b in self.io_bindings if not b.is_input]


# --------------------------------------------------------------------------
# Writing


def _signature_to_dict(sig: ProfileSignature) -> Dict[str, Any]:
    return {
        "num_profiles": sig.num_profiles,
        "inputs": [
            {
                "name": i.name,
                "profiles": [{"min": list(p.min), "opt": list(p.opt), "max": list(p.max)} for p in i.profiles],
            }
            for i in sig.inputs
        ],
        "symbolic_dims": [
            {"name": s.name, "input": s.input, "dim": s.dim, "ranges": [list(r) for r in s.ranges]}
            for s in sig.symbolic_dims
        ],
    }


def _metadata_to_dict(metadata: Metadata) -> Dict[str, Any]:
    # Key order is part of the format: upstream's C++ reader finds the scalar
    # keys after the arrays, and etrt's key comes last, only when present, so a
    # blob without a signature is byte-identical to what Torch-TensorRT writes.
    data: Dict[str, Any] = {
        "io_bindings": [
            {"name": b.name, "dtype": b.dtype, "shape": list(b.shape), "is_input": b.is_input}
            for b in metadata.io_bindings
        ],
        "aliased_io": [{"output": a.output, "input": a.input, "kind": a.kind} for a in metadata.aliased_io],
        "hardware_compatible": metadata.hardware_compatible,
        "device_id": metadata.device_id,
        "serialized_metadata": metadata.serialized_metadata,
        "target_platform": metadata.target_platform,
    }
    if metadata.profile_signature is not None:
        data["profile_signature"] = _signature_to_dict(metadata.profile_signature)
    return data


def validate_metadata(metadata: Metadata) -> None:
    """Raises BlobError for metadata the reader would refuse (the writer calls it)."""
    # Round-tripping through the reader's own decoder checks every type and
    # every rule with the reader's messages, so writer and reader cannot drift.
    try:
        data = _metadata_to_dict(metadata)
    except (AttributeError, TypeError) as e:
        raise BlobError(f"TensorRT blob: metadata is malformed ({e}); build it from etrt.blob's dataclasses") from e
    _Decoder().metadata(data)


def metadata_to_json(metadata: Metadata) -> bytes:
    """The compact JSON the blob embeds: ASCII only, non-ASCII as \\uXXXX escapes."""
    validate_metadata(metadata)
    return json.dumps(_metadata_to_dict(metadata), separators=(",", ":")).encode("ascii")


def write_blob(metadata: Metadata, engine_bytes: bytes) -> bytes:
    """Builds a blob; raises BlobError when the result would not parse back."""
    engine_bytes = bytes(engine_bytes)
    if not engine_bytes:
        raise BlobError("TensorRT blob: the engine is empty; pass the serialized TensorRT engine")
    metadata_json = metadata_to_json(metadata)
    engine_offset = (HEADER_SIZE + len(metadata_json) + ENGINE_ALIGNMENT - 1) // ENGINE_ALIGNMENT * ENGINE_ALIGNMENT
    if engine_offset > _U32_MAX:
        raise BlobError(
            f"TensorRT blob: metadata is {len(metadata_json)} bytes, too large for the header's 32-bit fields"
        )
    header = struct.pack(
        HEADER_FORMAT,
        MAGIC_TR02 if metadata.aliased_io else MAGIC_TR01,
        HEADER_SIZE,
        len(metadata_json),
        engine_offset,
        len(engine_bytes),
        RESERVED,
    )
    padding = b"\x00" * (engine_offset - HEADER_SIZE - len(metadata_json))
    return header + metadata_json + padding + engine_bytes


# --------------------------------------------------------------------------
# Reading


def _fail(message: str) -> BlobError:
    return BlobError("TensorRT blob: " + message)


def escape_name(name: str) -> str:
    r"""A name as messages quote it, as the C++ reader does: control
    characters and DEL as ``\xNN``, a backslash as ``\\``."""
    if all(0x20 <= ord(c) < 0x7F and c != "\\" for c in name):
        return name
    return "".join("\\\\" if c == "\\" else f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7F else c
                   for c in name)


def _quoted(name: str) -> str:
    return f"'{escape_name(name)}'"


def _too_many_entries(path: str, n: int, limit: int) -> BlobError:
    return _fail(f"metadata field '{path}' has {n} entries, above the limit of {limit}; re-export the model")


def _too_many_profile_entries(what: str, n: int, profiles: int) -> BlobError:
    return _fail(f"profile_signature has {n} {what} x {profiles} profiles = {n * profiles} entries, above the limit "
                 f"of {MAX_PROFILE_ENTRIES}; re-export the model")


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return "an unsupported value"


_MISSING = object()


class _Decoder:
    """Typed reads with the same paths, order and messages as src/blob/metadata_reader.cpp."""

    def wrong_type(self, path: str, expected: str, v: Any) -> BlobError:
        return _fail(f"metadata field '{path}' must be {expected}, got {_type_name(v)}; re-export the model")

    def get(self, obj: Dict[str, Any], key: str, prefix: str, read, default: Any = _MISSING) -> Any:
        if key not in obj:
            if default is _MISSING:
                raise _fail(f"metadata has no '{prefix}{key}'; re-export the model")
            return default() if callable(default) else default
        return read(obj[key], prefix + key)

    def string(self, v: Any, path: str) -> str:
        if not isinstance(v, str):
            raise self.wrong_type(path, "a string", v)
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate, which UTF-8 cannot carry
            raise _fail(f"{path} is not valid UTF-8; re-export the model") from None
        return v

    def boolean(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            raise self.wrong_type(path, "a boolean", v)
        return v

    def int64(self, v: Any, path: str) -> int:
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.wrong_type(path, "an integer", v)
        return self._in_range(v, path, _INT64, 64)

    def int32(self, v: Any, path: str) -> int:
        # 64-bit first, as the C++ reader narrows from int64_t.
        return self._in_range(self.int64(v, path), path, _INT32, 32)

    def _in_range(self, v: int, path: str, bounds: Tuple[int, int], bits: int) -> int:
        if not bounds[0] <= v <= bounds[1]:
            raise _fail(
                f"metadata field '{path}' is {v}, outside the range of a {bits}-bit signed integer; "
                "re-export the model"
            )
        return v

    def ints(self, v: Any, path: str) -> List[int]:
        if not isinstance(v, list):
            raise self.wrong_type(path, "an array", v)
        return [self.int64(x, f"{path}[{i}]") for i, x in enumerate(v)]

    def array(self, read, limit: Optional[int] = None):
        """Refuses more than ``limit`` entries before building any."""

        def read_array(v: Any, path: str) -> list:
            if not isinstance(v, list):
                raise self.wrong_type(path, "an array", v)
            if limit is not None and len(v) > limit:
                raise _too_many_entries(path, len(v), limit)
            return [read(x, f"{path}[{i}]") for i, x in enumerate(v)]

        return read_array

    # Entries of the signature's inputs and symbolic_dims arrays, for the table-size limits.
    signature_inputs = 0
    symbolic_dims = 0

    def per_profile(self, o: Dict[str, Any], key: str, prefix: str, rows: int, what: str, read) -> list:
        """A per-profile array (an input's profiles, a symbolic dim's ranges) of
        one of ``rows`` rows: at most MAX_PROFILES entries, and rows x entries
        at most MAX_PROFILE_ENTRIES, checked before anything is built for it."""
        if key not in o:
            raise _fail(f"metadata has no '{prefix}{key}'; re-export the model")
        v = o[key]
        if isinstance(v, list) and len(v) <= MAX_PROFILES and rows * len(v) > MAX_PROFILE_ENTRIES:
            raise _too_many_profile_entries(what, rows, len(v))
        return self.array(read, MAX_PROFILES)(v, prefix + key)

    def obj(self, v: Any, path: str) -> Dict[str, Any]:
        if not isinstance(v, dict):
            raise self.wrong_type(path, "an object", v)
        return v

    def binding(self, v: Any, path: str) -> IoBinding:
        o, p = self.obj(v, path), path + "."
        return IoBinding(
            name=self.get(o, "name", p, self.string),
            dtype=self.get(o, "dtype", p, self.string, ""),
            shape=self.get(o, "shape", p, self.ints, list),
            is_input=self.get(o, "is_input", p, self.boolean, True),
        )

    def alias(self, v: Any, path: str) -> AliasedIo:
        o, p = self.obj(v, path), path + "."
        output = self.get(o, "output", p, self.string)
        inp = self.get(o, "input", p, self.string)
        # Upstream's C++ reader treats an empty kind like a missing one. Any
        # other kind is kept as is, so tools can show it; the runtime accepts
        # only ALIAS_KINDS and refuses the delegate at load otherwise.
        kind = self.get(o, "kind", p, self.string, "") or ALIAS_KIND_KV_CACHE_UPDATE
        return AliasedIo(output=output, input=inp, kind=kind)

    def bounds(self, v: Any, path: str) -> ProfileBounds:
        o, p = self.obj(v, path), path + "."
        return ProfileBounds(
            min=self.get(o, "min", p, self.ints),
            opt=self.get(o, "opt", p, self.ints),
            max=self.get(o, "max", p, self.ints),
        )

    def signature_input(self, v: Any, path: str) -> SignatureInput:
        o, p = self.obj(v, path), path + "."
        return SignatureInput(
            name=self.get(o, "name", p, self.string),
            profiles=self.per_profile(o, "profiles", p, self.signature_inputs, "inputs", self.bounds),
        )

    def range_(self, v: Any, path: str) -> Tuple[int, int]:
        if not isinstance(v, list):
            raise self.wrong_type(path, "an array of two integers [lo, hi]", v)
        if len(v) != 2:
            raise _fail(
                f"metadata field '{path}' must be an array of two integers [lo, hi], got an array of {len(v)}; "
                "re-export the model"
            )
        return (self.int64(v[0], f"{path}[0]"), self.int64(v[1], f"{path}[1]"))

    def symbolic_dim(self, v: Any, path: str) -> SymbolicDim:
        o, p = self.obj(v, path), path + "."
        return SymbolicDim(
            name=self.get(o, "name", p, self.string),
            input=self.get(o, "input", p, self.string),
            dim=self.get(o, "dim", p, self.int32),
            ranges=self.per_profile(o, "ranges", p, self.symbolic_dims, "symbolic dims", self.range_),
        )

    def signature(self, v: Any, path: str) -> ProfileSignature:
        o, p = self.obj(v, path), path + "."
        self.signature_inputs = len(o["inputs"]) if isinstance(o.get("inputs"), list) else 0
        self.symbolic_dims = len(o["symbolic_dims"]) if isinstance(o.get("symbolic_dims"), list) else 0
        return ProfileSignature(
            num_profiles=self.get(o, "num_profiles", p, self.int32),
            inputs=self.get(o, "inputs", p, self.array(self.signature_input, MAX_IO_BINDINGS)),
            symbolic_dims=self.get(o, "symbolic_dims", p, self.array(self.symbolic_dim, MAX_SYMBOLIC_DIMS), list),
        )

    def metadata(self, doc: Any) -> Metadata:
        # Keys in the order the writer emits them, so the first problem
        # reported is the first in the text. Unknown keys are ignored.
        if not isinstance(doc, dict):
            raise _fail(f"metadata must be a JSON object, got {_type_name(doc)}; re-export the model")
        m = Metadata(
            io_bindings=self.get(doc, "io_bindings", "", self.array(self.binding, MAX_IO_BINDINGS)),
            aliased_io=self.get(doc, "aliased_io", "", self.array(self.alias, MAX_ALIASES), list),
            hardware_compatible=self.get(doc, "hardware_compatible", "", self.boolean, False),
            device_id=self.get(doc, "device_id", "", self.int64, 0),
            serialized_metadata=self.get(doc, "serialized_metadata", "", self.string, ""),
            target_platform=self.get(doc, "target_platform", "", self.string, ""),
            profile_signature=self.get(doc, "profile_signature", "", self.signature, None),
        )
        _validate_semantics(m)
        return m


def _validate_limits(m: Metadata) -> None:
    if len(m.io_bindings) > MAX_IO_BINDINGS:
        raise _too_many_entries("io_bindings", len(m.io_bindings), MAX_IO_BINDINGS)
    if len(m.aliased_io) > MAX_ALIASES:
        raise _too_many_entries("aliased_io", len(m.aliased_io), MAX_ALIASES)
    sig = m.profile_signature
    if sig is None:
        return
    if len(sig.inputs) > MAX_IO_BINDINGS:
        raise _too_many_entries("profile_signature.inputs", len(sig.inputs), MAX_IO_BINDINGS)
    if len(sig.symbolic_dims) > MAX_SYMBOLIC_DIMS:
        raise _too_many_entries("profile_signature.symbolic_dims", len(sig.symbolic_dims), MAX_SYMBOLIC_DIMS)


def _validate_name_lengths(m: Metadata) -> None:
    """Name-like strings in the order the JSON holds them (UTF-8 was checked as they were read)."""
    def check(value: str, path: str) -> None:
        n = len(value.encode("utf-8", "surrogatepass"))
        if n > MAX_NAME_LENGTH:
            raise _fail(f"{path} is {n} bytes long, above the limit of {MAX_NAME_LENGTH}; re-export the model")

    for i, b in enumerate(m.io_bindings):
        check(b.name, f"io_bindings[{i}].name")
        check(b.dtype, f"io_bindings[{i}].dtype")
    for i, a in enumerate(m.aliased_io):
        check(a.output, f"aliased_io[{i}].output")
        check(a.input, f"aliased_io[{i}].input")
        check(a.kind, f"aliased_io[{i}].kind")
    sig = m.profile_signature
    if sig is None:
        return
    for i, inp in enumerate(sig.inputs):
        check(inp.name, f"profile_signature.inputs[{i}].name")
    for i, s in enumerate(sig.symbolic_dims):
        check(s.name, f"profile_signature.symbolic_dims[{i}].name")
        check(s.input, f"profile_signature.symbolic_dims[{i}].input")


def _validate_bindings(m: Metadata) -> Dict[str, IoBinding]:
    """Names to bindings (every later lookup is O(1)). Inputs and outputs may
    interleave: the delegate's arguments are the inputs in their listed order,
    then the outputs in theirs (arguments())."""
    seen: Dict[str, int] = {}
    by_name: Dict[str, IoBinding] = {}
    for i, b in enumerate(m.io_bindings):
        if not b.name:
            raise _fail(
                f"io_bindings[{i}].name is empty; every engine input and output needs its TensorRT tensor name, "
                "re-export the model"
            )
        if "\x00" in b.name:
            raise _fail(
                f"io_bindings[{i}].name {_quoted(b.name)} contains a NUL byte; TensorRT tensor names are C strings, "
                "so no engine tensor has this name, re-export the model"
            )
        if b.name in seen:
            raise _fail(
                f"io_bindings[{seen[b.name]}] and io_bindings[{i}] are both named {_quoted(b.name)}; "
                "binding names must be unique, re-export the model"
            )
        seen[b.name] = i
        by_name[b.name] = b
    return by_name


def _validate_aliases(m: Metadata, by_name: Dict[str, IoBinding]) -> None:
    seen: Dict[str, int] = {}
    for i, a in enumerate(m.aliased_io):
        out = by_name.get(a.output)
        if out is None or out.is_input:
            raise _fail(f"aliased_io[{i}].output {_quoted(a.output)} is not an output in io_bindings; re-export the "
                        "model")
        inp = by_name.get(a.input)
        if inp is None or not inp.is_input:
            raise _fail(f"aliased_io[{i}].input {_quoted(a.input)} is not an input in io_bindings; re-export the model")
        if not a.kind:
            raise _fail(f"aliased_io[{i}].kind is empty; use '{ALIAS_KIND_KV_CACHE_UPDATE}' or '{ALIAS_KIND_USER}'")
        if a.output in seen:
            raise _fail(
                f"aliased_io[{seen[a.output]}] and aliased_io[{i}] both alias output {_quoted(a.output)}; "
                "an output aliases one input at most, re-export the model"
            )
        seen[a.output] = i


def _validate_signature_input(sig: ProfileSignature, i: int) -> None:
    inp = sig.inputs[i]
    what = f"profile_signature.inputs[{i}] {_quoted(inp.name)}"
    if len(inp.profiles) != sig.num_profiles:
        raise _fail(
            f"{what} has {len(inp.profiles)} profiles but num_profiles is {sig.num_profiles}; re-export the model"
        )
    rank = len(inp.profiles[0].min)
    for p, b in enumerate(inp.profiles):
        if len(b.opt) != len(b.min) or len(b.max) != len(b.min):
            raise _fail(
                f"{what} profile {p} has min of rank {len(b.min)}, opt of rank {len(b.opt)} and max of rank "
                f"{len(b.max)}; they must have the same rank, re-export the model"
            )
        if p == 0 and rank > MAX_SIGNATURE_RANK:
            raise _fail(f"{what} has rank {rank}; TensorRT tensors have at most 8 dimensions, re-export the model")
        if len(b.min) != rank:
            raise _fail(
                f"{what} has rank {len(b.min)} in profile {p} but rank {rank} in profile 0; "
                "an input has one rank in every profile, re-export the model"
            )
        for d in range(rank):
            if b.min[d] < 0 or b.min[d] > b.opt[d] or b.opt[d] > b.max[d]:
                raise _fail(
                    f"{what} profile {p} dim {d} has min {b.min[d]}, opt {b.opt[d]}, max {b.max[d]}; "
                    "bounds must satisfy 0 <= min <= opt <= max, re-export the model"
                )


def _validate_symbolic_dim(m: Metadata, by_name: Dict[str, IoBinding], described: Dict[str, SignatureInput],
                           dims: Dict[Tuple[str, int], int], i: int) -> None:
    sig = m.profile_signature
    s = sig.symbolic_dims[i]
    path = f"profile_signature.symbolic_dims[{i}]"
    if not s.name:
        raise _fail(f"{path}.name is empty; re-export the model")
    what = f"{path} {_quoted(s.name)}"
    binding = by_name.get(s.input)
    if binding is None or not binding.is_input:
        raise _fail(f"{what} refers to {_quoted(s.input)}, which is not an input in io_bindings; re-export the model")
    inp = described.get(s.input)
    if inp is None:
        raise _fail(
            f"{what} refers to input {_quoted(s.input)}, which has no bounds in profile_signature.inputs; "
            "re-export the model"
        )
    rank = len(inp.profiles[0].min)
    if s.dim < 0 or s.dim >= rank:
        raise _fail(f"{what} is dim {s.dim} of input {_quoted(s.input)}, which has rank {rank}; re-export the model")
    if len(s.ranges) != sig.num_profiles:
        raise _fail(f"{what} has {len(s.ranges)} ranges but num_profiles is {sig.num_profiles}; re-export the model")
    for p, (lo, hi) in enumerate(s.ranges):
        if lo < 0 or lo > hi:
            raise _fail(f"{what} range {p} is [{lo}, {hi}]; a range must satisfy 0 <= lo <= hi, re-export the model")
    key = (s.input, s.dim)
    if key in dims:
        raise _fail(
            f"profile_signature.symbolic_dims[{dims[key]}] and {path} both describe dim {s.dim} of input "
            f"{_quoted(s.input)}; re-export the model"
        )
    dims[key] = i


def _validate_signature(m: Metadata, by_name: Dict[str, IoBinding]) -> None:
    sig = m.profile_signature
    if sig.num_profiles < 1:
        raise _fail(
            f"profile_signature.num_profiles is {sig.num_profiles}; an engine has at least one optimization profile, "
            "re-export the model"
        )
    if sig.num_profiles > MAX_PROFILES:
        raise _fail(f"profile_signature.num_profiles is {sig.num_profiles}, above the limit of {MAX_PROFILES}; "
                    "re-export the model")
    if len(sig.inputs) * sig.num_profiles > MAX_PROFILE_ENTRIES:
        raise _too_many_profile_entries("inputs", len(sig.inputs), sig.num_profiles)
    if len(sig.symbolic_dims) * sig.num_profiles > MAX_PROFILE_ENTRIES:
        raise _too_many_profile_entries("symbolic dims", len(sig.symbolic_dims), sig.num_profiles)
    seen: Dict[str, int] = {}
    described: Dict[str, SignatureInput] = {}
    for i, inp in enumerate(sig.inputs):
        binding = by_name.get(inp.name)
        if binding is None or not binding.is_input:
            raise _fail(
                f"profile_signature.inputs[{i}] {_quoted(inp.name)} is not an input in io_bindings; re-export the "
                "model"
            )
        if inp.name in seen:
            raise _fail(
                f"profile_signature.inputs[{seen[inp.name]}] and profile_signature.inputs[{i}] both describe "
                f"input {_quoted(inp.name)}; re-export the model"
            )
        seen[inp.name] = i
        _validate_signature_input(sig, i)
        described[inp.name] = inp
    dims: Dict[Tuple[str, int], int] = {}
    for i in range(len(sig.symbolic_dims)):
        _validate_symbolic_dim(m, by_name, described, dims, i)


def _validate_semantics(m: Metadata) -> None:
    """validate_metadata's rules in src/blob/metadata.cpp's order; linear in the metadata."""
    _validate_limits(m)
    _validate_name_lengths(m)
    by_name = _validate_bindings(m)
    _validate_aliases(m, by_name)
    if m.profile_signature is not None:
        _validate_signature(m, by_name)


# Far above the schema's 7 levels, far below what Python's recursive json
# module can take; src/blob/json_text.cpp enforces the same limit.
MAX_JSON_DEPTH = 64


# The two arrays whose length is the blob's to choose: counted in the text
# before json.loads builds anything (src/blob/json_text.cpp find_oversized_array).
_ARRAY_LIMITS = {"io_bindings": MAX_IO_BINDINGS, "aliased_io": MAX_ALIASES}
# Whole strings (escapes consumed in pairs, so a token ending in '"' is closed) and structural characters.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{},:]', re.DOTALL)


def _scan_structure(text: str, depth_limit: int) -> Tuple[bool, Optional[str]]:
    """One pass over the text, without parsing it: (whether brackets and
    braces outside strings nest deeper than ``depth_limit``, the first
    top-level key of _ARRAY_LIMITS whose array value holds more than its limit
    of entries). The C++ reader's nests_deeper_than and find_oversized_array
    draw the same lines; keys are matched as written."""
    depth = commas = 0
    pending_key = key = counting = oversized = None
    for m in _STRUCTURE.finditer(text):
        t = m.group()
        c = t[0]
        if c == '"':
            if depth == 1:
                pending_key = t[1:-1] if len(t) > 1 and t.endswith('"') else t[1:]
        elif c == ":":
            if depth == 1:
                key = pending_key
        elif c == ",":
            if depth == 1:
                key = pending_key = None
            elif depth == 2 and counting is not None:
                commas += 1
                if commas >= _ARRAY_LIMITS[counting] and oversized is None:
                    oversized = counting
        elif c in "[{":
            depth += 1
            if depth > depth_limit:
                return True, oversized
            if depth == 2 and c == "[":
                counting, commas = (key if key in _ARRAY_LIMITS else None), 0
        elif depth > 0:
            if depth == 2:
                counting = None
            depth -= 1
    return False, oversized


# Number hooks that make json.loads agree with nlohmann: NaN/Infinity are not
# JSON; a number that overflows a double is an error; an integer outside
# [-2^63, 2^64) becomes a float, which the typed reads then refuse as "a number".
def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_float(s: str) -> float:
    f = float(s)
    if f in (float("inf"), float("-inf")):
        raise ValueError(f"number overflow parsing '{s}'")
    return f


def _parse_int(s: str) -> Any:
    v = int(s)
    return v if _INT64[0] <= v <= _U64_MAX else _parse_float(s)


def _check_unicode(value: Any) -> None:
    # nlohmann refuses a lone UTF-16 surrogate escape anywhere, even under a
    # key nobody reads; json.loads keeps it. Objects are checked by the pairs
    # hook as they are built (duplicate keys included), so only strings and
    # arrays need a walk here.
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"lone surrogate \\u{ord(value[e.start]):04x} in a string") from None
    elif isinstance(value, list):
        for item in value:
            _check_unicode(item)


def _object_pairs(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    for key, value in pairs:
        _check_unicode(key)
        _check_unicode(value)
    return dict(pairs)


def metadata_from_json(data: bytes, offset: Optional[int] = None) -> Metadata:
    """Decodes and validates metadata JSON; raises BlobError. ``offset`` only feeds messages."""
    data = bytes(data)
    where = f"metadata ({len(data)} bytes" + (f" at offset {offset})" if offset is not None else ")")
    # Before anything is parsed: the document takes several times its text.
    if len(data) > MAX_METADATA_SIZE:
        raise _fail(f"{where} is larger than the limit of {MAX_METADATA_SIZE} bytes; re-export the model")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _fail(f"{where} is not valid JSON: invalid UTF-8 at byte {e.start}; re-export the model") from None
    # nlohmann would stop at a NUL as if the input ended there; both readers
    # refuse it instead (a raw NUL is never valid JSON).
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _fail(f"{where} is not valid JSON: NUL byte at byte {nul}; re-export the model")
    # nlohmann skips a leading byte-order mark, so we do too.
    text = text[1:] if text.startswith("\ufeff") else text
    too_deep, over = _scan_structure(text, MAX_JSON_DEPTH)
    if too_deep:
        raise _fail(f"{where} nests deeper than {MAX_JSON_DEPTH} levels; re-export the model")
    if over is not None:
        raise _fail(f"metadata field '{over}' has more than {_ARRAY_LIMITS[over]} entries; re-export the model")
    try:
        doc = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_parse_float,
            parse_int=_parse_int,
            object_pairs_hook=_object_pairs,
        )
        if not isinstance(doc, dict):
            _check_unicode(doc)
    except (ValueError, RecursionError) as e:
        raise _fail(f"{where} is not valid JSON: {e}; re-export the model") from None
    return _Decoder().metadata(doc)


def _quote_magic(magic: bytes) -> str:
    out = "".join(chr(c) if 0x20 <= c < 0x7F and c not in (0x5C, 0x27) else f"\\x{c:02x}" for c in magic)
    return f"'{out}'"


def parse_blob(data: bytes) -> Tuple[Metadata, bytes]:
    """Reads a blob; returns (metadata, engine bytes) or raises BlobError."""
    data = memoryview(data).cast("B")
    size = len(data)
    if size < HEADER_SIZE:
        raise _fail(f"the delegate data is {size} bytes, shorter than the {HEADER_SIZE}-byte header{_RE_EXPORT}")
    magic, mo, ms, eo, es, _ = struct.unpack(HEADER_FORMAT, data[:HEADER_SIZE])
    if magic not in (MAGIC_TR01, MAGIC_TR02):
        raise _fail(
            f"magic is {_quote_magic(magic)}, expected 'TR01' or 'TR02'; this delegate data was not written by a "
            "TensorRT exporter or is corrupt, re-export the model"
        )
    if mo < HEADER_SIZE:
        raise _fail(f"metadata_offset {mo} points inside the {HEADER_SIZE}-byte header{_RE_EXPORT}")
    if eo < HEADER_SIZE:
        raise _fail(f"engine_offset {eo} points inside the {HEADER_SIZE}-byte header{_RE_EXPORT}")
    if eo % ENGINE_ALIGNMENT:
        raise _fail(
            f"engine_offset {eo} is not a multiple of {ENGINE_ALIGNMENT} (TensorRT needs the engine 16-byte aligned)"
            f"{_RE_EXPORT}"
        )
    if mo + ms > size:
        raise _fail(
            f"metadata at offset {mo} with size {ms} ends at byte {mo + ms}, past the end of the {size}-byte blob"
            f"{_RE_EXPORT}"
        )
    if es == 0:
        raise _fail(f"engine_size is 0, the blob carries no engine{_RE_EXPORT}")
    if eo + es > size:
        raise _fail(
            f"engine at offset {eo} with size {es} runs past the end of the {size}-byte blob{_RE_EXPORT}"
        )
    if mo < eo + es and eo < mo + ms:
        raise _fail(f"metadata [{mo}, {mo + ms}) overlaps engine [{eo}, {eo + es}){_RE_EXPORT}")
    metadata = metadata_from_json(bytes(data[mo : mo + ms]), offset=mo)
    return metadata, bytes(data[eo : eo + es])
