"""The JSON spec front door: one description of a program, turned into a
:class:`~etrt.pte.builder.Program`.

Every JSON path to a ``.pte`` goes through :func:`program_from_spec`: the
build-time packer (``python -m etrt.pte --spec``, which CMake runs) and
``etrt pack``, which turns its IO description into a spec. The format is in
docs/pte-packer.md.

A spec built in Python (not read from JSON) may also give bytes where JSON
gives text: a delegate call's ``blob`` (instead of ``blob_file``,
``blob_hex`` or ``blob_text``) and compile spec values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, List, Mapping, Optional, Tuple, Union

from .builder import Program
from .format import SEGMENT_ALIGNMENT, PteError

__all__ = ["compile_specs", "load_spec", "program_from_spec"]

_BYTES = (bytes, bytearray, memoryview)
_TOP_KEYS = {"delegate_storage", "delegate_alignment", "segment_alignment", "named_data_table", "methods",
             "name", "values", "inputs", "outputs", "delegate_calls", "comment"}
_METHOD_KEYS = ("name", "values", "inputs", "outputs", "delegate_calls")
_TENSOR_KEYS = {"name", "type", "dtype", "sizes", "dynamic", "dim_order", "planned", "comment"}
_BLOB_KEYS = ("blob_file", "blob_hex", "blob_text", "blob")
_CALL_KEYS = {"backend_id", *_BLOB_KEYS, "args", "compile_specs", "comment"}


def _blob(call: Mapping[str, Any], base: Path, where: str, deps: List[str]) -> bytes:
    keys = [k for k in _BLOB_KEYS if k in call]
    if len(keys) != 1:
        raise PteError(f"{where}: give exactly one of blob_file, blob_hex, blob_text")
    k = keys[0]
    if k == "blob":
        if not isinstance(call[k], _BYTES):
            raise PteError(f"{where}: blob must be bytes (a JSON spec gives blob_file, blob_hex or blob_text)")
        return bytes(call[k])
    if k == "blob_file":
        p = Path(call[k])
        if not p.is_absolute():
            p = base / p
        try:
            data = p.read_bytes()
        except OSError as e:
            raise PteError(f"{where}: cannot read blob_file {str(p)!r}: {e.strerror}") from e
        deps.append(str(p.resolve()))
        return data
    if k == "blob_hex":
        try:
            return bytes.fromhex(str(call[k]))
        except ValueError as e:
            raise PteError(f"{where}: blob_hex is not hex: {e}") from e
    return str(call[k]).encode("utf-8")


def compile_specs(specs: Any, where: str) -> List[Tuple[str, bytes]]:
    """The ``compile_specs`` of a delegate call as ``[(key, value bytes)]``:
    an object ``{key: value}`` or a list of ``{"key", "value"}`` objects (a
    list may repeat a key); a value is a string (UTF-8), ``{"hex": ...}`` (raw
    bytes) or, from Python, bytes. ``where`` starts the PteError messages."""
    if specs is None:
        return []
    items = specs.items() if isinstance(specs, Mapping) else [(s.get("key"), s.get("value")) for s in specs]
    out = []
    for key, val in items:
        if isinstance(val, Mapping) and set(val) == {"hex"}:
            try:
                out.append((key, bytes.fromhex(val["hex"])))
            except ValueError as e:
                raise PteError(f"{where}: compile spec {key!r} hex: {e}") from e
        elif isinstance(val, str):
            out.append((key, val.encode("utf-8")))
        elif isinstance(val, _BYTES):
            out.append((key, bytes(val)))
        else:
            raise PteError(f"{where}: compile spec {key!r} must be a string or {{\"hex\": ...}}")
    return out


def program_from_spec(spec: Mapping[str, Any], base_dir: Union[str, os.PathLike] = ".",
                      deps: Optional[List[str]] = None) -> Program:
    """Builds a Program from a spec dict (format in docs/pte-packer.md).
    Relative ``blob_file`` paths are resolved against ``base_dir``; the files
    read are appended to ``deps``."""
    if not isinstance(spec, Mapping):
        raise PteError("the spec must be a JSON object")
    deps = deps if deps is not None else []
    base = Path(base_dir)
    unknown = set(spec) - _TOP_KEYS
    if unknown:
        raise PteError(f"spec: unknown keys {sorted(unknown)}")
    named_data_table = spec.get("named_data_table", True)
    if not isinstance(named_data_table, bool):
        raise PteError(f"spec: 'named_data_table' must be true or false, not {named_data_table!r}")
    prog = Program(spec.get("delegate_storage", "segment"),
                   delegate_alignment=spec.get("delegate_alignment"),
                   segment_alignment=spec.get("segment_alignment", SEGMENT_ALIGNMENT),
                   named_data_table=named_data_table)
    if "methods" in spec:
        if any(k in spec for k in _METHOD_KEYS):
            raise PteError("spec: give either 'methods' or one method's keys at the top level, not both")
        methods = spec["methods"]
        if not isinstance(methods, list) or not methods:
            raise PteError("spec: 'methods' must be a non-empty list")
    else:
        methods = [{k: spec[k] for k in _METHOD_KEYS if k in spec}]
    for mi, ms in enumerate(methods):
        if not isinstance(ms, Mapping):
            raise PteError(f"spec: methods[{mi}] must be an object")
        unknown = set(ms) - {*_METHOD_KEYS, "comment"}
        if unknown:
            raise PteError(f"spec: methods[{mi}] has unknown keys {sorted(unknown)}")
        m = prog.method(ms.get("name", "forward"), ms.get("inputs", []), ms.get("outputs", []))
        for vi, v in enumerate(ms.get("values", [])):
            where = f"spec: method {m.name!r} values[{vi}]"
            if not isinstance(v, Mapping) or "name" not in v:
                raise PteError(f"{where}: needs a 'name'")
            kind = v.get("type", "tensor")
            if kind == "tensor":
                unknown = set(v) - _TENSOR_KEYS
                if unknown:
                    raise PteError(f"{where}: unknown keys {sorted(unknown)}")
                if "dtype" not in v or "sizes" not in v:
                    raise PteError(f"{where}: a tensor needs 'dtype' and 'sizes'")
                m.tensor(v["name"], v["dtype"], v["sizes"], bool(v.get("dynamic", False)),
                         dim_order=v.get("dim_order"), planned=bool(v.get("planned", True)))
            elif kind in ("int", "bool", "double"):
                if "value" not in v:
                    raise PteError(f"{where}: an {kind} needs a 'value'")
                getattr(m, f"{kind}_value")(v["name"], v["value"])
            else:
                raise PteError(f"{where}: unknown type {kind!r} (tensor, int, bool, double)")
        for ci, c in enumerate(ms.get("delegate_calls", [])):
            where = f"spec: method {m.name!r} delegate_calls[{ci}]"
            if not isinstance(c, Mapping):
                raise PteError(f"{where}: must be an object")
            unknown = set(c) - _CALL_KEYS
            if unknown:
                raise PteError(f"{where}: unknown keys {sorted(unknown)}")
            if "backend_id" not in c:
                raise PteError(f"{where}: needs a 'backend_id'")
            m.delegate_call(c["backend_id"], _blob(c, base, where, deps), c.get("args", []),
                            compile_specs(c.get("compile_specs"), where))
    return prog


def load_spec(path: Union[str, os.PathLike], deps: Optional[List[str]] = None) -> Program:
    """Reads a spec file; relative blob paths are relative to the spec's directory."""
    p = Path(path)
    try:
        spec = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise PteError(f"cannot read spec {str(p)!r}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise PteError(f"spec {str(p)!r} is not valid JSON: {e}") from e
    return program_from_spec(spec, p.parent, deps)
