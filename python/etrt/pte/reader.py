"""Reading a ``.pte``: :func:`read_pte` decodes a verified program to the
schema's JSON with flatc, plus what flatc cannot see (headers, segments);
:func:`describe_value` summarizes one of its values.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import tempfile
from typing import Any, BinaryIO, Dict, Mapping, Optional, Sequence, Union

from ..dtypes import DTYPES, SCALAR_TYPE_TO_DTYPE
from .format import EXTENDED_HEADER_LENGTH, EXTENDED_HEADER_OFFSET, FILE_IDENTIFIER, PteError, device_of
from .schema import load_schema
from .toolchain import Toolchain, find_toolchain, run_flatc
from .verify import Verifier, parse_header

__all__ = ["describe_value", "read_pte"]

_NONFINITE_LINE = re.compile(r'^(\s*(?:"[A-Za-z0-9_]+"\s*:\s*)?)(-?)(inf|nan)(\s*,?\s*)$', re.M)


def _decode_json(text: str) -> Any:
    def repl(m: "re.Match[str]") -> str:
        tok = "NaN" if m.group(3) == "nan" else m.group(2) + "Infinity"
        return m.group(1) + tok + m.group(4)

    return json.loads(_NONFINITE_LINE.sub(repl, text))


def _set_path(obj: Any, path: Sequence[Any], value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def read_pte(source: Union[str, os.PathLike, bytes, bytearray, memoryview],
             toolchain: Optional[Toolchain] = None) -> Dict[str, Any]:
    """Decodes a .pte into the schema's JSON (via flatc) plus what flatc
    cannot see (headers, segments).

    ``source`` is a path or the file's bytes. Returns::

        {
          "path": str | None, "file_size": int, "identifier": "ET12",
          "extended_header": None | {"length", "program_size",
                                     "segment_base_offset", "segment_data_size"},
          "program": {...},   # flatc --json --strict-json --defaults-json output;
                              # BackendDelegateInlineData.data, Buffer.storage and
                              # CompileSpec.value are ``bytes``
          "delegates": [{"method", "method_index", "delegate_index", "id",
                         "location": "INLINE" | "SEGMENT", "index",
                         "data": bytes, "compile_specs": {key: bytes}}],
        }

    Raises PteError for anything that is not a well-formed .pte (wrong
    identifier, truncated, offsets out of range, segment out of range),
    ToolchainError if flatc/schema are missing, OSError if unreadable.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        return _read_pte(data, len(data), None, None, toolchain)
    path = os.fspath(source)
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            data = f.read()
            return _read_pte(data, len(data), None, path, toolchain)
        # A regular file is read in parts: its header, its program, then each segment a delegate stores its data
        # in straight into the bytes returned, so a large delegate is in memory once, not also in a copy of the file.
        return _read_pte(f.read(EXTENDED_HEADER_OFFSET + EXTENDED_HEADER_LENGTH), info.st_size, f, path, toolchain)


def _read_pte(data: bytes, file_size: int, file: Optional[BinaryIO], path: Optional[str],
              toolchain: Optional[Toolchain]) -> Dict[str, Any]:
    """read_pte of a file of ``file_size`` bytes. ``data``: all of them, or (with ``file``, open on the file) only
    its beginning, for parse_header; the program and the segments are then read from ``file``."""
    tc = toolchain or find_toolchain()
    schema = load_schema(tc)
    identifier = schema.file_identifier or FILE_IDENTIFIER
    program_size, eh = parse_header(data, identifier, file_size)
    if file is not None:
        file.seek(0)
        data = file.read(program_size)
        if len(data) != program_size:
            raise PteError(f"truncated .pte: {path} was {file_size} bytes when opened, and then ended at byte "
                           f"{len(data)} of its {program_size}-byte program (did it change while it was read?)")
    ver = Verifier(memoryview(data)[:program_size], schema)
    ver.verify()

    # flatc prints [ubyte] one number per line; hand it the program with the
    # opaque byte vectors empty (their lengths zeroed) and put their bytes back
    # afterwards. It is written in pieces rather than patched in a copy: a
    # program may hold large delegates inline.
    blobs = [(vpath, bytes(data[start:start + n])) for vpath, _, start, n in ver.byte_vectors]
    zeroed = sorted({len_pos for _, len_pos, _, n in ver.byte_vectors if n})
    with tempfile.TemporaryDirectory(prefix="etrt-pte-") as tmp:
        bin_path = os.path.join(tmp, "program.bin")
        with open(bin_path, "wb") as f:
            view, at = memoryview(data), 0
            for len_pos in zeroed:
                f.write(view[at:len_pos])  # empty where two length fields overlap
                f.write(bytes(len_pos + 4 - max(at, len_pos)))
                at = len_pos + 4
            f.write(view[at:program_size])
        run_flatc(tc, ["--json", "--raw-binary", "--strict-json", "--defaults-json",
                        "-o", tmp, tc.program_fbs, "--", bin_path], "decoding the program")
        with open(os.path.join(tmp, "program.json"), encoding="utf-8") as f:
            program = _decode_json(f.read())
    for vpath, blob in blobs:
        _set_path(program, vpath, blob)

    segments = program.get("segments") or []
    delegates = []
    for mi, plan in enumerate(program.get("execution_plan") or []):
        for di, d in enumerate(plan.get("delegates") or []):
            ref = d.get("processed") or {}
            loc, idx = ref.get("location", "INLINE"), ref.get("index", 0)
            where = f"method {plan.get('name')!r} delegate {di} ({d.get('id')!r})"
            if loc == "INLINE":
                inline = program.get("backend_delegate_data") or []
                if idx >= len(inline):
                    raise PteError(f"corrupt .pte: {where} refers to inline data {idx}, "
                                   f"the program has {len(inline)}")
                blob = inline[idx].get("data", b"")
            elif loc == "SEGMENT":
                if eh is None or not eh["segment_base_offset"]:
                    raise PteError(f"corrupt .pte: {where} is stored in segment {idx} "
                                   "but the file has no segment data (no extended header)")
                if idx >= len(segments):
                    raise PteError(f"corrupt .pte: {where} refers to segment {idx}, "
                                   f"the program has {len(segments)}")
                seg = segments[idx]
                start = eh["segment_base_offset"] + seg["offset"]
                if start + seg["size"] > file_size:
                    raise PteError(f"truncated .pte: segment {idx} of {where} ends at byte "
                                   f"{start + seg['size']}, the file has {file_size}")
                if file is None:
                    blob = data[start:start + seg["size"]]
                else:
                    file.seek(start)
                    blob = file.read(seg["size"])
                    if len(blob) != seg["size"]:
                        raise PteError(f"truncated .pte: segment {idx} of {where} ends at byte "
                                       f"{start + seg['size']}, the file ended at byte {start + len(blob)} "
                                       "(did it change while it was read?)")
            else:
                raise PteError(f"corrupt .pte: {where} has unknown data location {loc!r}")
            delegates.append({
                "method": plan.get("name"),
                "method_index": mi,
                "delegate_index": di,
                "id": d.get("id"),
                "location": loc,
                "index": idx,
                "data": blob,
                "compile_specs": {c.get("key"): c.get("value", b"")
                                  for c in (d.get("compile_specs") or [])},
            })
    return {
        "path": path,
        "file_size": file_size,
        "identifier": identifier.decode(),
        "extended_header": eh,
        "program": program,
        "delegates": delegates,
    }


def describe_value(value: Mapping[str, Any]) -> Dict[str, Any]:
    """Summarizes one decoded ``EValue`` (an entry of ``execution_plan[i].values``).

    Tensors: ``{"kind": "tensor", "dtype", "scalar_type", "sizes",
    "dim_order", "dynamism", "planned", "memory_id", "offset", "nbytes",
    "constant", "device"}`` (``nbytes`` at the upper-bound sizes, None for an
    unknown dtype; ``device`` "cpu" or e.g. "cuda:0", from the tensor's
    ``extra_tensor_info``). Others: ``{"kind": "int"|"bool"|"double"|"none"|..., "value"}``.
    """
    vtype = value.get("val_type", "NONE")
    val = value.get("val") or {}
    if vtype == "Tensor":
        st = val.get("scalar_type")
        dtype = SCALAR_TYPE_TO_DTYPE.get(st)
        sizes = list(val.get("sizes") or [])
        alloc = val.get("allocation_info")
        nbytes = None
        if dtype is not None:
            nbytes = DTYPES[dtype][1] * math.prod(sizes)
        return {
            "kind": "tensor",
            "dtype": dtype,
            "scalar_type": st,
            "sizes": sizes,
            "dim_order": list(val.get("dim_order") or []),
            "dynamism": val.get("shape_dynamism", "STATIC"),
            "planned": alloc is not None,
            "memory_id": alloc.get("memory_id") if alloc else None,
            "offset": (alloc.get("memory_offset_low", 0) | (alloc.get("memory_offset_high", 0) << 32))
            if alloc else None,
            "nbytes": nbytes,
            "constant": alloc is None and val.get("data_buffer_idx", 0) > 0,
            "device": device_of(val),
        }
    simple = {"Int": ("int", "int_val"), "Bool": ("bool", "bool_val"),
              "Double": ("double", "double_val"), "String": ("string", "string_val")}
    if vtype in simple:
        kind, key = simple[vtype]
        return {"kind": kind, "value": val.get(key)}
    if vtype in ("NONE", "Null"):
        return {"kind": "none", "value": None}
    return {"kind": vtype, "value": val}

