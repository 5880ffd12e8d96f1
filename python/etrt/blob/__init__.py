"""The TR01/TR02 blob a TensorRT delegate carries inside a ``.pte``.

Layout (little-endian), Torch-TensorRT's, so the files it exports load unchanged::

    0   magic[4]            b"TR01", or b"TR02" when aliased_io is non-empty
    4   u32 metadata_offset 32
    8   u32 metadata_size
    12  u32 engine_offset   16-byte aligned
    16  u64 engine_size
    24  reserved[8]         01 00 00 00 00 00 00 00 (ignored on read)
    32  compact JSON metadata, zero padding, then the serialized engine

etrt appends two optional metadata keys, ``profile_signature`` and (last)
``delegate_state``. This module and
the C++ reader/writer in ``src/blob/`` write the same bytes for the same
metadata and refuse the same blobs; ``tests/vectors/blob/`` pins both.
Pure Python: no PyTorch, no numpy, so it runs wherever an exporter does.
See ``docs/blob-format.md``.

Modules:

* :mod:`etrt.blob.format` -- header layout, limits, :class:`BlobError`, the
  metadata dataclasses;
* :mod:`etrt.blob.writer` -- :func:`write_blob`, :func:`metadata_to_json`,
  :func:`validate_metadata`;
* :mod:`etrt.blob.reader` -- :func:`parse_blob`;
* :mod:`etrt.blob.json_text` -- :func:`metadata_from_json`: the JSON text;
* :mod:`etrt.blob.decoder` -- typed reads of the parsed JSON;
* :mod:`etrt.blob.semantics` -- the rules metadata must follow.
"""

from .format import (ALIAS_KIND_KV_CACHE_UPDATE, ALIAS_KIND_USER, ALIAS_KINDS, ENGINE_ALIGNMENT, HEADER_SIZE,
                     MAGIC_TR01, MAGIC_TR02, AliasedIo, BlobError, DelegateState, IoBinding, Metadata, ProfileBounds, ProfileSignature,
                     SignatureInput, SymbolicDim)
from .json_text import metadata_from_json
from .reader import parse_blob
from .writer import metadata_to_json, validate_metadata, write_blob

# Reachable here as before the split: the other constants, and what tests and test-vector generators use.
from .decoder import _Decoder  # noqa: F401
from .format import (HEADER_FORMAT, MAX_ALIASES, MAX_IO_BINDINGS, MAX_STATES, MAX_METADATA_SIZE, MAX_NAME_LENGTH,  # noqa: F401
                     MAX_PROFILE_ENTRIES, MAX_PROFILES, MAX_SIGNATURE_RANK, MAX_SYMBOLIC_DIMS, RESERVED, escape_name)
from .json_text import _ARRAY_LIMITS, MAX_JSON_DEPTH, _scan_structure  # noqa: F401

__all__ = [
    "ALIAS_KINDS",
    "ALIAS_KIND_KV_CACHE_UPDATE",
    "ALIAS_KIND_USER",
    "AliasedIo",
    "BlobError",
    "DelegateState",
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
