"""Writing a blob: metadata to its canonical compact JSON
(:func:`metadata_to_json`, checked by the runtime's reader through
:func:`validate_metadata` where libetrt_tools is loadable) and the header, padding
and engine around it (:func:`write_blob`)."""

from __future__ import annotations

import json
import struct
from typing import Any, Dict

from .format import (ENGINE_ALIGNMENT, HEADER_FORMAT, HEADER_SIZE, MAGIC_TR01, MAGIC_TR02, RESERVED, _U32_MAX,
                     BlobError, Metadata, ProfileSignature)


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
    # Last of all, only when there is delegate-owned state (readers that search the text for scalar keys after the
    # arrays find the real ones first).
    if metadata.delegate_state:
        data["delegate_state"] = [{"name": s.name, "input": s.input, "output": s.output,
                                   "initial_value": s.initial_value} for s in metadata.delegate_state]
    return data


def _check_utf8(value: Any, path: str) -> None:
    """A Python str can hold what UTF-8 cannot (a lone surrogate): the writer names the field, where the reader
    would only see JSON it cannot decode."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BlobError(f"TensorRT blob: {path} is not valid UTF-8; re-export the model") from None
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_utf8(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_utf8(v, f"{path}[{i}]")


def validate_metadata(metadata: Metadata) -> None:
    """Raises BlobError for metadata the reader would refuse (the writer calls it).

    The runtime's reader owns the rules: where libetrt_tools is loadable, the
    metadata goes through it (in a blob around a one-byte engine) and its
    refusal is raised with its message, so writer and reader cannot drift.
    Without libetrt_tools (a pure-Python install) only the types are checked here,
    and the reader applies the rest when the blob is loaded or validated."""
    try:
        data = _metadata_to_dict(metadata)
        text = json.dumps(data, separators=(",", ":"), allow_nan=False).encode("ascii")
    except (AttributeError, TypeError, ValueError) as e:
        raise BlobError(f"TensorRT blob: metadata is malformed ({e}); build it from etrt.blob's dataclasses") from e
    _check_utf8(data, "")
    from .. import _reader

    if not _reader.available():
        return
    from .reader import describe_blob

    describe_blob(_frame(text, b"\x00"))


def metadata_to_json(metadata: Metadata) -> bytes:
    """The compact JSON the blob embeds: ASCII only, non-ASCII as \\uXXXX escapes."""
    validate_metadata(metadata)
    return json.dumps(_metadata_to_dict(metadata), separators=(",", ":")).encode("ascii")


def _frame(metadata_json: bytes, engine_bytes: bytes, magic: bytes = MAGIC_TR01) -> bytes:
    engine_offset = (HEADER_SIZE + len(metadata_json) + ENGINE_ALIGNMENT - 1) // ENGINE_ALIGNMENT * ENGINE_ALIGNMENT
    if engine_offset > _U32_MAX:
        raise BlobError(
            f"TensorRT blob: metadata is {len(metadata_json)} bytes, too large for the header's 32-bit fields"
        )
    header = struct.pack(HEADER_FORMAT, magic, HEADER_SIZE, len(metadata_json), engine_offset, len(engine_bytes),
                         RESERVED)
    padding = b"\x00" * (engine_offset - HEADER_SIZE - len(metadata_json))
    return header + metadata_json + padding + engine_bytes


def write_blob(metadata: Metadata, engine_bytes: bytes) -> bytes:
    """Builds a blob; raises BlobError when the result would not parse back."""
    engine_bytes = bytes(engine_bytes)
    if not engine_bytes:
        raise BlobError("TensorRT blob: the engine is empty; pass the serialized TensorRT engine")
    return _frame(metadata_to_json(metadata), engine_bytes, MAGIC_TR02 if metadata.aliased_io else MAGIC_TR01)
