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
``delegate_state``. The writer is pure Python (no PyTorch, no numpy, no
libetrt), so it runs wherever an exporter does, and writes the bytes the C++
writer in ``src/blob/`` writes for the same metadata. The reader is the
runtime's own (``parse_blob`` of ``src/blob/`` through libetrt_tools' C
ABI), which owns every rule; the writer asks it, where libetrt_tools is
loadable, to check what it wrote (docs/architecture.md, "One rulebook"). See ``docs/blob-format.md``.

Modules:

* :mod:`etrt.blob.format` -- header layout, limits, :class:`BlobError`, the
  metadata dataclasses;
* :mod:`etrt.blob.writer` -- :func:`write_blob`, :func:`metadata_to_json`,
  :func:`validate_metadata`;
* :mod:`etrt.blob.reader` -- :func:`parse_blob`, :func:`describe_blob`: the
  runtime's reader.
"""

from .format import (ALIAS_KIND_KV_CACHE_UPDATE, ALIAS_KIND_USER, ALIAS_KINDS, ENGINE_ALIGNMENT, HEADER_SIZE,
                     MAGIC_TR01, MAGIC_TR02, AliasedIo, BlobError, DelegateState, IoBinding, Metadata, ProfileBounds, ProfileSignature,
                     SignatureInput, SymbolicDim)
from .reader import describe_blob, metadata_from_dict, parse_blob
from .writer import metadata_to_json, validate_metadata, write_blob

# Reachable here as before the split: the other constants.
from .format import (HEADER_FORMAT, MAX_IO_BINDINGS, MAX_METADATA_SIZE, MAX_PROFILE_ENTRIES, MAX_PROFILES,  # noqa: F401
                     RESERVED, escape_name)

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
    "describe_blob",
    "metadata_from_dict",
    "metadata_to_json",
    "parse_blob",
    "validate_metadata",
    "write_blob",
]
