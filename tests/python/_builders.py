"""Shared helpers for the export-side tests: reference engines, TensorRT
blobs and .pte programs built in memory with etrt's own writers.

Everything here is pure data; the .pte writer needs the ExecuTorch wheel's
flatc (present in the project venv).
"""

from __future__ import annotations

import struct
from typing import Dict, List, Optional, Sequence, Tuple

from etrt import blob
from etrt.pte import Program
from etrt.reference_engine import DTYPES as REF_DTYPES, checksum
from etrt.signature import Signature

# --------------------------------------------------------------------------
# Reference engines (format: nvinfer/src/format.h)


def _shape(dims: Sequence[int]) -> bytes:
    return struct.pack("<B", len(dims)) + b"".join(struct.pack("<q", d) for d in dims)


def _str(s: str) -> bytes:
    raw = s.encode()
    return struct.pack("<I", len(raw)) + raw


def ref_engine(label: str, inputs: Sequence[Tuple[str, str, Sequence[int]]],
               outputs: Sequence[Tuple[str, str, Sequence[int]]],
               profiles: Sequence[Sequence[Tuple[Sequence[int], Sequence[int], Sequence[int]]]],
               *, shape_tensors: Sequence[str] = (), on_host: Sequence[str] = (),
               data_dependent: Sequence[str] = ()) -> bytes:
    """A reference engine whose outputs are identity copies of inputs.
    ``profiles[p][k]`` = (min, opt, max) of input k under profile p."""
    payload = _str(label) + struct.pack("<Bqq", 1, 0, 0)
    io = [(n, True, d, s) for n, d, s in inputs] + [(n, False, d, s) for n, d, s in outputs]
    payload += struct.pack("<I", len(io))
    for name, is_input, dtype, shape in io:
        io_flags = (name in shape_tensors) | (name in on_host) << 1 | (name in data_dependent) << 2
        payload += _str(name) + struct.pack("<BBB", is_input, io_flags, REF_DTYPES.index(dtype))
        payload += _shape(shape)
    payload += struct.pack("<I", 0) + struct.pack("<I", 0)  # constants, intermediates
    payload += struct.pack("<I", len(profiles))
    for prof in profiles:
        for mn, opt, mx in prof:
            payload += _shape(mn) + _shape(opt) + _shape(mx)
    payload += struct.pack("<I", len(outputs))
    for k in range(len(outputs)):
        # identity (kind 6): output k = input (k mod n_inputs)
        payload += struct.pack("<Biiif", 6, k % max(1, len(inputs)), -1, len(inputs) + k, 1.0)
    header = b"ETRF" + struct.pack("<IQII", 1, len(payload), checksum(payload), 0)
    return header + payload


# --------------------------------------------------------------------------
# Signatures and blobs

DECODE = ([1, 1], [1, 1], [1, 1])


def prefill(max_seq: int = 2048, min_seq: int = 32, opt_seq: int = 512) -> Tuple[List[int], List[int], List[int]]:
    return ([1, min_seq], [1, opt_seq], [1, max_seq])


def llm_signature(inputs: Sequence[str] = ("input_ids",), max_seq: int = 2048, min_seq: int = 32,
                  symbol: Optional[str] = "seq_len", extra_profiles: int = 0) -> Signature:
    """Profile 0 = decode (seq 1), profile 1 = prefill (seq min..max)."""
    profiles = [DECODE, prefill(max_seq, min_seq, min(512, max_seq))]
    for k in range(extra_profiles):
        profiles.append(([1, max_seq], [1, max_seq], [1, max_seq]))
    return Signature.from_bounds({n: profiles for n in inputs},
                                 symbolic_dims={symbol: [(n, 1) for n in inputs]} if symbol else None)


def trt_blob(inputs: Sequence[Tuple[str, str, Sequence[int]]], outputs: Sequence[Tuple[str, str, Sequence[int]]],
             signature: Optional[Signature] = None, engine: Optional[bytes] = None) -> bytes:
    """A TR01 blob; ``engine`` defaults to opaque bytes (an unknown TensorRT plan)."""
    md = blob.Metadata(
        io_bindings=[blob.IoBinding(n, d, list(s), True) for n, d, s in inputs]
        + [blob.IoBinding(n, d, list(s), False) for n, d, s in outputs],
        profile_signature=signature.to_blob() if signature is not None else None,
    )
    return blob.write_blob(md, engine if engine is not None else b"\x7fopaque-tensorrt-plan" * 3)


def ref_blob(label: str, inputs, outputs, profiles, signature: Optional[Signature] = None,
             binding_inputs=None) -> bytes:
    """A blob around a reference engine with the same IO."""
    eng = ref_engine(label, inputs, outputs, profiles)
    return trt_blob(binding_inputs or inputs, outputs, signature, eng)


# --------------------------------------------------------------------------
# Programs


def pte_bytes(build, storage: str = "segment") -> bytes:
    """``build(method)`` declares values and delegate calls on 'forward'."""
    prog = Program(storage)
    m = prog.method("forward")
    build(m)
    return prog.to_bytes()


def llm_program(*, second_max: int = 2048, second_min: int = 32, second_profiles: int = 0,
                second_symbol: Optional[str] = "seq_len", planned_seq: int = 2048,
                with_static: bool = True, with_foreign: bool = True, with_dynamic_single: bool = False,
                second_signature: bool = True) -> bytes:
    """forward(input_ids[1,S]) -> logits:
    delegate 0: TensorRT 2-profile  input_ids -> hidden         (seq_len)
    delegate 1: TensorRT 1-profile static  bias[1,16] -> bias_out (optional)
    delegate 2: a foreign backend (optional)
    delegate 3: TensorRT 2-profile  hidden -> logits            (seq_len, configurable)
    delegate 4: TensorRT 1-profile dynamic  input_ids -> echo   (optional)
    """
    S = planned_seq

    def build(m):
        m.tensor("input_ids", "int64", [1, S], dynamic=True)
        m.tensor("hidden", "int64", [1, S], dynamic=True)
        m.tensor("logits", "int64", [1, S], dynamic=True)
        m.tensor("bias", "float32", [1, 16])
        m.tensor("bias_out", "float32", [1, 16])
        m.tensor("echo", "int64", [1, S], dynamic=True)
        m.int_value("n", 3)
        inputs, outputs = ["input_ids", "bias"], ["logits"]
        sig0 = llm_signature(("input_ids",))
        m.delegate_call("TensorRTBackend",
                        trt_blob([("input_ids", "int64", [1, -1])], [("hidden", "int64", [1, -1])], sig0),
                        ["input_ids", "n", "hidden"])
        if with_static:
            sig1 = Signature.from_bounds({"bias": [([1, 16], [1, 16], [1, 16])]})
            m.delegate_call("TensorRTBackend",
                            trt_blob([("bias", "float32", [1, 16])], [("bias_out", "float32", [1, 16])], sig1),
                            ["bias", "bias_out"])
            outputs.append("bias_out")
        if with_foreign:
            m.delegate_call("XnnpackBackend", b"not-a-tensorrt-blob", ["bias", "bias_out"])
        sig3 = None
        if second_signature:
            sig3 = llm_signature(("hidden",), max_seq=second_max, min_seq=second_min, symbol=second_symbol,
                                 extra_profiles=second_profiles)
        m.delegate_call("TensorRTBackend",
                        trt_blob([("hidden", "int64", [1, -1])], [("logits", "int64", [1, -1])], sig3),
                        ["hidden", "logits"])
        if with_dynamic_single:
            sig4 = Signature.from_bounds({"input_ids": [([1, 1], [1, 64], [1, 2048])]},
                                         symbolic_dims={"seq_len": [("input_ids", 1)]})
            m.delegate_call("TensorRTBackend",
                            trt_blob([("input_ids", "int64", [1, -1])], [("echo", "int64", [1, -1])], sig4),
                            ["input_ids", "echo"])
            outputs.append("echo")
        m.set_io(inputs, outputs)

    return pte_bytes(build)


def single_delegate_program(blob_bytes: bytes, inputs: Sequence[Tuple[str, str, Sequence[int], bool]],
                            outputs: Sequence[Tuple[str, str, Sequence[int], bool]],
                            backend_id: str = "TensorRTBackend", storage: str = "segment") -> bytes:
    """forward with one delegate call; tensors are (name, dtype, sizes, dynamic)."""

    def build(m):
        for n, d, s, dyn in list(inputs) + list(outputs):
            m.tensor(n, d, s, dynamic=dyn)
        m.delegate_call(backend_id, blob_bytes, [t[0] for t in inputs] + [t[0] for t in outputs])
        m.set_io([t[0] for t in inputs], [t[0] for t in outputs])

    return pte_bytes(build, storage)


def codes(result) -> Dict[str, List[str]]:
    """{severity: [codes]} of a ValidationResult, for compact asserts."""
    out: Dict[str, List[str]] = {"error": [], "warning": [], "info": []}
    for f in result.findings:
        out[f.severity].append(f.code)
    return out
