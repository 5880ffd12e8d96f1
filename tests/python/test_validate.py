"""etrt.validate: every check, pass and fail, on programs built in memory."""

import re
import struct

import pytest

import _builders as B
from _generated import load_script
from etrt import blob
from etrt.pte import PteError, read_pte
from etrt.gpufree import GpufreeEngineError, read_gpufree_engine
from etrt.signature import Bounds, Signature
from etrt.validate import ValidationError, check_program, validate_program

CPP_ENGINE_HEX = B.CPP_ENGINE_HEX


def test_passes_multi_profile_with_static_one_profile_and_foreign_beside_it():
    r = validate_program(B.llm_program())
    assert r.ok
    c = B.codes(r)
    assert c["error"] == [] and c["warning"] == []
    # Every opaque plan is said to leave its output capacity unchecked.
    assert sorted(c["info"]) == ["foreign-backend"] + ["output-capacity-unchecked"] * 3 + ["static-single-profile"]
    assert [d.ref.backend_id for d in r.delegates] == ["TensorRTBackend"] * 2 + ["XnnpackBackend", "TensorRTBackend"]
    assert [d.num_profiles for d in r.tensorrt_delegates] == [2, 1, 2]
    assert r.verdict() == f"OK: 3 TensorRT delegate(s), 0 error(s), {B.plan_warnings(3)} warning(s)"


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
    (w,) = B.model_warnings(r)
    assert w.code == "unlinked-regimes"
    assert "equal profile counts prove nothing" in w.message
    assert "'seq_len'" in w.message


def test_dynamic_one_profile_delegate_beside_multi_profile_is_reported_with_its_runtime_behavior():
    r = validate_program(B.llm_program(with_dynamic_single=True))
    assert r.ok
    (w,) = B.model_warnings(r)
    assert w.code == "dynamic-single-profile"
    for part in ("'forward' delegate 4", "'input_ids' dim 1: 1..2048", "profile 0", "N > 0",
                 "return an error at run time", "same 2 profiles"):
        assert part in w.message, part


def test_dynamic_one_profile_delegate_alone_is_only_info():
    sig = Signature.from_bounds({"x": [([1, 1], [1, 4], [1, 8])]})
    pte = B.single_delegate_program(B.trt_blob([("x", "float32", [1, -1])], [("y", "float32", [1, -1])], sig),
                                    [("x", "float32", [1, 8], True)], [("y", "float32", [1, 8], True)])
    r = validate_program(pte)
    assert r.ok and B.model_warnings(r) == []
    assert B.codes(r)["info"] == ["output-capacity-unchecked", "dynamic-single-profile"]


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
    assert ok.ok and [w.code for w in B.model_warnings(ok)] == ["rank-differs"]
    bad = validate_program(_one(sig, [32]))
    (e,) = bad.errors
    assert e.code == "exceeds-planned-bounds" and "64 elements" in e.message and "32 elements" in e.message


def test_static_program_input_outside_a_profile_is_a_warning():
    sig = Signature.from_bounds({"x": [([1, 8], [1, 8], [1, 8]), ([1, 1], [1, 2], [1, 4])]})
    r = validate_program(_one(sig, [1, 8], dynamic=False))
    assert r.ok
    assert [w.code for w in B.model_warnings(r)] == ["static-input-unreachable"]
    assert "profile(s) 1 do not admit [1, 8]" in B.model_warnings(r)[0].message


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
    assert agree.ok and B.model_warnings(agree) == []  # the shared tensor links them: no "unlinked" warning
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
    assert r.ok and [w.code for w in B.model_warnings(r)] == ["signature-partial"]
    assert "'b'" in B.model_warnings(r)[0].message


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


# --- GPU-free NvInfer engines ---------------------------------------------------------

REF_IN = [("ids", "int64", [1, -1])]
REF_OUT = [("out", "int64", [1, -1])]
REF_PROFILES = [[B.DECODE], [B.prefill(128, 2, 64)]]


def _ref_program(signature=None, binding_inputs=None, planned=128, engine=None):
    eng = engine if engine is not None else B.gpufree_engine("dec", REF_IN, REF_OUT, REF_PROFILES)
    inputs = binding_inputs or REF_IN
    b = B.trt_blob(inputs, REF_OUT, signature, eng)
    return B.single_delegate_program(b, [(inputs[0][0], "int64", [1, planned], True)],
                                     [("out", "int64", [1, planned], True)])


def test_gpufree_engine_profiles_stand_in_for_a_missing_signature():
    r = validate_program(_ref_program())
    assert r.ok and B.codes(r)["info"] == []
    d = r.delegates[0]
    assert d.engine_kind == "gpufree" and d.signature_source == "engine" and d.num_profiles == 2
    bad = validate_program(_ref_program(planned=64))
    # The input's profile max, and the output the engine then produces, both exceed the plan.
    assert [e.code for e in bad.errors] == ["exceeds-planned-bounds", "exceeds-planned-output"]


def test_signature_agreeing_with_the_gpufree_engine_passes_and_disagreeing_fails():
    agreeing = Signature.from_bounds({"ids": [B.DECODE, B.prefill(128, 2, 64)]}, {"seq_len": [("ids", 1)]})
    assert validate_program(_ref_program(agreeing)).ok
    lying = Signature.from_bounds({"ids": [B.DECODE, B.prefill(256, 2, 64)]}, {"seq_len": [("ids", 1)]})
    (e,) = validate_program(_ref_program(lying, planned=256)).errors
    assert e.code == "signature-engine-mismatch"
    # The runtime's own check (src/backend/rules/signature_check.cpp), with its message.
    assert "gives input 'ids' a profile 1 max of [1,256], but the engine's is [1,128]" in e.message
    assert "(signature: min [1,2] opt [1,64] max [1,256]; engine: min [1,2] opt [1,64] max [1,128])" in e.message
    three = Signature.from_bounds({"ids": [B.DECODE, B.prefill(128, 2, 64), B.prefill(128, 2, 64)]})
    (e,) = validate_program(_ref_program(three)).errors
    assert "the blob's profile signature declares 3 profiles, but the engine has 2" in e.message


def test_blob_bindings_that_do_not_match_the_gpufree_engine_fail():
    r = validate_program(_ref_program(binding_inputs=[("tokens", "int64", [1, -1])]))
    codes = [e.code for e in r.errors]
    assert codes == ["engine-mismatch"]
    assert "'tokens', which the engine does not have" in r.errors[0].message


def test_an_io_tensor_placed_on_the_host_fails_as_the_runtime_refuses_it():
    eng = B.gpufree_engine("dec", REF_IN, REF_OUT, REF_PROFILES, on_host=[REF_OUT[0][0]])
    assert read_gpufree_engine(eng).io[1].on_host
    r = validate_program(_ref_program(engine=eng))
    (e,) = r.errors
    assert e.code == "engine-mismatch"
    assert f"'{REF_OUT[0][0]}'" in e.message and "kHOST" in e.message, e.message


def test_a_data_dependent_output_fails_as_the_runtime_refuses_it():
    eng = B.gpufree_engine("dec", REF_IN, REF_OUT, REF_PROFILES, data_dependent=[REF_OUT[0][0]])
    assert read_gpufree_engine(eng).io[1].data_dependent
    (e,) = validate_program(_ref_program(engine=eng)).errors
    assert e.code == "engine-mismatch"
    assert f"output(s) '{REF_OUT[0][0]}' have a data-dependent shape" in e.message


def test_damaged_gpufree_engine_is_bad_input():
    eng = bytearray(B.gpufree_engine("dec", REF_IN, REF_OUT, REF_PROFILES))
    eng[-1] ^= 0xFF
    r = validate_program(_ref_program(engine=bytes(eng)))
    (e,) = r.errors
    assert e.code == "corrupt-engine" and "checksum mismatch" in e.message and r.bad_input == [e]


def test_python_reader_decodes_an_engine_built_by_the_cpp_builder():
    data = bytes.fromhex(CPP_ENGINE_HEX)
    eng = read_gpufree_engine(data)
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
    (lambda d: b"ETRF" + struct.pack("<I", 1) + d[8:], "format version 1 is not the version this etrt reads (2)"),
    (lambda d: b"ETRF" + struct.pack("<I", 3) + d[8:], "format version 3 is not the version this etrt reads (2)"),
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "checksum mismatch"),
    (lambda d: d[:20] + b"\x01\x00\x00\x00" + d[24:], "reserved header bytes"),
    (lambda d: b"XXXX" + d[4:], "magic 'ETRF'"),
])
def test_gpufree_reader_refuses_damaged_engines(mutate, message):
    with pytest.raises(GpufreeEngineError, match=re.escape(message)):
        read_gpufree_engine(mutate(bytes.fromhex(CPP_ENGINE_HEX)))


@pytest.mark.parametrize("inputs, profiles, message", [
    ([("ids", "int64", [1, -1])], [[([1], [1], [1])]], "must be static shapes of the declared rank 2"),
    ([("ids", "int64", [1, -1])], [[([1, 4], [1, 2], [1, 8])]], "needs min <= opt <= max, got 4 <= 2 <= 8"),
    ([("ids", "int64", [1, 8])], [[([1, 4], [1, 8], [1, 8])]], "declared static 8"),
    ([("out", "int64", [1, -1])], [[([1, 1], [1, 1], [1, 1])]], "'out' is used twice"),
    ([], [[], []], "an engine without inputs has one profile"),
    ([("ids", "int64", [1, -1])], [], "no optimization profiles"),
])
def test_gpufree_reader_checks_the_profile_section(inputs, profiles, message):
    data = B.gpufree_engine("bad", inputs, [("out", "int64", [1, -1])], profiles)
    with pytest.raises(GpufreeEngineError, match=message):
        read_gpufree_engine(data)


def test_gpufree_reader_never_reads_past_a_lying_count():
    from etrt.gpufree import checksum

    data = bytes.fromhex(CPP_ENGINE_HEX)
    payload = bytearray(data[24:])
    # IO count sits after label (4 + 7), flags (1), switch cost (8), device memory (8)
    payload[28:32] = struct.pack("<I", 0xFFFFFFF0)
    forged = data[:16] + struct.pack("<I", checksum(bytes(payload))) + data[20:24] + bytes(payload)
    with pytest.raises(GpufreeEngineError, match="IO tensor count"):
        read_gpufree_engine(forged)


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
    assert r.ok and B.model_warnings(r) == []
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


# --- io_bindings order, empty io_bindings ----------------------------------------------


def _interleaved_program(dtype_of_y="float32", planned_x=8, args=("x", "w", "y", "z")):
    sig = Signature.from_bounds({"x": [([1, 1], [1, 4], [1, 8])], "w": [([2], [2], [2])]})
    bindings = [blob.IoBinding("y", "float32", [1, -1], False), blob.IoBinding("x", "float32", [1, -1]),
                blob.IoBinding("z", "int64", [2], False), blob.IoBinding("w", "int64", [2])]
    data = B.trt_blob([], [], sig, bindings=bindings)

    def build(m):
        m.tensor("x", "float32", [1, planned_x], dynamic=True)
        m.tensor("w", "int64", [2])
        m.tensor("y", dtype_of_y, [1, 8], dynamic=True)
        m.tensor("z", "int64", [2])
        m.delegate_call("TensorRTBackend", data, list(args))
        m.set_io(["x", "w"], ["y", "z"])

    return B.pte_bytes(build)


def test_interleaved_bindings_meet_the_call_as_inputs_then_outputs():
    r = validate_program(_interleaved_program())
    assert r.ok and B.model_warnings(r) == [], r.format()
    d = r.delegates[0]
    assert [b.name for b in d.arguments()] == ["x", "w", "y", "z"]
    assert d.bound_value("x").value_index == 0 and d.bound_value("z").value_index == 3


def test_interleaved_bindings_check_dtypes_and_bounds_by_argument():
    (e,) = validate_program(_interleaved_program(dtype_of_y="int64")).errors
    assert e.code == "dtype-mismatch" and "output 'y' is float32 in the blob" in e.message
    assert "value 2 of dtype int64" in e.message
    (e,) = validate_program(_interleaved_program(planned_x=4)).errors
    assert e.code == "exceeds-planned-bounds" and "input 'x' (value 0" in e.message


def test_empty_io_bindings_take_the_gpufree_engines_io_in_the_runtimes_order():
    inputs = [("input_1", "float32", [4]), ("input_0", "float32", [4])]
    outputs = [("output_0", "float32", [4]), ("output_1", "float32", [4])]
    eng = B.gpufree_engine("e", inputs, outputs, [[([4],) * 3, ([4],) * 3]])
    data = B.trt_blob([], [], None, eng, bindings=[])

    def build(m, n_args=4):
        for name in ("a", "b", "c", "d"):
            m.tensor(name, "float32", [4])
        m.delegate_call("TensorRTBackend", data, ["a", "b", "c", "d"][:n_args])
        m.set_io(["a", "b"], ["c", "d"][:max(0, n_args - 2)])

    r = validate_program(B.pte_bytes(build))
    assert r.ok and B.codes(r)["error"] == [], r.format()
    d = r.delegates[0]
    # numeric suffixes order each group, as the runtime does
    assert [b.name for b in d.arguments()] == ["input_0", "input_1", "output_0", "output_1"]
    assert d.bound_value("input_1").value_index == 1
    (e,) = validate_program(B.pte_bytes(lambda m: build(m, 3))).errors
    assert e.code == "arg-count-mismatch"
    assert "the call passes 3 tensor(s), but the engine has 2 input(s) and 2 output(s)" in e.message


def test_empty_io_bindings_with_an_opaque_plan_cannot_be_checked_but_are_valid():
    data = B.trt_blob([], [], None, bindings=[])
    r = validate_program(B.single_delegate_program(data, [("x", "float32", [4], False)],
                                                   [("y", "float32", [4], False)]))
    assert r.ok
    assert "bindings-from-engine" in B.codes(r)["info"]


# --- aliased_io --------------------------------------------------------------------------

KV_IN = [("cache", "float32", [1, 8, 4]), ("update", "float32", [1, -1, 4]), ("at", "int64", [1])]
KV_OUT = [("cache_out", "float32", [1, 8, 4]), ("echo", "float32", [1, 8, 4])]
KV_PROFILES = [[([1, 8, 4],) * 3, ([1, 1, 4], [1, 1, 4], [1, 8, 4]), ([1],) * 3]]


def _kv_program(aliased_io, engine=None, outputs=KV_OUT, pass_outputs=("cache_out", "echo"), budget_specs=()):
    if engine is None:
        engine = B.gpufree_engine("kv", KV_IN, outputs, KV_PROFILES,
                                  kv_updates={"cache_out": ("cache", "update", "at")})
    data = B.trt_blob(KV_IN, outputs, None, engine, aliased_io=aliased_io)

    def build(m):
        for n, d, s in KV_IN + list(outputs):
            m.tensor(n, d, [x if x >= 0 else 8 for x in s], dynamic=-1 in s)
        m.delegate_call("TensorRTBackend", data, [n for n, _, _ in KV_IN] + list(pass_outputs), list(budget_specs))
        m.set_io([n for n, _, _ in KV_IN], [n for n in pass_outputs if n != "cache_out"])

    return B.pte_bytes(build)


def _one_error(data, code):
    r = validate_program(data)
    assert [e.code for e in r.errors] == [code], r.format()
    message = r.errors[0].message
    assert message.startswith("'forward' delegate 0 (instruction 0): "), message
    return message


def test_kv_cache_update_alias_that_the_engine_agrees_with_passes():
    for kind in ("kv_cache_update", ""):
        r = validate_program(_kv_program([("cache_out", "cache", kind)]))
        assert r.ok and B.model_warnings(r) == [], r.format()


def test_the_engines_own_alias_counts_when_the_blob_leaves_it_out():
    r = validate_program(_kv_program([]))
    assert r.ok, r.format()
    assert r.delegates[0].aliased_outputs() == ["cache_out"]


def test_a_call_may_leave_out_every_aliased_output():
    r = validate_program(_kv_program([("cache_out", "cache", "kv_cache_update")], pass_outputs=("echo",)))
    assert r.ok, r.format()
    assert r.delegates[0].bound_value("cache_out") is None and r.delegates[0].bound_value("echo").value_index == 4


def test_a_call_may_not_leave_out_an_output_that_is_not_aliased():
    message = _one_error(_kv_program([("cache_out", "cache", "kv_cache_update")], pass_outputs=()),
                         "arg-count-mismatch")
    assert "the call passes 3 tensor(s), but the blob's io_bindings list 3 input(s) and 2 output(s), 1 of them " \
           "written in place into inputs: a call passes 5 tensors, or 4 without those outputs" in message


def test_an_unknown_alias_kind_is_an_error_naming_the_entry():
    message = _one_error(_kv_program([("cache_out", "cache", "rotary")]), "alias-unknown-kind")
    for part in ("aliased_io[0] (output 'cache_out', input 'cache', kind 'rotary') has an unknown kind",
                 "'kv_cache_update' and 'user'", "refuses this delegate at load", "re-export the model"):
        assert part in message, (part, message)


def test_kv_cache_update_alias_the_engine_does_not_have_is_an_error():
    message = _one_error(_kv_program([("echo", "cache", "kv_cache_update")]), "alias-engine-mismatch")
    assert "aliased_io[0] (output 'echo', input 'cache', kind 'kv_cache_update') disagrees with the engine" in message
    assert "whose alias for output 'echo' is none (getAliasedInputTensor)" in message
    assert "re-export the model" in message


def test_kv_cache_update_alias_naming_another_input_is_an_error_naming_both():
    inputs = KV_IN + [("cache2", "float32", [1, 8, 4])]
    engine = B.gpufree_engine("kv", inputs, KV_OUT, [KV_PROFILES[0] + [([1, 8, 4],) * 3]],
                              kv_updates={"cache_out": ("cache2", "update", "at")})
    data = B.trt_blob(inputs, KV_OUT, None, engine, aliased_io=[("cache_out", "cache", "kv_cache_update")])
    r = validate_program(B.single_delegate_program(
        data, [(n, d, [8 if x < 0 else x for x in s], -1 in s) for n, d, s in inputs],
        [(n, d, s, False) for n, d, s in KV_OUT]))
    (e,) = [e for e in r.errors if e.code == "alias-engine-mismatch"]
    assert "kind 'kv_cache_update') disagrees with the engine, whose alias for output 'cache_out' is 'cache2'" \
        in e.message


def test_user_alias_with_matching_engine_shapes_passes_and_differing_ones_fail():
    r = validate_program(_kv_program([("echo", "update", "user")]))
    # echo [1, 8, 4] vs update [1, -1, 4]: -1 is compared exactly
    (e,) = r.errors
    assert e.code == "alias-shape-mismatch"
    assert "aliased_io[0] (output 'echo', input 'update', kind 'user'): the output is float32 [1, 8, 4] but the " \
           "input is float32 [1, -1, 4]" in e.message
    assert "re-export the model" in e.message
    outputs = [("cache_out", "float32", [1, 8, 4]), ("echo", "float32", [1, -1, 4])]
    r = validate_program(_kv_program([("echo", "update", "user")], outputs=outputs))
    assert r.ok, r.format()


def test_user_alias_with_an_opaque_engine_is_left_to_the_runtime():
    # The runtime compares the engine's shapes, never the io_bindings' (which it does not read), and an opaque plan
    # cannot be resolved here: the alias is unchecked, not judged by the blob's declared shapes.
    from etrt.analysis import describe_aliases

    def program(out_shape, in_shape):
        data = B.trt_blob([("x", "float32", in_shape)], [("y", "float32", out_shape)],
                          aliased_io=[("y", "x", "user")])
        return B.single_delegate_program(data, [("x", "float32", [2, 3], False)], [("y", "float32", [2, 3], False)])

    for shapes in (([2, 3], [2, 3]), ([], [2, 3]), ([2, -1], [2, 3])):
        r = validate_program(program(*shapes))
        assert r.ok, r.format()
        (view,) = describe_aliases(r.delegates[0])
        assert view.status == "unchecked" and "the runtime checks it against the engine at load" in view.detail


def test_two_outputs_written_into_one_input_is_an_error():
    message = _one_error(_kv_program([("echo", "cache", "user")]), "alias-conflict")
    assert "the engine's alias of output 'cache_out': input 'cache' is already written in place by output 'echo'" \
           in message


def test_inspect_describes_aliases_as_the_runtime_treats_them():
    from etrt.inspect_pte import format_report, inspect_program

    text = format_report(inspect_program(_kv_program([("cache_out", "cache", "kv_cache_update")])))
    assert "aliased: output cache_out is written in place into input cache (kv_cache_update; the engine agrees)" \
        in text
    assert "at execute: an aliased output is bound to its input's memory; ExecuTorch may pass a write-back tensor " \
           "for it (it then receives a copy) or none (the buffer is the delegate's); this call passes write-back " \
           "tensors" in text
    text = format_report(inspect_program(_kv_program([], pass_outputs=("echo",))))
    assert "aliased: output cache_out is written in place into input cache (kv_cache_update, declared by the " \
           "engine; the blob's aliased_io does not list it, the runtime applies it anyway)" in text
    assert "cache_out float32 [1, 8, 4]  -> no tensor" in text and "this call passes none" in text
    outputs = [("cache_out", "float32", [1, 8, 4]), ("echo", "float32", [1, -1, 4])]
    report = inspect_program(_kv_program([("echo", "update", "user"), ("cache_out", "cache", "x")],
                                         outputs=outputs))
    text = format_report(report)
    assert "aliased: output echo is written in place into input update (user; shapes match)" in text
    assert "aliased: output cache_out -> input cache: x; the runtime refuses this delegate: aliased_io[1] (output " \
           "'cache_out', input 'cache', kind 'x') has an unknown kind" in text
    aliases = report["methods"][0]["delegates"][0]["aliases"]
    assert [(a["output"], a["status"], a["source"]) for a in aliases] == [("echo", "ok", "blob"),
                                                                           ("cache_out", "refused", "blob")]


# --- weight_streaming_budget ------------------------------------------------------------


@pytest.mark.parametrize("value, shown", [
    (b"", "is empty"), (b"-1", "is '-1'"), (b"1.5", "is '1.5'"), (b"12abc", "is '12abc'"), (b" 12", "is ' 12'"),
    (b"12 ", "is '12 '"), (b"+12", "is '+12'"), (b"12\x00", "is '12\\x00'"),
    (b"9223372036854775808", "is '9223372036854775808'"), (b"1" * 80, "is '" + "1" * 64 + "'... (80 bytes)"),
])
def test_a_malformed_weight_streaming_budget_is_an_error(value, shown):
    message = _one_error(_kv_program([], budget_specs=[("weight_streaming_budget", value)]), "bad-compile-spec")
    assert f"compile spec 'weight_streaming_budget' {shown}" in message
    assert "one or more ASCII decimal digits" in message and "9223372036854775807" in message
    assert "re-export with a valid budget" in message


@pytest.mark.parametrize("value", [b"0", b"1073741824", b"9223372036854775807", b"007"])
def test_a_weight_streaming_budget_of_decimal_digits_passes(value):
    r = validate_program(_kv_program([], budget_specs=[("weight_streaming_budget", value), ("other", b"x y")]))
    assert r.ok, r.format()


def test_a_second_weight_streaming_budget_is_an_error():
    message = _one_error(_kv_program([], budget_specs=[("weight_streaming_budget", b"1"),
                                                       ("weight_streaming_budget", b"2")]), "bad-compile-spec")
    assert "the 'weight_streaming_budget' compile spec appears 2 times ('1', '2')" in message
    assert "Re-export with one budget" in message


def test_a_budget_for_an_engine_without_streamable_weights_is_noted():
    r = validate_program(_kv_program([], budget_specs=[("weight_streaming_budget", b"4096")]))
    assert r.ok and "weight-streaming-ignored" in B.codes(r)["info"]
    engine = B.gpufree_engine("kv", KV_IN, KV_OUT, KV_PROFILES, kv_updates={"cache_out": ("cache", "update", "at")},
                              streamable_weights=True)
    r = validate_program(_kv_program([], engine=engine, budget_specs=[("weight_streaming_budget", b"4096")]))
    assert r.ok and "weight-streaming-ignored" not in B.codes(r)["info"]


# --- programs ExecuTorch 1.5.1 refuses ----------------------------------------------------


def _constants_program(mutate):
    def build(m):
        m.tensor("x", "float32", [4])
        m.tensor("y", "float32", [4])
        m.tensor("c", "float32", [1])
        m.delegate_call("TensorRTBackend", B.trt_blob([("x", "float32", [4])], [("y", "float32", [4])]), ["x", "y"])
        m.set_io(["x"], ["y"])

    return B.mutated_pte_bytes(build, mutate)


def _old_constant_buffer(p):
    p["constant_buffer"] = [{"storage": []}, {"storage": [0, 0, 128, 63]}]
    del p["constant_segment"]


def _both(p):
    p["constant_buffer"] = [{"storage": []}, {"storage": [0, 0, 128, 63]}]
    p["constant_segment"]["offsets"] = [0, 0]


def _constant_tensor(p):
    value = p["execution_plan"][0]["values"][2]["val"]
    value["data_buffer_idx"] = 1
    del value["allocation_info"]


def _bad_segment_index(p):
    p["constant_segment"] = {"segment_index": 7, "offsets": [0, 0]}


# Each case was loaded with the ExecuTorch 1.5.1 wheel's runtime (Module::load, load_method):
# the refused ones fail with InvalidProgram, the others load.
@pytest.mark.parametrize("mutate, fragments", [
    (_old_constant_buffer, ["the program has no constant_segment (its deprecated constant_buffer has 2 entries)",
                            "relies on the constant_buffer path", "refuses the program at Program::load",
                            "Re-export the model with ExecuTorch 0.7 or later"]),
    (lambda p: p.pop("constant_segment"), ["no constant_segment (its deprecated constant_buffer has 0 entries)"]),
    (lambda p: p["constant_segment"].update(offsets=[]), ["a constant_segment without offsets"]),
    (_both, ["stores constants both in the deprecated constant_buffer (2 entries) and in constant_segment "
             "(2 offsets)", "only one may be used"]),
    (_constant_tensor, ["method 'forward': value 2 is a constant (data_buffer_idx 1) but constant_segment holds no "
                        "constants", "refuses the method when it loads"]),
    (_bad_segment_index, ["constant_segment.segment_index 7 is not one of the program's 2 segment(s)"]),
])
def test_programs_the_executorch_runtime_refuses_fail_validation(mutate, fragments):
    r = validate_program(_constants_program(mutate))
    assert [e.code for e in r.errors] == ["runtime-refuses-program"], r.format()
    for part in fragments:
        assert part in r.errors[0].message, (part, r.errors[0].message)
    assert "re-export the model" in r.errors[0].message.lower()


def test_a_placeholder_constant_buffer_beside_an_empty_constant_segment_loads():
    def placeholder(p):
        p["constant_buffer"] = [{"storage": []}, {"storage": [0, 0, 128, 63]}]

    r = validate_program(_constants_program(placeholder))
    assert r.ok, r.format()


# --- what each profile produces against the planned output capacity; engines the runtime refuses --------------

GROW_IN = [("ids", "int64", [1, -1])]
GROW_OUT = [("h", "float32", [1, -1, 8])]


def _grow_engine(max_seq=128, out_decl=(1, -1, 8)):
    """ids [1, S] -> embedding (table [16, 8]) -> h [1, S, 8]; profile 0 decode, profile 1 prefill 2..max_seq."""
    from pathlib import Path

    E = load_script(Path(__file__).resolve().parents[1] / "vectors" / "engine" / "make_vectors.py")
    return E.engine(label="grow", io=[E.inp("ids", E.I64, [1, -1]), E.out("h", E.F32, list(out_decl))],
                    constants=[("table", [16, 8], 128)],
                    profiles=[[([1, 1], [1, 1], [1, 1])], [([1, 2], [1, 64], [1, max_seq])]],
                    ops=[E.op(E.EMBEDDING, 0, 2, o=1)])


def _grow_program(out_sizes, out_dynamic=True, engine=None):
    b = B.trt_blob(GROW_IN, GROW_OUT, None, engine or _grow_engine())
    return B.single_delegate_program(b, [("ids", "int64", [1, 128], True)], [("h", "float32", out_sizes, out_dynamic)])


def test_the_gpufree_engine_computes_each_profiles_output_shapes():
    eng = read_gpufree_engine(_grow_engine())
    assert eng.output_shapes(0) == {"h": (1, 1, 8)}
    assert eng.output_shapes(1, "min") == {"h": (1, 2, 8)} and eng.output_shapes(1) == {"h": (1, 128, 8)}


def test_an_output_planned_smaller_than_a_profile_produces_is_an_error():
    assert validate_program(_grow_program([1, 128, 8])).ok
    r = validate_program(_grow_program([1, 64, 8]))
    (e,) = r.errors
    assert e.code == "exceeds-planned-output"
    for part in ("'forward' delegate 0", "output 'h' (value 1, planned upper bound [1, 64, 8])",
                 "profile 1 produces up to [1, 128, 8] (dim 1: 128 > 64)", "InvalidArgument",
                 "an upper bound of at least [1, 128, 8]"):
        assert part in e.message, e.message


def test_an_output_of_another_rank_is_an_error_and_a_static_one_a_profile_cannot_fill_a_warning():
    (e,) = validate_program(_grow_program([1, 1024])).errors
    assert e.code == "output-rank-mismatch" and "profile 0 produces [1, 1, 8]" in e.message
    r = validate_program(_grow_program([1, 128, 8], out_dynamic=False))
    assert r.ok and [w.code for w in B.model_warnings(r)] == ["static-output-mismatch"]
    assert "profile 0 produces [1, 1, 8]; profile 1 produces [1, 2, 8] to [1, 128, 8]" in B.model_warnings(r)[0].message


def test_an_opaque_plan_says_its_output_capacity_is_unchecked():
    b = B.trt_blob(GROW_IN, GROW_OUT, B.llm_signature(("ids",), max_seq=128))
    r = validate_program(B.single_delegate_program(b, [("ids", "int64", [1, 128], True)],
                                                   [("h", "float32", [1, 1, 8], True)]))
    (info,) = [f for f in r.infos if f.code == "output-capacity-unchecked"]
    assert "opaque TensorRT plan" in info.message and "was not checked" in info.message


@pytest.mark.parametrize("case, fragment", [
    ("device_memory_2_pow_40", "device memory size 1099511627776 is above the limit 68719476736"),
    ("negative_dim", "has an invalid shape [-2]"),
    ("op_unknown_kind", "has an unknown kind"),
    ("op_operand_out_of_range", "refers to a tensor that does not exist"),
    ("scale_nan", "scale factor must be finite"),
    ("trailing_bytes", "1 unexpected bytes after the last op"),
    ("duplicate_names", "tensor name 'x' is used twice"),
])
def test_engines_the_runtime_refuses_at_load_fail_validation(case, fragment):
    from pathlib import Path

    engine = (Path(__file__).resolve().parents[1] / "vectors" / "engine" / "invalid" / f"{case}.engine").read_bytes()
    blob_bytes = blob.write_blob(blob.Metadata(), engine)  # io_bindings empty: the engine's own IO
    r = validate_program(B.single_delegate_program(blob_bytes, [("x", "float32", [4], False)],
                                                   [("y", "float32", [4], False)]))
    (e,) = r.errors
    assert e.code == "corrupt-engine" and fragment in e.message and r.bad_input == [e]


def test_a_signature_above_the_profile_limit_is_refused_by_the_exporter():
    from etrt.signature import SignatureError

    with pytest.raises(SignatureError, match="num_profiles is 257, above the limit of 256"):
        Signature.from_bounds({"x": [([1], [1], [1])] * 257})
    assert Signature.from_bounds({"x": [([1], [1], [1])] * 256}).num_profiles == 256


def _one_io_program(**engine_options) -> bytes:
    io_in, io_out = [("x", "float32", [4])], [("y", "float32", [4])]
    eng = B.gpufree_engine("dev", io_in, io_out, [[([4], [4], [4])]], **engine_options)
    return B.single_delegate_program(B.trt_blob(io_in, io_out, None, eng), [("x", "float32", [4], False)],
                                     [("y", "float32", [4], False)])


def test_a_cuda_mode_engine_warns_on_a_build_without_cuda(monkeypatch):
    from etrt import _reader

    monkeypatch.setattr(_reader, "build_has_cuda", lambda: False)
    r = validate_program(_one_io_program(cuda_mode=True))
    assert "needs-cuda-build" in B.codes(r, build=True)["warning"]
    f = next(f for f in r.findings if f.code == "needs-cuda-build")
    assert "CUDA-mode engine" in f.message and "-DETRT_WITH_CUDA=ON" in f.message
    assert "needs-cuda-build" not in B.codes(validate_program(_one_io_program()), build=True)["warning"]


def test_a_tensorrt_plan_warns_on_a_build_without_cuda_and_not_on_one_with_it(monkeypatch):
    from etrt import _reader

    io_in, io_out = [("x", "float32", [4])], [("y", "float32", [4])]
    data = B.single_delegate_program(B.trt_blob(io_in, io_out), [("x", "float32", [4], False)],
                                     [("y", "float32", [4], False)])
    monkeypatch.setattr(_reader, "build_has_cuda", lambda: False)
    r = validate_program(data)
    assert r.ok and B.codes(r, build=True)["warning"] == ["needs-cuda-build"]
    (w,) = r.warnings
    assert "its engine is a TensorRT plan" in w.message and "refuses TensorRT plans at load" in w.message
    assert "-DETRT_WITH_CUDA=ON" in w.message and "TENSORRT_ROOT" in w.message
    # A program declared for a CUDA runtime does not meet this build.
    assert validate_program(data, runtime="cuda").warnings == []
    monkeypatch.setattr(_reader, "build_has_cuda", lambda: True)
    assert validate_program(data).warnings == []


def test_the_runtime_resolves_the_blob_against_its_engine_for_validate():
    from etrt import _reader
    from etrt.pte import read_pte

    blob = read_pte(_kv_program([("cache_out", "cache", "kv_cache_update")]))["delegates"][0]["data"]
    r = _reader.resolve_delegate(bytes(blob))
    assert r["refusal"] is None
    assert [t["name"] for t in r["inputs"]] == [n for n, _, _ in KV_IN]
    assert r["aliases"] == [{"output": "cache_out", "input": "cache", "kind": "kv_cache_update", "entry": 0}]
    blob = read_pte(_kv_program([("cache_out", "cache", "rotary")]))["delegates"][0]["data"]
    refusal = _reader.resolve_delegate(bytes(blob))["refusal"]
    assert refusal["rule"] == "alias-unknown-kind" and refusal["entry"] == 0
    assert "has an unknown kind" in refusal["message"]


def test_a_delegates_engine_is_read_where_it_lies_in_the_blob():
    """The blob holds the engine, and an engine may be hundreds of MiB: a delegate keeps where it is in the blob
    (engine_span) rather than a second copy, and the runtime's reader is handed it in place. The engine bytes are
    still there, as bytes, and a result still pickles."""
    import pickle

    r = validate_program(_one_io_program())
    (d,) = r.delegates
    offset, size = d.engine_span
    assert isinstance(d.engine, bytes) and d.engine == d.data[offset:offset + size] and d.engine[:4] == b"ETRF"
    assert d.gpufree_engine == read_gpufree_engine(d.engine) and d.engine_kind == "gpufree"
    again = pickle.loads(pickle.dumps(r))
    assert again.delegates[0] == d and again.delegates[0].engine == d.engine


def test_a_cuda_mode_engine_does_not_warn_on_a_cuda_build_and_checks_its_scratch_against_the_device(monkeypatch):
    from etrt import _reader

    monkeypatch.setattr(_reader, "build_has_cuda", lambda: True)
    monkeypatch.setattr(_reader, "device_memory", lambda device: 1024)
    r = validate_program(_one_io_program(cuda_mode=True))
    assert "needs-cuda-build" not in B.codes(r, build=True)["warning"]
    assert "scratch-exceeds-device" not in B.codes(r)["warning"]  # the engine needs no scratch
    eng = read_gpufree_engine(B.gpufree_engine("dev", [("x", "float32", [4])], [("y", "float32", [4])],
                                               [[([4], [4], [4])]], cuda_mode=True))
    assert eng.cuda_mode and eng.device_memory_size == 0


def test_an_engine_whose_scratch_exceeds_the_device_warns(monkeypatch):
    from etrt import _reader

    monkeypatch.setattr(_reader, "build_has_cuda", lambda: True)
    monkeypatch.setattr(_reader, "device_memory", lambda device: 100)
    io_in, io_out = [("x", "float32", [64])], [("y", "float32", [64])]
    eng = B.gpufree_engine("dev", io_in, io_out, [[([64], [64], [64])]], cuda_mode=True)
    # Ask for 4 KiB of scratch through the header's requested device memory (payload offset: label, flags, cost).
    label_len = 4 + len("dev")
    payload = bytearray(eng[24:])
    struct.pack_into("<Q", payload, label_len + 1 + 8, 4096)
    from etrt.gpufree.format import checksum
    eng = eng[:16] + struct.pack("<I", checksum(bytes(payload))) + eng[20:24] + bytes(payload)
    pte = B.single_delegate_program(B.trt_blob(io_in, io_out, None, eng), [("x", "float32", [64], False)],
                                    [("y", "float32", [64], False)])
    r = validate_program(pte)
    (f,) = [f for f in r.findings if f.code == "scratch-exceeds-device"]
    assert f.severity == "warning" and "4096 bytes of scratch" in f.message and "100 bytes" in f.message
