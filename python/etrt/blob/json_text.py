"""Metadata JSON text to :class:`Metadata` (:func:`metadata_from_json`):
the checks on the raw text (size, UTF-8, NUL, nesting depth, oversized
arrays) and the JSON parse made to agree with the C++ reader's nlohmann
(``src/blob/json_text.cpp``)."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from .decoder import _Decoder
from .format import MAX_ALIASES, MAX_IO_BINDINGS, MAX_METADATA_SIZE, MAX_STATES, _INT64, _U64_MAX, Metadata, _fail

# Far above the schema's 7 levels, far below what Python's recursive json
# module can take; src/blob/json_text.cpp enforces the same limit.
MAX_JSON_DEPTH = 64


# The two arrays whose length is the blob's to choose: counted in the text
# before json.loads builds anything (src/blob/json_text.cpp find_oversized_array).
_ARRAY_LIMITS = {"io_bindings": MAX_IO_BINDINGS, "aliased_io": MAX_ALIASES, "delegate_state": MAX_STATES}
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
