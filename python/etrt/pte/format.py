"""Facts about the ``.pte`` format, and the error a bad program raises.

From program.fbs, exir/_serialize/_program.py and the runtime's program.cpp /
method.cpp / tensor_parser*.cpp; see docs/pte-packer.md. The schema is the
source of truth where it can be: the file identifier and the inline alignment
are read from it at run time (:mod:`etrt.pte.schema`).
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = [
    "EXTENDED_HEADER_LENGTH",
    "EXTENDED_HEADER_MAGIC",
    "EXTENDED_HEADER_MIN_LENGTH",
    "EXTENDED_HEADER_OFFSET",
    "FILE_IDENTIFIER",
    "INLINE_DELEGATE_ALIGNMENT",
    "INT32_MAX",
    "MAX_RANK",
    "PLANNED_MEMORY_ID",
    "PLANNED_TENSOR_ALIGNMENT",
    "PteError",
    "SCHEMA_VERSION",
    "SEGMENT_ALIGNMENT",
    "device_name",
    "device_of",
]

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

INT32_MAX = 2**31 - 1


class PteError(ValueError):
    """The input is not a valid .pte, or a program description is invalid."""


def device_name(entry: Mapping[str, Any]) -> str:
    """``"cpu"`` or ``"<type>:<index>"`` for a table with ``device_type`` and
    ``device_index`` (absent: CPU, index 0): a Tensor's ``extra_tensor_info``, an
    entry of ``non_const_buffer_device``."""
    kind = str(entry.get("device_type", "CPU")).lower()
    return "cpu" if kind == "cpu" else f"{kind}:{int(entry.get('device_index', 0))}"


def device_of(tensor: Mapping[str, Any]) -> str:
    """``"cpu"`` or ``"cuda:<index>"`` for a decoded ``Tensor`` table (its
    ``extra_tensor_info``; absent means CPU)."""
    return device_name(tensor.get("extra_tensor_info") or {})
