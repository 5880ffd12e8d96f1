"""Shared helpers for the export-side tests: GPU-free NvInfer engines, TensorRT
blobs and .pte programs built in memory with etrt's own writers.

Everything here is pure data; the .pte writer needs the ExecuTorch wheel's
flatc (present in the project venv).
"""

from __future__ import annotations

import struct
from typing import Dict, List, Optional, Sequence, Tuple

from etrt import blob
from etrt.pte import Program
from etrt.gpufree import DTYPES as REF_DTYPES, checksum
from etrt.signature import Signature

# --------------------------------------------------------------------------
# GPU-free NvInfer engines (format: nvinfer/src/format.h)


def _shape(dims: Sequence[int]) -> bytes:
    return struct.pack("<B", len(dims)) + b"".join(struct.pack("<q", d) for d in dims)


def _str(s: str) -> bytes:
    raw = s.encode()
    return struct.pack("<I", len(raw)) + raw


def gpufree_op(kind: int, a: int = -1, b: int = -1, c: int = -1, d: int = -1, out: int = -1,
               factor: float = 1.0) -> bytes:
    """One op record of format v2 (25 bytes)."""
    return struct.pack("<Biiiiif", kind, a, b, c, d, out, factor)


def gpufree_engine(label: str, inputs: Sequence[Tuple[str, str, Sequence[int]]],
                   outputs: Sequence[Tuple[str, str, Sequence[int]]],
                   profiles: Sequence[Sequence[Tuple[Sequence[int], Sequence[int], Sequence[int]]]],
                   *, shape_tensors: Sequence[str] = (), on_host: Sequence[str] = (),
                   data_dependent: Sequence[str] = (), kv_updates: Optional[Dict[str, Tuple[str, str, str]]] = None,
                   cuda_mode: bool = False, streamable_weights: bool = False, flags: Optional[int] = None,
                   ops: Optional[bytes] = None, version: int = 2, trailing: bytes = b"") -> bytes:
    """A GPU-free NvInfer engine (format v2). ``profiles[p][k]`` = (min, opt, max) of
    input k under profile p. Each output is an identity copy of the first input
    of its dtype and declared shape (of input ``k % len(inputs)`` when there is
    none, which the runtime refuses), except those in ``kv_updates``:
    ``{output: (cache, update, write_indices)}`` (input names) get a
    kv_cache_update op, which makes the output alias the cache input. ``ops``
    replaces the op table (count included); ``flags``, ``version`` and
    ``trailing`` forge the header and payload."""
    kv_updates = kv_updates or {}
    if flags is None:
        flags = 1 | (2 if cuda_mode else 0) | (4 if streamable_weights else 0)
    payload = _str(label) + struct.pack("<Bqq", flags, 0, 0)
    io = [(n, True, d, s) for n, d, s in inputs] + [(n, False, d, s) for n, d, s in outputs]
    ids = {n: k for k, (n, _, _, _) in enumerate(io)}
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
    if ops is None:
        ops = struct.pack("<I", len(outputs))
        for k, (name, _, _) in enumerate(outputs):
            if name in kv_updates:
                cache, update, where = kv_updates[name]
                ops += gpufree_op(7, ids[cache], ids[update], ids[where], out=ids[name])
            else:
                same = [i for i, (_, d, sh) in enumerate(inputs) if (d, list(sh)) == (outputs[k][1], list(outputs[k][2]))]
                ops += gpufree_op(6, same[0] if same else k % max(1, len(inputs)), out=len(inputs) + k)  # identity
    payload += ops + trailing
    header = b"ETRF" + struct.pack("<IQII", version, len(payload), checksum(payload), 0)
    return header + payload


# GPU-free NvInfer engines serialized by the C++ builder (nvinfer/src/builder.cpp, format v2),
# captured once so the Python reader is held to the C++ writer's layout:
#   Builder b("decoder"); inputs ids, pos int64 [1,-1]; output logits float32 [1,-1,4];
#   profile 0 = [1,1], profile 1 = [1,2..128] opt [1,64]; constants table [16,8], w [8,4];
#   embedding(ids, table, hidden); matmul(hidden, w, logits); switch cost 1234 ns; device memory 4096.
CPP_ENGINE_HEX = (
    "45545246020000005504000000000000b1f87d0300000000070000006465636f64657201d204000000000000001000000000"
    "00000300000003000000696473010006020100000000000000ffffffffffffffff03000000706f7301000602010000000000"
    "0000ffffffffffffffff060000006c6f67697473000000030100000000000000ffffffffffffffff04000000000000000200"
    "0000050000007461626c65021000000000000000080000000000000080000000000000000000003f0000003f0000003f0000"
    "003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f"
    "0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000"
    "003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f"
    "0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000"
    "003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f"
    "0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000"
    "003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f"
    "0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000"
    "003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f"
    "0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0000003f0100"
    "000077020800000000000000040000000000000020000000000000000000803e0000803e0000803e0000803e0000803e0000"
    "803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e"
    "0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000803e0000"
    "803e0000803e010000000600000068696464656e000200000002010000000000000001000000000000000201000000000000"
    "0001000000000000000201000000000000000100000000000000020100000000000000010000000000000002010000000000"
    "0000010000000000000002010000000000000001000000000000000201000000000000000200000000000000020100000000"
    "0000004000000000000000020100000000000000800000000000000002010000000000000002000000000000000201000000"
    "000000004000000000000000020100000000000000800000000000000002000000010000000003000000ffffffffffffffff"
    "050000000000803f050500000004000000ffffffffffffffff020000000000803f"
)

#   Builder b("kv_step"); inputs q float32 [1,-1,4], cache float32 [1,8,4], new_kv float32 [1,-1,4],
#   write_at int64 [1]; outputs attn float32 [1,-1,4], cache_out float32 [1,8,4]; one profile
#   (q, new_kv: [1,1,4] / [1,1,4] / [1,8,4]); constant wq [4,4]; matmul(q, wq, qp);
#   kv_cache_update(cache, new_kv, write_at, cache_out); causal_attention(qp, cache_out, cache_out,
#   write_at, 0.5, attn); set_memory_kind(kDevice); enable_weight_streaming().
CPP_KV_ENGINE_HEX = (
    "4554524602000000ae020000000000006e4f470b00000000070000006b765f73746570070000000000000000000000000000"
    "0000060000000100000071010000030100000000000000ffffffffffffffff04000000000000000500000063616368650100"
    "0003010000000000000008000000000000000400000000000000060000006e65775f6b76010000030100000000000000ffff"
    "ffffffffffff04000000000000000800000077726974655f6174010006010100000000000000040000006174746e00000003"
    "0100000000000000ffffffffffffffff04000000000000000900000063616368655f6f757400000003010000000000000008"
    "0000000000000004000000000000000100000002000000777102040000000000000004000000000000001000000000000000"
    "0000003e0000003e0000003e0000003e0000003e0000003e0000003e0000003e0000003e0000003e0000003e0000003e0000"
    "003e0000003e0000003e0000003e010000000200000071700001000000030100000000000000010000000000000004000000"
    "0000000003010000000000000001000000000000000400000000000000030100000000000000080000000000000004000000"
    "0000000003010000000000000008000000000000000400000000000000030100000000000000080000000000000004000000"
    "0000000003010000000000000008000000000000000400000000000000030100000000000000010000000000000004000000"
    "0000000003010000000000000001000000000000000400000000000000030100000000000000080000000000000004000000"
    "0000000001010000000000000001010000000000000001010000000000000003000000050000000006000000ffffffffffff"
    "ffff070000000000803f07010000000200000003000000ffffffff050000000000803f080700000005000000050000000300"
    "0000040000000000003f"
)


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
             signature: Optional[Signature] = None, engine: Optional[bytes] = None,
             aliased_io: Sequence[Tuple[str, str, str]] = (), bindings: Optional[List[blob.IoBinding]] = None) -> bytes:
    """A TR01 blob (TR02 with ``aliased_io``, (output, input, kind) triples);
    ``engine`` defaults to opaque bytes (an unknown TensorRT plan).
    ``bindings`` replaces the io_bindings built from ``inputs`` and ``outputs``."""
    md = blob.Metadata(
        io_bindings=bindings if bindings is not None else
        [blob.IoBinding(n, d, list(s), True) for n, d, s in inputs]
        + [blob.IoBinding(n, d, list(s), False) for n, d, s in outputs],
        aliased_io=[blob.AliasedIo(o, i, k) for o, i, k in aliased_io],
        profile_signature=signature.to_blob() if signature is not None else None,
    )
    return blob.write_blob(md, engine if engine is not None else b"\x7fopaque-tensorrt-plan" * 3)


def gpufree_blob(label: str, inputs, outputs, profiles, signature: Optional[Signature] = None,
                 binding_inputs=None) -> bytes:
    """A blob around a GPU-free NvInfer engine with the same IO."""
    eng = gpufree_engine(label, inputs, outputs, profiles)
    return trt_blob(binding_inputs or inputs, outputs, signature, eng)


# --------------------------------------------------------------------------
# Programs


def pte_bytes(build, storage: str = "segment") -> bytes:
    """``build(method)`` declares values and delegate calls on 'forward'."""
    prog = Program(storage)
    m = prog.method("forward")
    build(m)
    return prog.to_bytes()


def mutated_pte_bytes(build, mutate, storage: str = "segment") -> bytes:
    """Like :func:`pte_bytes`, but ``mutate(program_json)`` edits the flatc
    JSON before it is encoded: the packer's own path, for programs it would
    never write (a deprecated constant_buffer, a constant tensor)."""

    class Mutated(Program):
        def _layout(self):
            program, inline, segments = super()._layout()
            mutate(program)
            return program, inline, segments

    prog = Mutated(storage)
    build(prog.method("forward"))
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


#: Findings about the build and machine that validate, not the model: every fake TensorRT plan of these tests gets
#: needs-cuda-build on a libetrt built without CUDA (the GPU-free NvInfer refuses plans at load).
BUILD_CODES = ("needs-cuda-build",)


def codes(result, build: bool = False) -> Dict[str, List[str]]:
    """{severity: [codes]} of a ValidationResult, for compact asserts; the build's findings (BUILD_CODES) only with
    ``build=True``."""
    out: Dict[str, List[str]] = {"error": [], "warning": [], "info": []}
    for f in result.findings:
        if build or f.code not in BUILD_CODES:
            out[f.severity].append(f.code)
    return out


def model_warnings(result) -> list:
    """The result's warnings about the model (without the build's, BUILD_CODES)."""
    return [f for f in result.warnings if f.code not in BUILD_CODES]


def plan_warnings(n_plans: int) -> int:
    """The needs-cuda-build warnings validate gives for ``n_plans`` TensorRT plans with this build's libetrt."""
    from etrt import _reader

    return 0 if _reader.build_has_cuda() else n_plans
