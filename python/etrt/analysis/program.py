"""A program's delegates, decoded: :func:`load_program` and
:func:`lowered_modules` read the sources validation takes,
:func:`analyze_pte` and :func:`decode_blob` decode each delegate."""

from __future__ import annotations

import os
import struct
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .. import blob as _blob
from ..blob.reader import parse_blob_in_place
from ..gpufree import try_read_gpufree_engine
from ..signature import Signature, SignatureError
from .delegates import DelegateCall, DelegateInfo, DelegateRef, TensorArg


def load_program(source: Any) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Turns ``source`` into ``(read_pte dict, path or None)``.

    ``source``: a path, the file's bytes, an object with a ``.buffer`` holding
    the bytes (ExecuTorch's ``ExecutorchProgramManager``; unverified here since
    PyTorch cannot be installed in etrt's CI), or an already decoded
    :func:`etrt.pte.read_pte` dict. Raises :class:`etrt.pte.PteError` for a
    file that is not a readable ``.pte`` and ``TypeError`` for anything else.
    """
    from ..pte import read_pte

    if isinstance(source, Mapping) and "program" in source and "delegates" in source:
        return dict(source), source.get("path")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return read_pte(bytes(source)), None
    if isinstance(source, (str, os.PathLike)):
        return read_pte(source), os.fspath(source)
    buf = getattr(source, "buffer", None)
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return read_pte(bytes(buf)), None
    raise TypeError(
        f"cannot validate a {type(source).__name__}: pass a .pte path or bytes, an ExecuTorch program with a "
        "'.buffer' (ExecutorchProgramManager, after to_executorch()), or lowered delegates "
        "(objects with backend_id and processed_bytes)")


def lowered_modules(source: Any) -> Optional[List[Tuple[str, str, bytes]]]:
    """``[(method, backend_id, processed_bytes)]`` when ``source`` is a lowered
    program before serialization: an iterable of objects with ``backend_id``
    and ``processed_bytes`` (ExecuTorch's ``LoweredBackendModule``) or of
    ``(backend_id, bytes)`` pairs, or an object with ``exported_program()``
    whose graph modules hold such modules (``EdgeProgramManager`` after
    ``to_backend``). Duck-typed: ExecuTorch's Python API needs PyTorch, which
    etrt's CI cannot install, so this path is unverified against it."""

    def as_lowered(obj: Any) -> Optional[Tuple[str, bytes]]:
        backend_id = getattr(obj, "backend_id", None)
        data = getattr(obj, "processed_bytes", None)
        if isinstance(backend_id, str) and isinstance(data, (bytes, bytearray, memoryview)):
            return backend_id, bytes(data)
        if (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str)
                and isinstance(obj[1], (bytes, bytearray, memoryview))):
            return obj[0], bytes(obj[1])
        return None

    if isinstance(source, (str, bytes, bytearray, memoryview, Mapping, os.PathLike)):
        return None
    if isinstance(getattr(source, "buffer", None), (bytes, bytearray, memoryview)):
        return None  # a serialized program (ExecutorchProgramManager): the .pte path checks more
    if callable(getattr(source, "exported_program", None)):
        names = sorted(getattr(source, "methods", None) or ["forward"])
        out = []
        for name in names:
            try:
                ep = source.exported_program(name)
            except TypeError:
                ep = source.exported_program()
            gm = getattr(ep, "graph_module", None)
            modules = gm.modules() if gm is not None and hasattr(gm, "modules") else []
            for m in modules:
                lowered = as_lowered(m)
                if lowered is not None:
                    out.append((str(name), *lowered))
        return out
    if isinstance(source, Iterable):
        items = list(source)
        lowered_items = [as_lowered(x) for x in items]
        if items and all(x is not None for x in lowered_items):
            return [("<lowered>", b, d) for b, d in lowered_items]  # type: ignore[misc]
    return None


# --------------------------------------------------------------------------
# Decoding delegates


def decode_blob(d: DelegateInfo) -> None:
    """Fills in what a TensorRT delegate's blob holds (header, metadata,
    engine, signature, GPU-free NvInfer engine, and the runtime's resolution of the
    blob against a GPU-free NvInfer engine) or why it cannot be read."""
    if not d.is_tensorrt:
        return
    if not isinstance(d.data, bytes):
        d.data = bytes(d.data)  # engine_span indexes it
    data = d.data
    if len(data) >= _blob.HEADER_SIZE and data[:4] in (_blob.MAGIC_TR01, _blob.MAGIC_TR02):
        magic, mo, ms, eo, es, _ = struct.unpack(_blob.HEADER_FORMAT, data[:_blob.HEADER_SIZE])
        d.header = {"magic": magic.decode(), "metadata_offset": mo, "metadata_size": ms,
                    "engine_offset": eo, "engine_size": es, "blob_size": len(data)}
    try:
        d.metadata, eo, es = parse_blob_in_place(data)
    except _blob.BlobError as e:
        d.blob_error = str(e)
        return
    # The engine is most of the blob, which d.data keeps: where it is rather than a copy of it, and the runtime's
    # reader is handed it in place.
    d.engine_span = (eo, es)
    if d.metadata.profile_signature is not None:
        try:
            d.blob_signature = Signature.from_blob(d.metadata.profile_signature)
        except SignatureError as e:
            d.signature_error = str(e)
    d.gpufree_engine, d.engine_error = try_read_gpufree_engine(data, eo, es)
    if d.gpufree_engine is not None:
        from .. import _reader

        try:
            d.resolution = _reader.resolve_delegate(data)
        except _reader.Refused:
            d.resolution = None  # a build that resolves no engines without a GPU (NVIDIA's TensorRT)


def analyze_pte(pte: Mapping[str, Any]) -> List[DelegateInfo]:
    """Decodes every delegate of a :func:`etrt.pte.read_pte` result: blob
    header and metadata, signature, GPU-free NvInfer engine, and the tensors each
    delegate call passes."""
    program = pte["program"]
    plans = program.get("execution_plan") or []
    calls: Dict[Tuple[int, int], List[DelegateCall]] = {}
    for mi, plan in enumerate(plans):
        for ci, chain in enumerate(plan.get("chains") or []):
            for ii, instr in enumerate(chain.get("instructions") or []):
                if instr.get("instr_args_type") == "DelegateCall":
                    a = instr.get("instr_args") or {}
                    calls.setdefault((mi, a.get("delegate_index", 0)), []).append(
                        DelegateCall(ci, ii, list(a.get("args") or [])))
    out = []
    for dd in pte["delegates"]:
        mi, di = dd["method_index"], dd["delegate_index"]
        cs = calls.get((mi, di), [])
        ref = DelegateRef(dd["method"] or f"method {mi}", mi, di, cs[0].instruction if cs else None, dd["id"] or "")
        raw = ((plans[mi].get("delegates") or [])[di].get("compile_specs") or []) if mi < len(plans) else []
        info = DelegateInfo(ref=ref, data=bytes(dd["data"]), location=dd["location"], storage_index=dd["index"],
                            compile_specs=dict(dd.get("compile_specs") or {}), calls=cs,
                            compile_spec_list=[(c.get("key") or "", bytes(c.get("value") or b"")) for c in raw])
        if cs:
            info.tensor_args = tensor_args(plans[mi], cs[0])
        decode_blob(info)
        out.append(info)
    return out


def tensor_args(plan: Mapping[str, Any], call: DelegateCall) -> Optional[List[TensorArg]]:
    from ..pte import describe_value

    values = plan.get("values") or []
    out = []
    for pos, vi in enumerate(call.args):
        if not 0 <= vi < len(values):
            return None  # a corrupt-program finding of etrt.validate
        v = describe_value(values[vi])
        if v["kind"] == "tensor":
            out.append(TensorArg(pos, vi, v))
    return out
