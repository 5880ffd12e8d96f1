"""etrt.gpufree: format v2 (flags, op table, in-place aliases), read
from engines the C++ builder wrote and from hand-built bytes."""

import re
import struct

import pytest

import _builders as B
from _generated import assert_matches_fresh_generation, load_script
from etrt.gpufree import (OP_RECORD_SIZE, GpufreeEngineError, checksum, read_gpufree_engine,
                          try_read_gpufree_engine)

KV_IN = [("cache", "float32", [1, 8, 4]), ("update", "float32", [1, -1, 4]), ("at", "int64", [1])]
KV_OUT = [("cache_out", "float32", [1, 8, 4]), ("echo", "float32", [1, 8, 4])]
KV_PROFILES = [[([1, 8, 4],) * 3, ([1, 1, 4], [1, 1, 4], [1, 8, 4]), ([1],) * 3]]


def kv_engine(**kw) -> bytes:
    kw.setdefault("kv_updates", {"cache_out": ("cache", "update", "at")})
    return B.gpufree_engine("kv", KV_IN, KV_OUT, KV_PROFILES, **kw)


def reseal(data: bytes, payload: bytes) -> bytes:
    """``data``'s header around a new payload (size and checksum fixed up)."""
    return data[:4] + struct.pack("<IQII", struct.unpack_from("<I", data, 4)[0], len(payload), checksum(payload),
                                  0) + payload


def test_the_cpp_builders_kv_engine_reads_with_its_flags_ops_and_alias():
    eng = read_gpufree_engine(bytes.fromhex(B.CPP_KV_ENGINE_HEX))
    assert eng.version == 2 and eng.label == "kv_step"
    assert eng.cuda_mode and eng.streamable_weights and eng.tracing
    assert [t.name for t in eng.io] == ["q", "cache", "new_kv", "write_at", "attn", "cache_out"]
    assert eng.constant_names == ("wq",) and eng.intermediate_names == ("qp",)
    assert [op.kind_name for op in eng.ops] == ["matmul", "kv_cache_update", "causal_attention"]
    kv = eng.ops[1]
    assert (kv.a, kv.b, kv.c, kv.d, kv.out) == (1, 2, 3, -1, 5)
    attention = eng.ops[2]
    assert [eng.tensor_name(x) for x in (attention.a, attention.b, attention.c, attention.d, attention.out)] == [
        "qp", "cache_out", "cache_out", "write_at", "attn"]
    assert attention.factor == 0.5
    assert eng.aliased_input("cache_out") == "cache"
    assert eng.aliased_input("attn") is None  # written by causal_attention, not in place
    assert eng.aliased_input("cache") is None  # an input
    assert eng.aliased_input("nope") is None
    assert eng.aliases() == {"cache_out": "cache"}


def test_the_cpp_builders_host_engine_has_no_flags_but_tracing_and_no_alias():
    eng = read_gpufree_engine(bytes.fromhex(B.CPP_ENGINE_HEX))
    assert eng.tracing and not eng.cuda_mode and not eng.streamable_weights
    ops = [(op.kind_name, eng.tensor_name(op.a), eng.tensor_name(op.b), eng.tensor_name(op.out)) for op in eng.ops]
    assert ops == [("embedding", "ids", "table", "hidden"), ("matmul", "hidden", "w", "logits")]
    assert eng.aliases() == {}


def test_ops_are_25_byte_records():
    assert OP_RECORD_SIZE == 25 == len(B.gpufree_op(6, 0, out=1))


@pytest.mark.parametrize("flags, tracing, cuda, streamable, sharing", [
    (0, False, False, False, True), (1, True, False, False, True), (2, False, True, False, True),
    (4, False, False, True, True), (8, False, False, False, False), (15, True, True, True, False),
])
def test_each_flag_bit_has_its_field(flags, tracing, cuda, streamable, sharing):
    eng = read_gpufree_engine(kv_engine(flags=flags))
    assert (eng.tracing, eng.cuda_mode, eng.streamable_weights, eng.profile_sharing) == (
        tracing, cuda, streamable, sharing)


@pytest.mark.parametrize("exclusive", [False, True])
def test_the_python_writer_builds_engines_with_or_without_profile_sharing(exclusive):
    from etrt.engine_builder import EngineBuilder
    b = EngineBuilder("shared", exclusive_profiles=exclusive)
    b.add_input("x", "float32", (4,)).add_output("y", "float32", (4,)).identity("x", "y")
    assert read_gpufree_engine(b.build()).profile_sharing is not exclusive


def test_a_cuda_mode_engine_is_read_not_refused():
    eng, error = try_read_gpufree_engine(kv_engine(cuda_mode=True))
    assert error is None and eng.cuda_mode


def test_hand_built_kv_update_aliases_its_cache():
    eng = read_gpufree_engine(kv_engine())
    assert eng.aliases() == {"cache_out": "cache"}
    assert [op.kind_name for op in eng.ops] == ["kv_cache_update", "identity"]


@pytest.mark.parametrize("build, message", [
    (lambda: kv_engine(flags=16), "GPU-free NvInfer engine: unknown flags 16"),
    (lambda: kv_engine(flags=0x81), "GPU-free NvInfer engine: unknown flags 129"),
    (lambda: kv_engine(version=1), "format version 1 is not the version this etrt reads (2); rebuild the engine"),
    (lambda: kv_engine(trailing=b"\x00"), "1 unexpected bytes after the last op"),
    (lambda: kv_engine(trailing=B.gpufree_op(6, 0, out=4)), "25 unexpected bytes after the last op"),
    # The C++ deserializer's words (validate() in nvinfer/src/model.cpp), after "invalid engine: ".
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(9, 0, out=3)),
     "GPU-free NvInfer engine: invalid engine: op #0 (unknown) has an unknown kind"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(0, 0, out=3)), "op #0 (unknown) has an unknown kind"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(6, 5, out=3)),
     "op #0 (identity) refers to a tensor that does not exist"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(6, -2, out=3)),
     "op #0 (identity) refers to a tensor that does not exist"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(6, 0, out=7)),
     "op #0 (identity) refers to a tensor that does not exist"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(6, 0, 1, out=3)),
     "op #0 (identity) has operand 1 set, but identity takes 1"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(7, 4, 1, 2, out=3)),
     "op #0 (kv_cache_update) reads 'echo' before any op writes it"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(7, 0, 1, 2, out=1)),
     "op #0 (kv_cache_update) writes 'update', which is not an output or intermediate"),
    (lambda: kv_engine(ops=struct.pack("<I", 2) + B.gpufree_op(6, 0, out=4) + B.gpufree_op(7, 4, 1, 2, out=3)),
     "op #1 (kv_cache_update): cache 'echo' must be a float32 engine input"),
    (lambda: kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(4, 0, out=4, factor=float("nan"))),
     "op #0 (scale): scale factor must be finite"),
    (lambda: kv_engine(ops=struct.pack("<I", 2) + B.gpufree_op(6, 0, out=3)), "the op count 2 needs at least 50 more "
                                                                              "bytes, only 25 remain"),
])
def test_malformed_v2_engines_are_refused(build, message):
    with pytest.raises(GpufreeEngineError, match=re.escape(message)):
        read_gpufree_engine(build())


def test_version_1_engines_of_the_cpp_builder_are_refused_like_any_other_version():
    data = bytes.fromhex(B.CPP_ENGINE_HEX)
    old = data[:4] + struct.pack("<I", 1) + data[8:]
    engine, error = try_read_gpufree_engine(old)
    assert engine is None
    assert error == ("GPU-free NvInfer engine: format version 1 is not the version this etrt reads (2); rebuild the "
                     "engine with this etrt's builder")


def test_a_v1_op_table_under_a_v2_header_is_refused():
    # v1 ops were 17 bytes (kind, a, b, out, factor): the same engine with such a table no longer reads.
    v2 = kv_engine(ops=struct.pack("<I", 1) + B.gpufree_op(6, 0, out=3))
    payload = v2[24:-25] + struct.pack("<Biiif", 6, 0, -1, 3, 1.0)
    with pytest.raises(GpufreeEngineError, match="the op count 1 needs at least 25 more bytes, only 17 remain"):
        read_gpufree_engine(reseal(v2, payload))


def test_truncation_anywhere_in_the_op_table_is_refused_cleanly():
    data = bytes.fromhex(B.CPP_KV_ENGINE_HEX)
    payload = data[24:]
    for cut in range(1, 3 * OP_RECORD_SIZE + 4):
        with pytest.raises(GpufreeEngineError):
            read_gpufree_engine(reseal(data, payload[:-cut]))


def test_an_engine_is_read_in_place_inside_a_larger_buffer():
    """read_gpufree_engine(data, offset, size) reads data[offset:offset + size] where it lies (a blob's engine
    section, not copied out): the same engine as from its own bytes, whether the buffer is bytes, a bytearray or a
    memoryview."""
    engine = kv_engine()
    whole = read_gpufree_engine(engine)
    padded = b"\xff" * 13 + engine + b"tail"
    for buffer in (padded, bytearray(padded), memoryview(padded)):
        assert read_gpufree_engine(buffer, 13, len(engine)) == whole
        assert try_read_gpufree_engine(buffer, 13, len(engine)) == (whole, None)
    assert try_read_gpufree_engine(padded, 0, len(engine)) == (None, None)  # not the engine's start
    short, error = try_read_gpufree_engine(padded, 13, len(engine) - 1)  # the reader sees the span, not the buffer
    assert short is None and "payload" in error
    with pytest.raises(ValueError, match="outside"):
        read_gpufree_engine(padded, 13, len(padded))


# --- the shared vectors (tests/vectors/engine; tests/engine/format_test.cpp reads them too) -------------------

import json  # noqa: E402
from pathlib import Path  # noqa: E402

ENGINE_VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "engine"
VALID_ENGINES = sorted(p.stem for p in ENGINE_VECTORS.glob("*.engine"))
INVALID_ENGINES = json.loads((ENGINE_VECTORS / "invalid" / "invalid.json").read_text())


@pytest.mark.parametrize("case", VALID_ENGINES)
def test_valid_engine_vector_decodes_to_its_description(case):
    data = (ENGINE_VECTORS / f"{case}.engine").read_bytes()
    described = load_script(ENGINE_VECTORS / "make_vectors.py").describe(data)
    assert described == json.loads((ENGINE_VECTORS / f"{case}.json").read_text())


@pytest.mark.parametrize("case", INVALID_ENGINES, ids=[c["case"] for c in INVALID_ENGINES])
def test_invalid_engine_vector_is_refused_with_the_runtimes_message(case):
    data = (ENGINE_VECTORS / "invalid" / f"{case['case']}.engine").read_bytes()
    engine, error = try_read_gpufree_engine(data)
    if case["case"] == "not_etrf":  # not a GPU-free NvInfer engine at all: an opaque plan to the tools
        assert (engine, error) == (None, None)
        with pytest.raises(GpufreeEngineError) as e:
            read_gpufree_engine(data)
        error = str(e.value)
    assert engine is None
    assert error == case["error"]


def test_every_invalid_engine_vector_is_listed():
    assert sorted(p.stem for p in (ENGINE_VECTORS / "invalid").glob("*.engine")) == sorted(
        c["case"] for c in INVALID_ENGINES)


def test_committed_engine_vectors_match_a_fresh_generation(tmp_path):
    assert_matches_fresh_generation(ENGINE_VECTORS / "make_vectors.py", (".json", ".engine"), tmp_path)


def test_the_scratch_an_engine_asks_for_is_capped_at_64_gib():
    from etrt.gpufree import MAX_DEVICE_MEMORY

    at_limit = read_gpufree_engine((ENGINE_VECTORS / "scratch_at_limit.engine").read_bytes())
    assert at_limit.device_memory_size == MAX_DEVICE_MEMORY == 64 * 2**30
