"""etrt.validate: every check, pass and fail, on programs built in memory."""

import struct

import pytest

import _builders as B
from etrt.pte import PteError, read_pte
from etrt.reference_engine import ReferenceEngineError, read_reference_engine
from etrt.signature import Bounds, Signature
from etrt.validate import ValidationError, check_program, validate_program

# A reference engine serialized by the C++ builder (nvinfer/src/builder.cpp),
# captured once so the Python reader is held to the C++ writer's layout:
#   Builder b("decoder"); inputs ids, pos int64 [1,-1]; output logits float32 [1,-1,4];
#   profile 0 = [1,1], profile 1 = [1,2..128] opt [1,64]; constants table [16,8], w [8,4];
#   embedding(ids, table, hidden); matmul(hidden, w, logits); switch cost 1234 ns; device memory 4096.
CPP_ENGINE_HEX = (
    "455452460100000045040000000000008126680400000000070000006465636f64657201d204000000000000001000000000"
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
    "000000004000000000000000020100000000000000800000000000000002000000010000000003000000050000000000803f"
    "050500000004000000020000000000803f"
)


def test_passes_multi_profile_with_static_one_profile_and_foreign_beside_it():
    r = validate_program(B.llm_program())
    assert r.ok
    c = B.codes(r)
    assert c["error"] == [] and c["warning"] == []
    assert sorted(c["info"]) == ["foreign-backend", "static-single-profile"]
    assert [d.ref.backend_id for d in r.delegates] == ["TensorRTBackend"] * 2 + ["XnnpackBackend", "TensorRTBackend"]
    assert [d.num_profiles for d in r.tensorrt_delegates] == [2, 1, 2]
    assert r.verdict() == "OK: 3 TensorRT delegate(s), 0 error(s), 0 warning(s)"


def test_equal_counts_with_disagreeing_symbol_ranges_fail():
    r = validate_program(B.llm_program(second_max=1024))
    assert not r.ok
    (err,) = r.errors
    assert err.code == "regime-mismatch"
    m = err.message
    for part in ("profile index 1", "'forward' delegate 0 (instruction 0)", "'forward' delegate 3 (instruction 3)",
                 "'seq_len'", "32..2048", "32..1024", "rebuild the engines"):
        assert part in m, (part, m)
    assert [d.delegate_index for d in err.delegates] == [0, 3]


def test_symbol_disagreement_on_several_profiles_lists_each():
    r = validate_program(B.llm_program(second_max=1024, second_min=16))
    (err,) = r.errors
    assert "profile 1: 32..2048 in delegate 0, 16..1024 in delegate 3" in err.message


def test_different_profile_counts_fail():
    r = validate_program(B.llm_program(second_profiles=1))
    (err,) = r.errors
    assert err.code == "profile-count-mismatch"
    assert "'forward' delegate 0 (instruction 0) has 2" in err.message
    assert "'forward' delegate 3 (instruction 3) has 3" in err.message


def test_equal_counts_with_nothing_shared_are_a_warning_not_a_pass_in_silence():
    r = validate_program(B.llm_program(second_symbol=None))
    assert r.ok
    (w,) = r.warnings
    assert w.code == "unlinked-regimes"
    assert "equal profile counts prove nothing" in w.message
    assert "'seq_len'" in w.message


def test_dynamic_one_profile_delegate_beside_multi_profile_is_reported_with_its_runtime_behavior():
    r = validate_program(B.llm_program(with_dynamic_single=True))
    assert r.ok
    (w,) = r.warnings
    assert w.code == "dynamic-single-profile"
    for part in ("'forward' delegate 4", "'input_ids' dim 1: 1..2048", "profile 0", "N > 0",
                 "return an error at run time", "same 2 profiles"):
        assert part in w.message, part


def test_dynamic_one_profile_delegate_alone_is_only_info():
    sig = Signature.from_bounds({"x": [([1, 1], [1, 4], [1, 8])]})
    pte = B.single_delegate_program(B.trt_blob([("x", "float32", [1, -1])], [("y", "float32", [1, -1])], sig),
                                    [("x", "float32", [1, 8], True)], [("y", "float32", [1, 8], True)])
    r = validate_program(pte)
    assert r.ok and r.warnings == []
    assert B.codes(r)["info"] == ["dynamic-single-profile"]


def test_profile_max_above_the_planned_upper_bound_fails():
    r = validate_program(B.llm_program(planned_seq=1024))
    assert [e.code for e in r.errors] == ["exceeds-planned-bounds", "exceeds-planned-bounds"]
    m = r.errors[0].message
    for part in ("'forward' delegate 0", "input 'input_ids'", "value 0", "planned upper bound [1, 1024]",
                 "profile 1 dim 1 max 2048 > 1024", "dim 1 to at least 2048", "lower those profiles' max"):
        assert part in m, part


def _one(sig, sizes, dynamic=True, binding_shape=None, dtype="float32"):
    rank = len(sig.inputs[0].profiles[0].min)
    bshape = binding_shape or [-1] * rank
    b = B.trt_blob([("x", dtype, bshape)], [("y", dtype, bshape)], sig)
    return B.single_delegate_program(b, [("x", dtype, sizes, dynamic)], [("y", dtype, sizes, dynamic)])


def test_bounds_are_compared_per_dimension_when_ranks_match():
    sig = Signature.from_bounds({"x": [([1, 1], [1, 1], [1, 1]), ([1, 1], [4, 8], [8, 8])]})
    r = validate_program(_one(sig, [4, 16]))
    (e,) = r.errors
    assert "profile 1 dim 0 max 8 > 4" in e.message and "dim 1 max" not in e.message


def test_bounds_are_compared_in_elements_when_ranks_differ():
    sig = Signature.from_bounds({"x": [([1, 1], [1, 1], [1, 64])]})
    ok = validate_program(_one(sig, [64]))
    assert ok.ok and [w.code for w in ok.warnings] == ["rank-differs"]
    bad = validate_program(_one(sig, [32]))
    (e,) = bad.errors
    assert e.code == "exceeds-planned-bounds" and "64 elements" in e.message and "32 elements" in e.message


def test_static_program_input_outside_a_profile_is_a_warning():
    sig = Signature.from_bounds({"x": [([1, 8], [1, 8], [1, 8]), ([1, 1], [1, 2], [1, 4])]})
    r = validate_program(_one(sig, [1, 8], dynamic=False))
    assert r.ok
    assert [w.code for w in r.warnings] == ["static-input-unreachable"]
    assert "profile(s) 1 do not admit [1, 8]" in r.warnings[0].message


def test_delegate_without_signature_is_unverifiable_not_a_failure():
    r = validate_program(B.llm_program(second_signature=False))
    assert r.ok
    (info,) = [f for f in r.infos if f.code == "unverifiable"]
    assert "'forward' delegate 3" in info.message and "no profile_signature" in info.message
    assert "'hidden'" in info.message  # io_bindings mark it dynamic
    assert r.delegates[3].signature is None and r.delegates[3].num_profiles is None


def test_shared_input_tensor_links_delegates_and_its_bounds_must_agree():
    def program(second_max):
        def build(m):
            m.tensor("ids", "int64", [1, 2048], dynamic=True)
            m.tensor("a", "int64", [1, 2048], dynamic=True)
            m.tensor("b", "int64", [1, 2048], dynamic=True)
            s1 = B.llm_signature(("tokens",), symbol=None)
            s2 = B.llm_signature(("ids_in",), symbol=None, max_seq=second_max)
            m.delegate_call("TensorRTBackend", B.trt_blob([("tokens", "int64", [1, -1])],
                                                          [("a", "int64", [1, -1])], s1), ["ids", "a"])
            m.delegate_call("TensorRTBackend", B.trt_blob([("ids_in", "int64", [1, -1])],
                                                          [("b", "int64", [1, -1])], s2), ["ids", "b"])
            m.set_io(["ids"], ["a", "b"])

        return B.pte_bytes(build)

    agree = validate_program(program(2048))
    assert agree.ok and agree.warnings == []  # the shared tensor links them: no "unlinked" warning
    r = validate_program(program(1024))
    (e,) = r.errors
    assert e.code == "regime-mismatch"
    for part in ("profile index 1", "both read value 0", "'tokens'", "'ids_in'", "[1, 32..2048] vs [1, 32..1024]"):
        assert part in e.message, part


def test_signature_that_contradicts_itself_fails():
    sig = Signature.from_bounds(
        {"input_ids": [B.DECODE, B.prefill()]},
        symbolic_dims=[{"name": "seq_len", "input": "input_ids", "dim": 1, "ranges": [[1, 1], [32, 4096]]}])
    b = B.trt_blob([("input_ids", "int64", [1, -1])], [("y", "int64", [1, -1])], sig)
    r = validate_program(B.single_delegate_program(b, [("input_ids", "int64", [1, 2048], True)],
                                                   [("y", "int64", [1, 2048], True)]))
    (e,) = r.errors
    assert e.code == "signature-inconsistent" and "profile 1 says 32..4096" in e.message


def test_partial_signature_is_a_warning():
    sig = Signature.from_bounds({"a": [([1], [1], [4])]})
    b = B.trt_blob([("a", "float32", [-1]), ("b", "float32", [-1])], [("y", "float32", [-1])], sig)
    r = validate_program(B.single_delegate_program(
        b, [("a", "float32", [4], True), ("b", "float32", [4], True)], [("y", "float32", [4], True)]))
    assert r.ok and [w.code for w in r.warnings] == ["signature-partial"]
    assert "'b'" in r.warnings[0].message


def test_arg_count_and_dtype_mismatches_fail():
    sig = Signature.from_bounds({"x": [([1], [1], [4])]})
    b = B.trt_blob([("x", "float32", [-1])], [("y", "float32", [-1])], sig)
    short = B.single_delegate_program(b, [("x", "float32", [4], True)], [])
    (e,) = validate_program(short).errors
    assert e.code == "arg-count-mismatch" and "passes 1 tensor(s)" in e.message and "1 input(s) and 1 output(s)" in e.message
    wrong = B.single_delegate_program(b, [("x", "float16", [4], True)], [("y", "float32", [4], True)])
    (e,) = validate_program(wrong).errors
    assert e.code == "dtype-mismatch" and "float32 in the blob" in e.message and "float16" in e.message


def test_non_tensor_args_are_skipped_when_mapping_bindings():
    r = validate_program(B.llm_program())  # delegate 0 is called with (input_ids, n, hidden)
    d0 = r.delegates[0]
    assert [a.value_index for a in d0.tensor_args] == [0, 1]
    assert d0.bound_value("input_ids").value["sizes"] == [1, 2048]


def test_blob_that_lies_about_its_sizes_is_bad_input():
    good = B.trt_blob([("x", "float32", [4])], [("y", "float32", [4])])
    lying = good[:16] + struct.pack("<Q", 10_000) + good[24:]
    r = validate_program(B.single_delegate_program(lying, [("x", "float32", [4], False)],
                                                   [("y", "float32", [4], False)]))
    (e,) = r.errors
    assert e.code == "corrupt-blob" and r.bad_input == [e]
    assert "runs past the end" in e.message and "'forward' delegate 0" in e.message


# --- reference engines ---------------------------------------------------------

REF_IN = [("ids", "int64", [1, -1])]
REF_OUT = [("out", "int64", [1, -1])]
REF_PROFILES = [[B.DECODE], [B.prefill(128, 2, 64)]]


def _ref_program(signature=None, binding_inputs=None, planned=128, engine=None):
    eng = engine if engine is not None else B.ref_engine("dec", REF_IN, REF_OUT, REF_PROFILES)
    inputs = binding_inputs or REF_IN
    b = B.trt_blob(inputs, REF_OUT, signature, eng)
    return B.single_delegate_program(b, [(inputs[0][0], "int64", [1, planned], True)],
                                     [("out", "int64", [1, planned], True)])


def test_reference_engine_profiles_stand_in_for_a_missing_signature():
    r = validate_program(_ref_program())
    assert r.ok and B.codes(r)["info"] == []
    d = r.delegates[0]
    assert d.engine_kind == "reference" and d.signature_source == "engine" and d.num_profiles == 2
    bad = validate_program(_ref_program(planned=64))
    assert [e.code for e in bad.errors] == ["exceeds-planned-bounds"]


def test_signature_agreeing_with_the_reference_engine_passes_and_disagreeing_fails():
    agreeing = Signature.from_bounds({"ids": [B.DECODE, B.prefill(128, 2, 64)]}, {"seq_len": [("ids", 1)]})
    assert validate_program(_ref_program(agreeing)).ok
    lying = Signature.from_bounds({"ids": [B.DECODE, B.prefill(256, 2, 64)]}, {"seq_len": [("ids", 1)]})
    (e,) = validate_program(_ref_program(lying, planned=256)).errors
    assert e.code == "signature-engine-mismatch"
    assert "profile 1 input 'ids'" in e.message and "max [1, 256]" in e.message and "max [1, 128]" in e.message
    three = Signature.from_bounds({"ids": [B.DECODE, B.prefill(128, 2, 64), B.prefill(128, 2, 64)]})
    (e,) = validate_program(_ref_program(three)).errors
    assert "the signature has 3 profiles, the engine 2" in e.message


def test_blob_bindings_that_do_not_match_the_reference_engine_fail():
    r = validate_program(_ref_program(binding_inputs=[("tokens", "int64", [1, -1])]))
    codes = [e.code for e in r.errors]
    assert codes == ["engine-mismatch"]
    assert "'tokens', which the engine does not have" in r.errors[0].message


def test_an_io_tensor_placed_on_the_host_fails_as_the_runtime_refuses_it():
    eng = B.ref_engine("dec", REF_IN, REF_OUT, REF_PROFILES, on_host=[REF_OUT[0][0]])
    assert read_reference_engine(eng).io[1].on_host
    r = validate_program(_ref_program(engine=eng))
    (e,) = r.errors
    assert e.code == "engine-mismatch"
    assert f"'{REF_OUT[0][0]}' is placed on the host (getTensorLocation returned kHOST)" in e.message


def test_a_data_dependent_output_fails_as_the_runtime_refuses_it():
    eng = B.ref_engine("dec", REF_IN, REF_OUT, REF_PROFILES, data_dependent=[REF_OUT[0][0]])
    assert read_reference_engine(eng).io[1].data_dependent
    (e,) = validate_program(_ref_program(engine=eng)).errors
    assert e.code == "engine-mismatch"
    assert f"output '{REF_OUT[0][0]}' has a data-dependent shape" in e.message


def test_damaged_reference_engine_is_bad_input():
    eng = bytearray(B.ref_engine("dec", REF_IN, REF_OUT, REF_PROFILES))
    eng[-1] ^= 0xFF
    r = validate_program(_ref_program(engine=bytes(eng)))
    (e,) = r.errors
    assert e.code == "corrupt-engine" and "checksum mismatch" in e.message and r.bad_input == [e]


def test_python_reader_decodes_an_engine_built_by_the_cpp_builder():
    data = bytes.fromhex(CPP_ENGINE_HEX)
    eng = read_reference_engine(data)
    assert eng.label == "decoder" and eng.switch_cost_ns == 1234 and eng.requested_device_memory == 4096
    assert [(t.name, t.is_input, t.dtype, t.shape) for t in eng.io] == [
        ("ids", True, "int64", (1, -1)), ("pos", True, "int64", (1, -1)), ("logits", False, "float32", (1, -1, 4))]
    assert eng.num_constants == 2 and eng.num_intermediates == 1
    assert eng.profiles[1][0] == Bounds((1, 2), (1, 64), (1, 128))
    sig = eng.to_signature()
    assert sig.num_profiles == 2 and sig.input_names == ["ids", "pos"]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d[:10], "truncated: 10 bytes"),
    (lambda d: d[:-1], "promises a"),
    (lambda d: b"ETRF" + struct.pack("<I", 2) + d[8:], "format version 2"),
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "checksum mismatch"),
    (lambda d: d[:20] + b"\x01\x00\x00\x00" + d[24:], "reserved header bytes"),
    (lambda d: b"XXXX" + d[4:], "magic 'ETRF'"),
])
def test_reference_reader_refuses_damaged_engines(mutate, message):
    with pytest.raises(ReferenceEngineError, match=message.replace("(", r"\(")):
        read_reference_engine(mutate(bytes.fromhex(CPP_ENGINE_HEX)))


@pytest.mark.parametrize("inputs, profiles, message", [
    ([("ids", "int64", [1, -1])], [[([1], [1], [1])]], "must have the input's rank 2"),
    ([("ids", "int64", [1, -1])], [[([1, 4], [1, 2], [1, 8])]], "0 <= min <= opt <= max"),
    ([("ids", "int64", [1, 8])], [[([1, 4], [1, 8], [1, 8])]], "declared static 8"),
    ([("out", "int64", [1, -1])], [[([1, 1], [1, 1], [1, 1])]], "'out' is used twice"),
    ([], [[], []], "an engine without inputs has one profile"),
    ([("ids", "int64", [1, -1])], [], "no optimization profiles"),
])
def test_reference_reader_checks_the_profile_section(inputs, profiles, message):
    data = B.ref_engine("bad", inputs, [("out", "int64", [1, -1])], profiles)
    with pytest.raises(ReferenceEngineError, match=message):
        read_reference_engine(data)


def test_reference_reader_never_reads_past_a_lying_count():
    from etrt.reference_engine import checksum

    data = bytes.fromhex(CPP_ENGINE_HEX)
    payload = bytearray(data[24:])
    # IO count sits after label (4 + 7), flags (1), switch cost (8), device memory (8)
    payload[28:32] = struct.pack("<I", 0xFFFFFFF0)
    forged = data[:16] + struct.pack("<I", checksum(bytes(payload))) + data[20:24] + bytes(payload)
    with pytest.raises(ReferenceEngineError, match="IO tensor count"):
        read_reference_engine(forged)


# --- sources and entry points -------------------------------------------------


def test_accepts_path_bytes_read_pte_dict_and_buffer_objects(tmp_path):
    data = B.llm_program(second_max=1024)
    path = tmp_path / "m.pte"
    path.write_bytes(data)

    class FakeExecutorchProgramManager:
        buffer = data

        def exported_program(self, name="forward"):  # also present after to_executorch(); .buffer wins
            raise AssertionError("the serialized program should be validated, not the lowered modules")

    results = [validate_program(path), validate_program(str(path)), validate_program(data),
               validate_program(bytearray(data)), validate_program(read_pte(data)),
               validate_program(FakeExecutorchProgramManager())]
    assert all([e.code for e in r.errors] == ["regime-mismatch"] for r in results)
    assert results[0].source == str(path) and results[2].source is None


def test_lowered_modules_before_serialization_are_checked_without_planned_bounds():
    class Lowered:  # duck-typed executorch LoweredBackendModule
        def __init__(self, backend_id, processed_bytes):
            self.backend_id, self.processed_bytes = backend_id, processed_bytes

    a = B.trt_blob([("x", "int64", [1, -1])], [("y", "int64", [1, -1])], B.llm_signature(("x",)))
    b = B.trt_blob([("h", "int64", [1, -1])], [("z", "int64", [1, -1])], B.llm_signature(("h",), max_seq=512))
    r = validate_program([Lowered("TensorRTBackend", a), Lowered("TensorRTBackend", b), Lowered("Other", b"x")])
    assert [e.code for e in r.errors] == ["regime-mismatch"]
    assert "'<lowered>' delegate 0" in r.errors[0].message
    assert "planned-bounds-unchecked" in B.codes(r)["info"]
    assert validate_program([("TensorRTBackend", a), ("TensorRTBackend", a)]).ok

    class Graph:
        def modules(self):
            return iter([object(), Lowered("TensorRTBackend", a), Lowered("TensorRTBackend", b)])

    class EP:
        graph_module = Graph()

    class FakeEdgeProgramManager:
        methods = {"forward"}

        def exported_program(self, name="forward"):
            return EP()

    r = validate_program(FakeEdgeProgramManager())
    assert [e.code for e in r.errors] == ["regime-mismatch"]
    assert "'forward' delegate 0" in r.errors[0].message


def test_unknown_sources_and_unreadable_files():
    with pytest.raises(TypeError, match="ExecutorchProgramManager"):
        validate_program(42)
    with pytest.raises(PteError, match="not a .pte"):
        validate_program(b"definitely not a pte file")
    with pytest.raises(FileNotFoundError):
        validate_program("/nonexistent/model.pte")


def test_check_program_raises_with_every_error():
    with pytest.raises(ValidationError) as info:
        check_program(B.llm_program(second_max=1024, planned_seq=1024))
    text = str(info.value)
    assert text.startswith("2 TensorRT profile validation error(s):")
    assert "planned upper bound [1, 1024]" in text and "'seq_len'" in text
    assert len(info.value.result.errors) == 2
    assert check_program(B.llm_program()).ok


def test_methods_are_validated_independently():
    from etrt.pte import Program

    prog = Program()
    for name, extra in (("prefill", 0), ("decode", 1)):
        m = prog.method(name)
        m.tensor("ids", "int64", [1, 2048], dynamic=True)
        m.tensor("out", "int64", [1, 2048], dynamic=True)
        sig = B.llm_signature(("ids",), extra_profiles=extra)
        m.delegate_call("TensorRTBackend", B.trt_blob([("ids", "int64", [1, -1])], [("out", "int64", [1, -1])], sig),
                        ["ids", "out"])
        m.set_io(["ids"], ["out"])
    r = validate_program(prog.to_bytes())
    assert r.ok and r.warnings == []
    assert [(d.ref.method, d.num_profiles) for d in r.delegates] == [("prefill", 2), ("decode", 3)]


def test_inline_storage_is_read_the_same_way():
    sig = B.llm_signature(("x",))
    b = B.trt_blob([("x", "int64", [1, -1])], [("y", "int64", [1, -1])], sig)
    r = validate_program(B.single_delegate_program(b, [("x", "int64", [1, 1024], True)],
                                                   [("y", "int64", [1, 1024], True)], storage="inline"))
    assert r.delegates[0].location == "INLINE"
    assert [e.code for e in r.errors] == ["exceeds-planned-bounds"]


def test_no_tensorrt_delegates_is_reported():
    r = validate_program(B.single_delegate_program(b"x", [("x", "float32", [4], False)],
                                                   [("y", "float32", [4], False)], backend_id="XnnpackBackend"))
    assert r.ok and r.tensorrt_delegates == []
    assert B.codes(r)["info"] == ["no-tensorrt-delegates", "foreign-backend"]


def test_result_serializes_to_json():
    import json

    r = validate_program(B.llm_program(second_max=1024))
    d = json.loads(json.dumps(r.to_dict()))
    assert d["ok"] is False and d["errors"][0]["code"] == "regime-mismatch"
    assert d["errors"][0]["delegates"][0] == {"method": "forward", "method_index": 0, "delegate_index": 0,
                                              "instruction": 0, "backend_id": "TensorRTBackend"}
