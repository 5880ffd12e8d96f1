"""Reading a blob (:func:`parse_blob`): the runtime's reader
(``src/blob``'s ``parse_blob``, through libetrt_tools' C ABI: :mod:`etrt._reader`),
so a tool refuses exactly what a delegate load refuses, with its message."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .format import (ALIAS_KIND_KV_CACHE_UPDATE, AliasedIo, BlobError, DelegateState, IoBinding, Metadata, ProfileBounds, ProfileSignature,
                     SignatureInput, SymbolicDim)


def metadata_from_dict(data: Dict[str, Any]) -> Metadata:
    """The :class:`Metadata` of a metadata dict: a description the runtime's reader made (``etrt_blob_describe``'s
    "metadata", where every field is there and every rule already holds) or one written by hand, whose missing
    optional fields take their defaults. Nothing is checked here: the reader owns the rules (:func:`parse_blob`,
    :func:`etrt.blob.validate_metadata`)."""
    sig = data.get("profile_signature")
    signature = None
    if sig is not None:
        signature = ProfileSignature(
            num_profiles=sig.get("num_profiles", 1),
            inputs=[SignatureInput(i["name"], [ProfileBounds(p["min"], p["opt"], p["max"])
                                               for p in i.get("profiles", [])]) for i in sig.get("inputs", [])],
            symbolic_dims=[SymbolicDim(s["name"], s["input"], s["dim"], [tuple(r) for r in s.get("ranges", [])])
                           for s in sig.get("symbolic_dims", [])])
    return Metadata(
        io_bindings=[IoBinding(b["name"], b.get("dtype", ""), b.get("shape", []), b.get("is_input", True))
                     for b in data.get("io_bindings", [])],
        aliased_io=[AliasedIo(a["output"], a["input"], a.get("kind") or ALIAS_KIND_KV_CACHE_UPDATE)
                    for a in data.get("aliased_io", [])],
        hardware_compatible=data.get("hardware_compatible", False),
        device_id=data.get("device_id", 0),
        serialized_metadata=data.get("serialized_metadata", ""),
        target_platform=data.get("target_platform", ""),
        profile_signature=signature,
        delegate_state=[DelegateState(s["name"], s["input"], s["output"], s.get("initial_value", ""))
                        for s in data.get("delegate_state", [])])


def describe_blob(data: bytes) -> Dict[str, Any]:
    """The runtime's reading of a blob: the header fields and "metadata" (a dict); raises :class:`BlobError` with
    the runtime's message, or :class:`etrt._reader.ReaderUnavailable` without libetrt_tools."""
    from .. import _reader

    try:
        return _reader.describe_blob(data)
    except _reader.Refused as e:
        raise BlobError(str(e)) from None


def parse_blob(data: bytes) -> Tuple[Metadata, bytes]:
    """Reads a blob; returns (metadata, engine bytes) or raises :class:`BlobError`."""
    data = bytes(data)
    metadata, eo, es = parse_blob_in_place(data)
    return metadata, data[eo:eo + es]


def parse_blob_in_place(data: bytes) -> Tuple[Metadata, int, int]:
    """As :func:`parse_blob`, but where the engine is rather than a copy of it: (metadata, engine offset, engine
    size). For readers that keep the blob anyway and would otherwise hold its largest part twice."""
    d = describe_blob(data)
    return metadata_from_dict(d["metadata"]), d["engine_offset"], d["engine_size"]
