"""The limits and format constants the Python side repeats are the C++ ones: each Python constant is checked against
the constant of the C++ reader that enforces it (src/blob/metadata.h and blob.h for the blob, nvinfer/src/model.h and
format.h and etrt_gpufree/types.h for the GPU-free NvInfer's engines), so a change to one side that the other does not follow fails here."""

import re
from pathlib import Path

import pytest

from etrt.blob import format as blob_format
from etrt.gpufree import format as gpufree_format

ROOT = Path(__file__).resolve().parents[2]
_CONSTANT = re.compile(r"inline constexpr [^=;]*?\b(k\w+)(\[\d*\])? = (.+?);")


def _cpp_constants(*headers):
    """Every `inline constexpr T kName = value;` of the headers that is a plain value, evaluated: integers (with digit
    separators, casts such as size_t{16} and shifts, and earlier constants), strings and character arrays."""
    values = {}
    for header in headers:
        for name, array, expr in _CONSTANT.findall((ROOT / header).read_text()):
            expr = expr.strip()
            if array:
                values[name] = bytes(ord(c) for c in re.findall(r"'(.)'", expr))
            elif expr.startswith('"'):
                values[name] = expr.strip('"')
            else:
                expr = re.sub(r"\w+\{(\d+)\}", r"(\1)", expr.replace("'", ""))
                try:
                    values[name] = eval(expr, {"__builtins__": {}}, dict(values))  # noqa: S307 - the project's headers
                except (NameError, SyntaxError):  # not a plain number (sizeof, a type): no Python constant mirrors it
                    pass
    return values


BLOB = _cpp_constants("src/blob/blob.h", "src/blob/metadata.h")
GPUFREE = _cpp_constants("nvinfer/src/model.h", "nvinfer/src/format.h", "nvinfer/include/etrt_gpufree/types.h")


@pytest.mark.parametrize("python, cpp", [
    ("HEADER_SIZE", "kHeaderSize"),
    ("ENGINE_ALIGNMENT", "kEngineAlignment"),
    ("MAGIC_TR01", "kMagicTr01"),
    ("MAGIC_TR02", "kMagicTr02"),
    ("MAX_METADATA_SIZE", "kMaxMetadataSize"),
    ("MAX_IO_BINDINGS", "kMaxIoBindings"),
    ("MAX_PROFILES", "kMaxProfiles"),
    ("MAX_PROFILE_ENTRIES", "kMaxProfileEntries"),
    ("ALIAS_KIND_KV_CACHE_UPDATE", "kAliasKindKvCacheUpdate"),
    ("ALIAS_KIND_USER", "kAliasKindUser"),
])
def test_a_blob_constant_is_the_readers(python, cpp):
    assert getattr(blob_format, python) == BLOB[cpp]


def test_every_blob_limit_the_writer_repeats_is_checked():
    limits = {name for name in vars(blob_format) if name.startswith("MAX_")}
    checked = {p for p, _ in test_a_blob_constant_is_the_readers.pytestmark[0].args[1]}
    assert limits <= checked, f"check {sorted(limits - checked)} against src/blob"


def _camel(name):
    return "k" + "".join(part.capitalize() for part in name.split("_"))


@pytest.mark.parametrize("name", sorted(gpufree_format.LIMITS))
def test_a_gpufree_limit_is_the_deserializers(name):
    assert gpufree_format.LIMITS[name] == GPUFREE[_camel(name)]


def test_the_gpufree_format_constants_are_the_deserializers():
    assert gpufree_format.MAGIC == GPUFREE["kMagic"]
    assert gpufree_format.FORMAT_VERSION == GPUFREE["kFormatVersion"]
    assert gpufree_format.HEADER_SIZE == GPUFREE["kHeaderSize"]
    assert gpufree_format.SCRATCH_ALIGNMENT == GPUFREE["kScratchAlignment"]
    assert gpufree_format.MAX_RANK == GPUFREE["kMaxRank"]
    limits = {n for n in vars(gpufree_format) if n.startswith("MAX_")} - {"MAX_RANK"}
    assert limits == {n.upper() for n in gpufree_format.LIMITS}, "every limit is in LIMITS, so it is checked above"
