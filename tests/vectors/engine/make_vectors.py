"""Generates the shared engine-format test vectors (the GPU-free NvInfer engine, magic
ETRF, nvinfer/src/format.h).

    .venv/bin/python tests/vectors/engine/make_vectors.py [OUT_DIR]

For each valid case it writes <case>.engine (the bytes) and <case>.json (what
a reader must decode from them: every field, the ops, and the scratch size
getDeviceMemorySizeV2() reports). Under invalid/ it writes engines the runtime
refuses and invalid.json, which gives for each the complete message of the one
reader, the GPU-free NvInfer's deserializer: tests/engine/format_test.cpp runs
every vector through deserialize_model, and tests/python/test_gpufree.py
through libetrt (etrt.gpufree.read_gpufree_engine, which calls
etrt_engine_describe). The messages are recorded from that reader, each checked
here to contain the fragment that names the rule the case breaks, so a change
of wording shows in the diff. The pytest reruns this script and fails if the
committed files drift.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "python"))

from etrt.gpufree import GpufreeEngineError, checksum, read_gpufree_engine  # noqa: E402

F32, F16, BF16, I8, U8, I32, I64, BOOL = range(8)
EMBEDDING, ADD, ADD_BIAS, SCALE, MATMUL, IDENTITY, KV_CACHE_UPDATE, CAUSAL_ATTENTION = range(1, 9)
MAX_DIM = 2**31 - 1


def _name(n) -> bytes:
    return n if isinstance(n, bytes) else n.encode()


def _str(n) -> bytes:
    raw = _name(n)
    return struct.pack("<I", len(raw)) + raw


def _shape(dims) -> bytes:
    return struct.pack("<B", len(dims)) + b"".join(struct.pack("<q", d) for d in dims)


def inp(name, dtype, shape, flags=0):
    return (name, True, flags, dtype, list(shape))


def out(name, dtype, shape, flags=0):
    return (name, False, flags, dtype, list(shape))


def op(kind, a=-1, b=-1, c=-1, d=-1, o=-1, factor=1.0):
    return (kind, a, b, c, d, o, factor)


def payload(label="engine", io=(), constants=(), intermediates=(), profiles=(), ops=(), flags=1, switch_cost=0,
            device_memory=0) -> bytes:
    """The payload of format v2. constants: (name, shape, values) with values a list of floats or a count
    (that many 0.5s); profiles[p][k] = (min, opt, max) of the k-th input."""
    p = _str(label) + struct.pack("<Bqq", flags, switch_cost, device_memory)
    p += struct.pack("<I", len(io))
    for name, is_input, io_flags, dtype, shape in io:
        p += _str(name) + struct.pack("<BBB", is_input, io_flags, dtype) + _shape(shape)
    p += struct.pack("<I", len(constants))
    for name, shape, values in constants:
        values = [0.5] * values if isinstance(values, int) else values
        p += _str(name) + _shape(shape) + struct.pack("<Q", len(values)) + struct.pack(f"<{len(values)}f", *values)
    p += struct.pack("<I", len(intermediates))
    for name, dtype in intermediates:
        p += _str(name) + struct.pack("<B", dtype)
    p += struct.pack("<I", len(profiles))
    for row in profiles:
        for mn, opt, mx in row:
            p += _shape(mn) + _shape(opt) + _shape(mx)
    p += struct.pack("<I", len(ops))
    for o in ops:
        p += struct.pack("<Biiiiif", *o)
    return p


def seal(body: bytes, version: int = 2, size_delta: int = 0, bad_checksum: bool = False, reserved: int = 0) -> bytes:
    """The 24-byte header around a payload."""
    crc = checksum(body) ^ (1 if bad_checksum else 0)
    return b"ETRF" + struct.pack("<IQII", version, len(body) + size_delta, crc, reserved) + body


def engine(**kw) -> bytes:
    return seal(payload(**kw))


# --------------------------------------------------------------------------
# Valid engines

S = lambda lo, opt, hi: ([1, lo], [1, opt], [1, hi])  # noqa: E731  token shapes [1, S]

DECODER = dict(
    label="decoder",
    io=[inp("ids", I64, [1, -1]), inp("pos", I64, [1, -1]), out("logits", F32, [1, -1, 4])],
    constants=[("table", [16, 8], [0.5] * 128), ("w", [8, 4], [0.25] * 32)],
    intermediates=[("hidden", F32)],
    profiles=[[S(1, 1, 1), S(1, 1, 1)], [S(2, 64, 128), S(2, 64, 128)]],
    ops=[op(EMBEDDING, 0, 3, o=5), op(MATMUL, 5, 4, o=2)],
    switch_cost=1234, device_memory=4096, flags=1 | 8)  # tracing; TensorRT 8.6's exclusive profiles

KV_STEP = dict(
    label="kv_step",
    io=[inp("q", F32, [1, -1, 4]), inp("cache", F32, [1, 8, 4]), inp("new_kv", F32, [1, -1, 4]),
        inp("write_at", I64, [1]), out("attn", F32, [1, -1, 4]), out("cache_out", F32, [1, 8, 4])],
    constants=[("wq", [4, 4], [0.125] * 16)],
    intermediates=[("qp", F32)],
    profiles=[[([1, 1, 4], [1, 1, 4], [1, 8, 4]), ([1, 8, 4],) * 3, ([1, 1, 4], [1, 1, 4], [1, 8, 4]), ([1],) * 3]],
    ops=[op(MATMUL, 0, 6, o=7), op(KV_CACHE_UPDATE, 1, 2, 3, o=5), op(CAUSAL_ATTENTION, 7, 5, 5, 3, o=4, factor=0.5)],
    flags=7)

ELEMENTWISE = dict(
    label="elementwise",
    io=[inp("x", F32, [-1, 3]), inp("y", F32, [-1, 3]), inp("tokens", I32, [2]), out("z", F32, [-1, 3]),
        out("tokens_out", I32, [2])],
    constants=[("bias", [3], [1.0, 2.0, 3.0])],
    intermediates=[("sum", F32), ("biased", F32)],
    profiles=[[([1, 3], [2, 3], [4, 3]), ([1, 3], [2, 3], [4, 3]), ([2],) * 3],
              [([5, 3], [8, 3], [64, 3]), ([5, 3], [8, 3], [64, 3]), ([2],) * 3]],
    ops=[op(ADD, 0, 1, o=6), op(ADD_BIAS, 6, 5, o=7), op(SCALE, 7, o=3, factor=-2.0), op(IDENTITY, 2, o=4)],
    flags=0)

# Shape tensors, host placement and data-dependent outputs load (the backend refuses such engines, not the engine).
FLAGGED_IO = dict(
    label="flagged_io",
    io=[inp("x", F32, [4]), inp("dims", I32, [2], flags=1 | 2), out("y", F32, [4], flags=2),
        out("w", F32, [-1], flags=4)],
    profiles=[[([4],) * 3, ([2],) * 3]],
    ops=[op(IDENTITY, 0, o=2), op(IDENTITY, 0, o=3)])

NO_INPUTS = dict(
    label="constant_only",
    io=[out("c_out", F32, [2, 2])],
    constants=[("c", [2, 2], [1.0, 2.0, 3.0, 4.0])],
    profiles=[[]],
    ops=[op(IDENTITY, 1, o=0)])

# Names are any UTF-8 without NUL: quotes, backslashes, tabs and non-ASCII included; 4096 bytes at most.
ODD_NAMES = dict(
    label="n" * 4096,
    io=[inp("entr\u00e9e 'q' \\ \t", F32, [1]), out("x" * 4096, F32, [1])],
    profiles=[[([1],) * 3]],
    ops=[op(IDENTITY, 0, o=1)])

# Intermediates of 2^36 - 32 bytes: the plan rounds up to exactly the 64 GiB scratch limit.
SCRATCH_AT_LIMIT = dict(
    label="scratch_at_limit",
    io=[inp("x", F32, [-1, -1]), out("y", F32, [-1, -1])],
    intermediates=[("big", F32)],
    profiles=[[([1, 1], [1, 1], [8, MAX_DIM])]],
    ops=[op(SCALE, 0, o=2, factor=2.0), op(SCALE, 2, o=1, factor=0.5)])

VALID = {
    "decoder": DECODER,
    "kv_step": KV_STEP,
    "elementwise": ELEMENTWISE,
    "flagged_io": FLAGGED_IO,
    "constant_only": NO_INPUTS,
    "odd_names": ODD_NAMES,
    "scratch_at_limit": SCRATCH_AT_LIMIT,
}


def describe(data: bytes) -> dict:
    """What a reader must decode from ``data``, as JSON."""
    e = read_gpufree_engine(data)
    return {
        "label": e.label, "tracing": e.tracing, "cuda_mode": e.cuda_mode, "streamable_weights": e.streamable_weights,
        "profile_sharing": e.profile_sharing,
        "switch_cost_ns": e.switch_cost_ns, "requested_device_memory": e.requested_device_memory,
        "device_memory_size": e.device_memory_size,
        "io": [{"name": t.name, "is_input": t.is_input, "dtype": t.dtype, "shape": list(t.shape),
                "shape_tensor": t.is_shape_tensor, "on_host": t.on_host, "data_dependent": t.data_dependent}
               for t in e.io],
        "constants": [{"name": n, "shape": list(s)} for n, s in zip(e.constant_names, e.constant_shapes)],
        "intermediates": [{"name": n, "dtype": d} for n, d in zip(e.intermediate_names, e.intermediate_dtypes)],
        "profiles": [[{"min": list(b.min), "opt": list(b.opt), "max": list(b.max)} for b in row]
                     for row in e.profiles],
        "ops": [{"kind": o.kind, "a": o.a, "b": o.b, "c": o.c, "d": o.d, "out": o.out, "factor": o.factor}
                for o in e.ops],
    }


# --------------------------------------------------------------------------
# Engines the runtime refuses: (bytes, a fragment naming the rule)


def variant(base: dict, **changes) -> bytes:
    d = dict(base)
    d.update(changes)
    return engine(**d)


def replace_io(base: dict, k: int, entry) -> bytes:
    io = list(base["io"])
    io[k] = entry
    return variant(base, io=io)


def replace_op(base: dict, k: int, new_op) -> bytes:
    ops = list(base["ops"])
    ops[k] = new_op
    return variant(base, ops=ops)


def counted(count_offset_body: bytes, count: int) -> bytes:
    return count_offset_body + struct.pack("<I", count)


def prefix_through_flags(label="e", flags=1) -> bytes:
    return _str(label) + struct.pack("<Bqq", flags, 0, 0)


ONE_IO = dict(label="one", io=[inp("x", F32, [4]), out("y", F32, [4])], profiles=[[([4],) * 3]],
              ops=[op(IDENTITY, 0, o=1)])
TOKENS = dict(label="tok", io=[inp("ids", I64, [1, -1]), out("h", F32, [1, -1, 8])],
              constants=[("table", [16, 8], 128)], profiles=[[S(1, 4, 16)]], ops=[op(EMBEDDING, 0, 2, o=1)])


def invalid_cases() -> dict:
    good = engine(**DECODER)
    body = good[24:]
    cases = {
        # Header
        "not_etrf": (b"ftrt" + good[4:], "do not start with its magic 'ETRF'"),
        "truncated_header": (good[:10], "truncated: 10 bytes, the header alone is 24"),
        "version_1": (seal(body, version=1), "format version 1 is not the version this etrt reads (2)"),
        "version_3": (seal(body, version=3), "format version 3 is not the version this etrt reads (2)"),
        "payload_size_mismatch": (seal(body, size_delta=1), "the header promises a"),
        "trailing_after_payload": (seal(body) + b"\x00", "bytes follow it (truncated or padded blob)"),
        "checksum_mismatch": (seal(body, bad_checksum=True), "checksum mismatch"),
        "reserved_nonzero": (seal(body, reserved=1), "reserved header bytes are not zero"),
        # The decoder: counts against limits and bytes before anything is built
        "label_above_name_limit": (seal(struct.pack("<I", 5000) + b"x" * 16), "the label is 5000 bytes long, above "
                                                                               "the limit of 4096"),
        "label_truncated": (seal(struct.pack("<I", 4000) + b"x" * 16), "truncated: the label needs 4000 bytes"),
        "unknown_flags": (variant(ONE_IO, flags=16), "unknown flags 16"),
        "io_count_above_limit": (seal(counted(prefix_through_flags(), 0xFFFFFFFF)),
                                 "the IO tensor count 4294967295 is above the limit of 16384"),
        "io_count_past_the_bytes": (seal(counted(prefix_through_flags(), 16384)),
                                    "the IO tensor count 16384 needs at least 131072 more bytes, only 0 remain"),
        "io_name_above_limit": (seal(counted(prefix_through_flags(), 1) + struct.pack("<I", 4097) + b"\x00" * 16),
                                "an IO tensor name is 4097 bytes long, above the limit of 4096"),
        "io_unknown_io_flags": (replace_io(ONE_IO, 0, inp("x\x01", F32, [4], flags=8)),
                                "IO tensor 'x\\x01' has unknown io_flags 8"),
        "io_unknown_dtype": (replace_io(ONE_IO, 0, inp("x", 8, [4])), "IO tensor 'x' has unknown dtype 8"),
        "io_rank_above_8": (replace_io(ONE_IO, 0, inp("x", F32, [1] * 9)),
                            "an IO tensor shape has rank 9, above the maximum 8"),
        "constant_count_above_limit": (seal(_const_count_case()),
                                       "the constant count 65537 is above the limit of 65536"),
        "constant_values_past_the_bytes": (_constant_values_case(),
                                           "constant 'c' claims 1000000 values, only 0 fit in the remaining bytes"),
        "intermediate_unknown_dtype": (variant(ONE_IO, intermediates=[("t", 9)]),
                                       "intermediate 't' has unknown dtype 9"),
        "profile_count_above_limit": (variant(ONE_IO, profiles=[[([4],) * 3]] * 257),
                                      "the profile count 257 is above the limit of 256"),
        "profiles_without_inputs": (variant(NO_INPUTS, profiles=[[], []]), "an engine without inputs has one profile"),
        "op_count_above_limit": (_op_count_case(65537), "the op count 65537 is above the limit of 65536"),
        "op_count_past_the_bytes": (_op_count_case(2), "the op count 2 needs at least 50 more bytes, only 0 remain"),
        "trailing_bytes": (seal(payload(**ONE_IO) + b"\x00"), "1 unexpected bytes after the last op"),
        # validate(): names
        "empty_label": (variant(ONE_IO, label=""), "the engine has no label"),
        "label_with_nul": (variant(ONE_IO, label="lab\x00el"), "the label 'lab\\x00el' contains a NUL byte"),
        "label_not_utf8": (variant(ONE_IO, label=b"lab\xffel"), "the label 'lab\\xffel' is not valid UTF-8"),
        "no_io": (variant(ONE_IO, io=[], profiles=[[]], ops=[]), "the engine has no IO tensors"),
        "empty_name": (replace_io(ONE_IO, 1, out("", F32, [4])), "tensor #1 has an empty name"),
        "name_with_nul": (replace_io(ONE_IO, 1, out("y\x00z", F32, [4])),
                          "tensor #1 name 'y\\x00z' contains a NUL byte; NvInfer names are C strings"),
        "name_not_utf8": (replace_io(ONE_IO, 1, out(b"y\xc0\xafz", F32, [4])),
                          "tensor #1 name 'y\\xc0\\xafz' is not valid UTF-8"),
        "duplicate_names": (replace_io(ONE_IO, 1, out("x", F32, [4])), "tensor name 'x' is used twice"),
        "duplicate_constant_name": (variant(TOKENS, constants=[("ids", [16, 8], 128)]),
                                    "tensor name 'ids' is used twice"),
        # validate(): IO, constants, profiles, scalars
        "negative_dim": (replace_io(ONE_IO, 1, out("y", F32, [-2])), "IO tensor 'y' has an invalid shape [-2]"),
        "dim_above_limit": (replace_io(ONE_IO, 1, out("y", F32, [2**31])), "has an invalid shape [2147483648]"),
        "input_data_dependent": (replace_io(ONE_IO, 0, inp("x", F32, [4], flags=4)),
                                 "input 'x' is marked data-dependent; only outputs can be"),
        "output_shape_tensor": (replace_io(ONE_IO, 1, out("y", F32, [4], flags=1)),
                                "output 'y' is marked as a shape tensor; only inputs can be"),
        "no_outputs": (variant(ONE_IO, io=[inp("x", F32, [4])], ops=[]), "the engine has no outputs"),
        "constant_dynamic": (variant(TOKENS, constants=[("table", [-1, 8], 0)]),
                             "constant 'table' has an invalid shape [-1, 8]; constants need static dims"),
        "constant_value_count": (variant(TOKENS, constants=[("table", [16, 8], 127)]),
                                 "constant 'table' of shape [16, 8] needs 128 values, got 127"),
        "no_profiles": (variant(ONE_IO, profiles=[]), "the engine has no optimization profiles"),
        "profile_rank": (variant(TOKENS, profiles=[[([1], [1], [1])]]),
                         "profile 0, input 'ids': bounds min [1] opt [1] max [1] must be static shapes of the "
                         "declared rank 2"),
        "profile_static_mismatch": (variant(TOKENS, profiles=[[([2, 1], [2, 1], [2, 16])]]),
                                    "profile 0, input 'ids' dim 0: declared static 1 but the profile says min 2"),
        "profile_min_above_opt": (variant(TOKENS, profiles=[[S(8, 4, 16)]]), "needs min <= opt <= max, got 8 <= 4"),
        "profile_max_too_large": (variant(TOKENS, io=[inp("ids", I64, [-1, -1]), out("h", F32, [-1, -1, 8])],
                                          profiles=[[([1, 1], [1, 1], [MAX_DIM, MAX_DIM])]]),
                                  "max shape [2147483647, 2147483647] is too large"),
        "switch_cost_negative": (variant(ONE_IO, switch_cost=-1), "switch cost -1 ns is outside [0, 10000000000]"),
        "device_memory_2_pow_40": (variant(ONE_IO, device_memory=2**40),
                                   "device memory size 1099511627776 is above the limit 68719476736"),
        # validate(): ops
        "op_unknown_kind": (replace_op(ONE_IO, 0, op(9, 0, o=1)), "op #0 (unknown) has an unknown kind"),
        "op_kind_zero": (replace_op(ONE_IO, 0, op(0, 0, o=1)), "op #0 (unknown) has an unknown kind"),
        "op_out_out_of_range": (replace_op(ONE_IO, 0, op(IDENTITY, 0, o=2)),
                                "op #0 (identity) refers to a tensor that does not exist"),
        "op_operand_out_of_range": (replace_op(ONE_IO, 0, op(IDENTITY, 7, o=1)),
                                    "op #0 (identity) refers to a tensor that does not exist"),
        "op_operand_negative": (replace_op(ONE_IO, 0, op(IDENTITY, -5, o=1)), "refers to a tensor that does not exist"),
        "op_extra_operand": (replace_op(ONE_IO, 0, op(IDENTITY, 0, 0, o=1)),
                             "op #0 (identity) has operand 1 set, but identity takes 1"),
        "op_writes_input": (replace_op(ONE_IO, 0, op(IDENTITY, 1, o=0)),
                            "op #0 (identity) writes 'x', which is not an output or intermediate"),
        "op_writes_twice": (variant(ONE_IO, ops=[op(IDENTITY, 0, o=1), op(IDENTITY, 0, o=1)]),
                            "op #1 (identity) writes 'y', which another op already wrote"),
        "op_reads_unwritten": (variant(ONE_IO, intermediates=[("t", F32)],
                                       ops=[op(IDENTITY, 2, o=1), op(IDENTITY, 0, o=2)]),
                               "op #0 (identity) reads 't' before any op writes it"),
        "op_reads_shape_tensor": (replace_io(ONE_IO, 0, inp("x", F32, [4], flags=1)),
                                  "op #0 (identity) reads shape tensor 'x'; ops cannot compute on those"),
        "embedding_float_ids": (variant(TOKENS, io=[inp("ids", F32, [1, -1]), out("h", F32, [1, -1, 8])]),
                                "op #0 (embedding): ids 'ids' must be int64 or int32, not float32"),
        "embedding_table_not_constant": (replace_op(TOKENS, 0, op(EMBEDDING, 0, 0, o=1)),
                                         "op #0 (embedding): table 'ids' must be a constant of shape [V, H]"),
        "add_int_operands": (variant(ELEMENTWISE, ops=[op(ADD, 2, 2, o=6)] + ELEMENTWISE["ops"][1:]),
                             "op #0 (add): operands 'tokens' and 'tokens' must be float32"),
        "add_bias_rank_2": (variant(ELEMENTWISE, constants=[("bias", [1, 3], [1.0, 2.0, 3.0])]),
                            "op #1 (add_bias): bias 'bias' must be a constant of shape [H]"),
        "scale_nan": (replace_op(ONE_IO, 0, op(SCALE, 0, o=1, factor=float("nan"))),
                      "op #0 (scale): scale factor must be finite"),
        "scale_infinite": (replace_op(ONE_IO, 0, op(SCALE, 0, o=1, factor=float("inf"))),
                           "op #0 (scale): scale factor must be finite"),
        "matmul_weight_not_constant": (replace_op(DECODER, 1, op(MATMUL, 5, 0, o=2)),
                                       "op #1 (matmul): weight 'ids' must be a constant of shape [K, N]"),
        "kv_cache_not_an_input": (replace_op(KV_STEP, 1, op(KV_CACHE_UPDATE, 6, 2, 3, o=5)),
                                  "op #1 (kv_cache_update): cache 'wq' must be a float32 engine input"),
        "kv_result_not_an_output": (variant(KV_STEP, intermediates=[("qp", F32), ("kv", F32)],
                                            ops=[op(MATMUL, 0, 6, o=7), op(KV_CACHE_UPDATE, 1, 2, 3, o=8)]),
                                    "op #1 (kv_cache_update): its result 'kv' must be an engine output"),
        "kv_shape_differs": (replace_io(KV_STEP, 5, out("cache_out", F32, [1, 8, 5])),
                             "op #1 (kv_cache_update): output 'cache_out' is declared [1, 8, 5] but the cache 'cache' "
                             "it aliases is [1, 8, 4]"),
        "kv_cache_updated_twice": (_kv_twice_case(), "cache 'cache' is already updated by op #1; an input is aliased "
                                                     "by one output at most"),
        "kv_update_not_float": (replace_op(KV_STEP, 1, op(KV_CACHE_UPDATE, 1, 3, 3, o=5)),
                                "op #1 (kv_cache_update): update 'write_at' must be float32"),
        "kv_indices_not_int": (replace_op(KV_STEP, 1, op(KV_CACHE_UPDATE, 1, 2, 2, o=5)),
                               "op #1 (kv_cache_update): write indices 'new_kv' must be int32 or int64"),
        "attention_int_queries": (replace_op(KV_STEP, 2, op(CAUSAL_ATTENTION, 3, 5, 5, 3, o=4, factor=0.5)),
                                  "op #2 (causal_attention): queries 'write_at', keys 'cache_out' and values "
                                  "'cache_out' must be float32"),
        "attention_float_positions": (replace_op(KV_STEP, 2, op(CAUSAL_ATTENTION, 7, 5, 5, 0, o=4, factor=0.5)),
                                      "op #2 (causal_attention): positions 'q' must be int32 or int64"),
        "attention_nan_factor": (replace_op(KV_STEP, 2, op(CAUSAL_ATTENTION, 7, 5, 5, 3, o=4, factor=float("nan"))),
                                 "op #2 (causal_attention): scale factor must be finite"),
        "identity_changes_dtype": (replace_io(ONE_IO, 1, out("y", I64, [4])),
                                   "op #0 (identity) produces float32 but 'y' is int64"),
        "output_never_written": (variant(ONE_IO, io=ONE_IO["io"] + [out("z", F32, [4])]),
                                 "output 'z' is never written by any op"),
        "intermediate_never_written": (variant(ONE_IO, intermediates=[("t", F32)]),
                                       "intermediate 't' is never written by any op"),
        # validate(): shapes through the ops at every profile's min, opt and max
        "embedding_rank_8_ids": (variant(TOKENS, io=[inp("ids", I64, [1] * 8), out("y", I64, [1] * 8)],
                                         intermediates=[("h", F32)], profiles=[[([1] * 8,) * 3]],
                                         ops=[op(EMBEDDING, 0, 2, o=3), op(IDENTITY, 0, o=1)]),
                                 "profile 0 (min shapes): op #0 (embedding -> 'h'): ids [1, 1, 1, 1, 1, 1, 1, 1] "
                                 "leave no room for the hidden dim"),
        "embedding_output_declared_wrong": (replace_io(TOKENS, 1, out("h", F32, [1, -1, 9])),
                                            "profile 0 (min shapes): op #0 (embedding -> 'h') produces [1, 1, 8] but "
                                            "output 'h' is declared [1, -1, 9]"),
        "add_shapes_differ_at_opt": (variant(ELEMENTWISE, profiles=[
            [([1, 3], [2, 3], [4, 3]), ([1, 3], [3, 3], [4, 3]), ([2],) * 3],
            ELEMENTWISE["profiles"][1]]),
            "profile 0 (opt shapes): op #0 (add -> 'sum'): operands 'x' [2, 3] and 'y' [3, 3] must have the same "
            "shape"),
        "add_bias_length": (variant(ELEMENTWISE, constants=[("bias", [4], [1.0] * 4)]),
                            "op #1 (add_bias -> 'biased'): input 'sum' [1, 3] must end in the bias length 4"),
        "matmul_k_mismatch": (variant(DECODER, constants=[("table", [16, 8], 128), ("w", [7, 4], 28)]),
                              "op #1 (matmul -> 'logits'): input 'hidden' [1, 1, 8] must end in K = 7"),
        "kv_update_longer_than_cache": (variant(KV_STEP, profiles=[
            [([1, 1, 4], [1, 1, 4], [1, 8, 4]), ([1, 8, 4],) * 3, ([1, 1, 4], [1, 1, 4], [1, 9, 4]), ([1],) * 3]]),
            "profile 0 (max shapes): op #1 (kv_cache_update -> 'cache_out'): cache 'cache' [1, 8, 4] must be "
            "[B, T, D] and update 'new_kv' [1, 9, 4] [B, S, D] with S <= T"),
        "kv_indices_shape": (_kv_indices_case(), "write indices 'write_at' [2] must be [B] = [1]"),
        "attention_positions_shape": (_attention_positions_case(), "positions 'pos2' [2] must be [B] = [1]"),
        "attention_more_queries_than_keys": (_attention_queries_case(),
                                             "must be [B, S, D], [B, T, D] and [B, T, E], S <= T"),
        # validate(): scratch memory, refused at load instead of when a context allocates it
        "intermediate_above_tensor_limit": (_big_intermediate_case(),
                                            "intermediate 'hidden' is too large under profile 0"),
        "scratch_above_limit": (variant(SCRATCH_AT_LIMIT, profiles=[[([1, 1], [1, 1], [9, MAX_DIM])]]),
                                "the intermediates need more than 68719476736 bytes of scratch memory, the limit"),
    }
    return cases


def _const_count_case() -> bytes:
    p = payload(**ONE_IO)
    # Cut after the IO section: the constant count is the next u32.
    io_end = len(payload(label="one", io=ONE_IO["io"])) - 4 * 4  # constants, intermediates, profiles, ops counts
    return p[:io_end] + struct.pack("<I", 65537)


def _constant_values_case() -> bytes:
    p = payload(label="one", io=ONE_IO["io"])
    io_end = len(p) - 4 * 4
    return seal(p[:io_end] + struct.pack("<I", 1) + _str("c") + _shape([2]) + struct.pack("<Q", 1000000))


def _op_count_case(n: int) -> bytes:
    p = payload(**dict(ONE_IO, ops=[]))
    return seal(p[:-4] + struct.pack("<I", n))


def _kv_twice_case() -> bytes:
    io = KV_STEP["io"] + [out("cache_out2", F32, [1, 8, 4])]
    # ids shift by one: constants from 7, intermediates from 8
    ops = [op(MATMUL, 0, 7, o=8), op(KV_CACHE_UPDATE, 1, 2, 3, o=5), op(KV_CACHE_UPDATE, 1, 2, 3, o=6),
           op(CAUSAL_ATTENTION, 8, 5, 5, 3, o=4, factor=0.5)]
    return variant(KV_STEP, io=io, ops=ops)


def _kv_indices_case() -> bytes:
    profiles = [list(KV_STEP["profiles"][0])]
    io = list(KV_STEP["io"])
    io[3] = inp("write_at", I64, [-1])
    profiles[0][3] = ([2],) * 3
    return variant(KV_STEP, io=io, profiles=profiles)


def _attention_positions_case() -> bytes:
    io = KV_STEP["io"] + [inp("pos2", I64, [2])]
    io = io[:4] + [io[6]] + io[4:6]  # inputs first keeps ids simple: q cache new_kv write_at pos2 | attn cache_out
    profiles = [KV_STEP["profiles"][0] + [([2],) * 3]]
    # ids: q0 cache1 new_kv2 write_at3 pos2=4 attn5 cache_out6 wq7 qp8
    ops = [op(MATMUL, 0, 7, o=8), op(KV_CACHE_UPDATE, 1, 2, 3, o=6), op(CAUSAL_ATTENTION, 8, 6, 6, 4, o=5, factor=0.5)]
    return variant(KV_STEP, io=io, profiles=profiles, ops=ops)


def _attention_queries_case() -> bytes:
    profiles = [list(KV_STEP["profiles"][0])]
    io = list(KV_STEP["io"])
    io[0] = inp("q", F32, [1, -1, 4])
    io[4] = out("attn", F32, [1, -1, 4])
    profiles[0][0] = ([1, 1, 4], [1, 1, 4], [1, 9, 4])
    return variant(KV_STEP, io=io, profiles=profiles)


def _big_intermediate_case() -> bytes:
    # ids int32 [2^27, 8] is 4 GiB, within the tensor limit; the embedding of it with H = 2048 is 2^43 bytes.
    return variant(TOKENS, io=[inp("ids", I32, [-1, 8]), out("h", F32, [-1, 8, 2048])],
                   constants=[("table", [1, 2048], 2048)], intermediates=[("hidden", F32)],
                   profiles=[[([1, 8], [1, 8], [2**27, 8])]],
                   ops=[op(EMBEDDING, 0, 2, o=3), op(IDENTITY, 3, o=1)])


def write_all(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, spec in VALID.items():
        data = engine(**spec)
        (out_dir / f"{name}.engine").write_bytes(data)
        (out_dir / f"{name}.json").write_text(json.dumps(describe(data), indent=1) + "\n")
    invalid_dir = out_dir / "invalid"
    invalid_dir.mkdir(exist_ok=True)
    manifest = []
    for name, (data, fragment) in invalid_cases().items():
        try:
            read_gpufree_engine(data)
        except GpufreeEngineError as e:
            message = str(e)
        else:
            raise SystemExit(f"make_vectors: invalid case {name} reads as a valid engine")
        if fragment not in message:
            raise SystemExit(f"make_vectors: invalid case {name}: {message!r} does not say {fragment!r}")
        (invalid_dir / f"{name}.engine").write_bytes(data)
        manifest.append({"case": name, "error": message})
    (invalid_dir / "invalid.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
