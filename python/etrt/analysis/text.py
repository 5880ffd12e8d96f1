"""Text that comes from the file: :func:`printable` to show it on a
terminal, :func:`parse_byte_count` to read the ``weight_streaming_budget``
compile spec as the runtime does."""

from __future__ import annotations

from typing import Optional


def _control(c: str) -> bool:
    o = ord(c)
    return o < 0x20 or 0x7F <= o <= 0x9F


def printable(text: str) -> str:
    """``text`` with control characters (C0 with newlines, DEL, C1) as
    ``\\xNN``: names come from the file, and a report prints them to a terminal."""
    if not any(_control(c) for c in text):
        return text
    return "".join(f"\\x{ord(c):02x}" if _control(c) else c for c in text)


#: The compile spec that sets TensorRT's weight-streaming budget (bytes).
WEIGHT_STREAMING_BUDGET = "weight_streaming_budget"
#: The largest byte count the runtime reads (2^63 - 1).
MAX_BYTE_COUNT = 2**63 - 1


def parse_byte_count(value: bytes) -> Optional[int]:
    """A byte count as the runtime reads the ``weight_streaming_budget``
    compile spec: one or more ASCII decimal digits and nothing else (no sign,
    space, NUL or decimal point), at most 2^63 - 1 (``MAX_BYTE_COUNT``, for
    messages). None for anything else. The rule is the runtime's own, asked
    through libetrt_tools (``etrt_parse_byte_count``)."""
    from .. import _reader

    return _reader.parse_byte_count(value)
