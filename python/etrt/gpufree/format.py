"""The GPU-free NvInfer engine format's facts: magic, version, header size,
flags, dtypes, op kinds and the limits of ``nvinfer/src/model.h``;
:class:`GpufreeEngineError`; the checksum; and how names and shapes are
quoted in messages (as the C++ readers quote them)."""

from __future__ import annotations

from typing import List, Sequence, Tuple

from ..dtypes import DATA_TYPES, element_size

MAGIC = b"ETRF"
FORMAT_VERSION = 2
HEADER_SIZE = 24
MAX_RANK = 8
FLAG_TRACING = 0x1
FLAG_CUDA_MODE = 0x2
FLAG_STREAMABLE_WEIGHTS = 0x4
#: TensorRT 8.6's profile rules without PreviewFeature::kPROFILE_SHARING_0806: a profile is held by one context.
FLAG_EXCLUSIVE_PROFILES = 0x8
KNOWN_FLAGS = FLAG_TRACING | FLAG_CUDA_MODE | FLAG_STREAMABLE_WEIGHTS | FLAG_EXCLUSIVE_PROFILES
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

# The limits of nvinfer/src/model.h (docs/limits.md); tests/python/test_limits.py checks each against it.
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


class GpufreeEngineError(ValueError):
    """The bytes start like a GPU-free NvInfer engine but the runtime would refuse them."""


def checksum(data: bytes) -> int:
    """FNV-1a, 32-bit."""
    h = 2166136261
    for b in bytes(data):
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def is_gpufree_engine(data: bytes) -> bool:
    """True when ``data`` starts with the GPU-free NvInfer's magic (says nothing about the rest)."""
    return bytes(data[:4]) == MAGIC


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


def _kind_name(kind: int) -> str:
    return OP_KINDS.get(kind, "unknown")
