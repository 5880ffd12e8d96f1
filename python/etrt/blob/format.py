"""The blob's format for the writer: header layout and magics, the limits the
runtime's reader enforces (``src/blob``, which :func:`etrt.blob.parse_blob`
calls through libetrt_tools) as numbers the writer checks against,
:class:`BlobError` and its message helpers, and the metadata dataclasses
(:class:`Metadata` and what it holds)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

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
# Upper limits (src/blob/metadata.h and blob.h, docs/limits.md), the ones the writer and the tools use; the reader
# (src/blob, through libetrt_tools) holds the rest. tests/python/test_limits.py checks each against its C++ constant.
MAX_METADATA_SIZE = 16 * 2**20
MAX_IO_BINDINGS = 16384  # io_bindings entries, and profile_signature.inputs
MAX_PROFILES = 256  # profile_signature.num_profiles
MAX_PROFILE_ENTRIES = 65536  # signature inputs x profiles, symbolic dims x profiles

_INT64 = (-(2**63), 2**63 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_U32_MAX = 2**32 - 1
_U64_MAX = 2**64 - 1


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
class DelegateState:
    """A tensor the delegate owns across calls (``tag_mutated_buffer``): engine input ``input`` reads it, engine output
    ``output`` is its new value (in place when aliased to the input, else copied back after each execution). The call
    passes neither. ``name`` is its identity (the buffer's FQN): delegates of one program share a state by name.
    ``initial_value``: a key of the program's named data holding its initial bytes; "" means zeros."""
    name: str
    input: str
    output: str
    initial_value: str = ""


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
    # etrt's second addition, appended last and only when non-empty.
    delegate_state: List[DelegateState] = field(default_factory=list)

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
# Messages


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
