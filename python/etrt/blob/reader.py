"""Reading a blob: the header's checks, then the metadata
(:func:`parse_blob`)."""

from __future__ import annotations

import struct
from typing import Tuple

from .format import ENGINE_ALIGNMENT, HEADER_FORMAT, HEADER_SIZE, MAGIC_TR01, MAGIC_TR02, Metadata, _fail
from .json_text import metadata_from_json

_RE_EXPORT = "; the .pte is truncated or corrupt, re-export the model"


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
