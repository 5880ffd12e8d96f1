"""etrt.signature: construction, canonical bytes, round trips, regimes, refusals."""

import json
import struct
from pathlib import Path

import pytest

from etrt import blob
from etrt.signature import Bounds, Signature, SignatureError, SymbolicDim

VECTOR_DIR = Path(__file__).resolve().parents[1] / "vectors" / "blob"

LLM_TORCH_TRT = [
    {"input_ids": {"min_shape": [1, 1], "opt_shape": [1, 1], "max_shape": [1, 1]},
     "position_ids": {"min_shape": [1, 1], "opt_shape": [1, 1], "max_shape": [1, 1]}},
    {"input_ids": {"min_shape": [1, 32], "opt_shape": [1, 512], "max_shape": [1, 2048]},
     "position_ids": {"min_shape": [1, 32], "opt_shape": [1, 512], "max_shape": [1, 2048]}},
]
SEQ_LEN = {"seq_len": [("input_ids", 1), ("position_ids", 1)]}


def llm() -> Signature:
    return Signature.from_torch_trt(LLM_TORCH_TRT, symbolic_dims=SEQ_LEN)


def _vector(case: str):
    description = json.loads((VECTOR_DIR / f"{case}.json").read_text())
    return description["metadata"]["profile_signature"], (VECTOR_DIR / f"{case}.blob").read_bytes()


# --- canonical bytes ---------------------------------------------------------


def test_canonical_json_is_what_the_shared_blob_vector_embeds():
    expected, blob_bytes = _vector("profile_signature_llm")
    sig = llm()
    assert sig.to_dict() == expected
    # The exact bytes inside the vector blob's metadata, as both writers produce them.
    _, mo, ms, _, _, _ = struct.unpack("<4sIIIQ8s", blob_bytes[:32])
    metadata_json = blob_bytes[mo:mo + ms]
    assert b'"profile_signature":' + sig.to_json() + b"}" == metadata_json[metadata_json.index(b'"profile_signature"'):]


def test_signature_without_symbolic_dims_matches_its_vector():
    expected, _ = _vector("profile_signature_no_symbolic_dims")
    sig = Signature.from_dict(expected)
    assert sig.symbolic_dims == ()
    assert json.loads(sig.to_json()) == expected
    assert sig.to_json() == json.dumps(expected, separators=(",", ":")).encode()


def test_canonical_json_is_compact_ascii_with_fixed_key_order():
    sig = Signature.from_bounds({"tökens": [([1], [2], [3])]}, symbolic_dims={"läng": [("tökens", 0)]})
    text = sig.to_json()
    assert text.isascii() and b" " not in text
    assert text.startswith(b'{"num_profiles":1,"inputs":[{"name":"t\\u00f6kens","profiles":[{"min":[1],"opt":[2]')
    # etrt.blob embeds the same bytes
    md = blob.Metadata(io_bindings=[blob.IoBinding("tökens", "int64", [-1])], profile_signature=sig.to_blob())
    assert text in blob.metadata_to_json(md)


def test_equal_signatures_have_equal_bytes_whatever_order_the_symbols_were_named_in():
    a = Signature.from_torch_trt(LLM_TORCH_TRT, symbolic_dims={"seq_len": [("position_ids", 1), ("input_ids", 1)]})
    b = llm()
    assert a == b and a.to_json() == b.to_json() and hash(a) == hash(b)
    assert [s.input for s in a.symbolic_dims] == ["input_ids", "position_ids"]


def test_different_signatures_are_unequal():
    other = Signature.from_torch_trt(
        [LLM_TORCH_TRT[0], {k: dict(v, max_shape=[1, 1024], opt_shape=[1, 512]) for k, v in LLM_TORCH_TRT[1].items()}],
        symbolic_dims=SEQ_LEN)
    assert other != llm() and other.to_json() != llm().to_json()
    # input order is binding order: it is part of the signature
    swapped = Signature.from_torch_trt(LLM_TORCH_TRT, SEQ_LEN, input_order=["position_ids", "input_ids"])
    assert swapped != llm()


# --- construction ------------------------------------------------------------


def test_from_bounds_equals_from_torch_trt():
    bounds = [([1, 1], [1, 1], [1, 1]), {"min": [1, 32], "opt": [1, 512], "max": [1, 2048]}]
    sig = Signature.from_bounds({"input_ids": bounds, "position_ids": bounds}, symbolic_dims=SEQ_LEN)
    assert sig == llm()


def test_symbol_ranges_are_derived_from_the_bounds():
    sig = llm()
    assert sig.symbol_names() == ["seq_len"]
    assert sig.symbol_ranges("seq_len") == ((1, 1), (32, 2048))
    assert sig.problems() == []


def test_torch_trt_accepts_min_opt_max_static_shape_and_input_like_objects():
    class FakeInput:  # duck-typed torch_tensorrt.Input: .shape is a dict for dynamic inputs
        def __init__(self, shape):
            self.shape = shape

    sig = Signature.from_torch_trt([
        {"ids": FakeInput({"min_shape": (1, 1), "opt_shape": (1, 1), "max_shape": (1, 1)}), "mask": {"shape": [1, 8]}},
        {"ids": {"min": [1, 2], "opt": [1, 4], "max": [1, 8]}, "mask": FakeInput((1, 8))},
    ])
    assert sig.num_profiles == 2
    assert sig.input("mask").is_static
    assert sig.input("ids").profiles[1] == Bounds((1, 2), (1, 4), (1, 8))


def test_explicit_symbol_ranges_are_kept_and_checked_by_problems():
    sig = Signature.from_bounds(
        {"ids": [([1, 1], [1, 1], [1, 1]), ([1, 32], [1, 64], [1, 2048])]},
        symbolic_dims=[{"name": "seq_len", "input": "ids", "dim": 1, "ranges": [[1, 1], [32, 4096]]}])
    assert sig.symbol_ranges("seq_len") == ((1, 1), (32, 4096))
    (problem,) = sig.problems()
    assert "'seq_len'" in problem and "profile 1 says 32..4096" in problem and "32..2048" in problem


def test_one_symbol_with_disagreeing_occurrences_is_a_problem():
    sig = Signature.from_bounds(
        {"a": [([1, 1], [1, 1], [1, 8])], "b": [([1, 1], [1, 1], [1, 16])]},
        symbolic_dims={"seq_len": [("a", 1), ("b", 1)]})
    problems = sig.problems()
    assert len(problems) == 1 and "different ranges" in problems[0] and "1..8 vs 1..16" in problems[0]


# --- round trips ------------------------------------------------------------


def test_json_round_trip():
    sig = llm()
    assert Signature.from_json(sig.to_json()) == sig
    assert Signature.from_json(sig.to_json().decode()) == sig
    assert Signature.from_dict(json.loads(sig.to_json())) == sig


def test_blob_round_trip():
    sig = llm()
    md = blob.Metadata(io_bindings=[blob.IoBinding("input_ids", "int64", [1, -1]),
                                    blob.IoBinding("position_ids", "int64", [1, -1]),
                                    blob.IoBinding("logits", "float32", [1, -1, 8], is_input=False)],
                       profile_signature=sig.to_blob())
    parsed, engine = blob.parse_blob(blob.write_blob(md, b"engine"))
    assert engine == b"engine"
    assert Signature.from_blob(parsed.profile_signature) == sig
    assert parsed.profile_signature == sig.to_blob()


@pytest.mark.parametrize("case", ["profile_signature_llm", "profile_signature_no_symbolic_dims"])
def test_vector_signatures_survive_from_blob(case):
    _, blob_bytes = _vector(case)
    md, _ = blob.parse_blob(blob_bytes)
    sig = Signature.from_blob(md.profile_signature)
    assert sig.to_blob() == md.profile_signature


# --- regimes and queries ----------------------------------------------------


def test_regime_describes_one_profile():
    sig = llm()
    r = sig.regime(1)
    assert r.index == 1
    assert r.symbols == {"seq_len": (32, 2048)}
    assert r.inputs["input_ids"] == Bounds((1, 32), (1, 512), (1, 2048))
    assert r.describe() == ("profile 1: seq_len 32..2048; input_ids [1, 32..2048] (opt [1, 512]); "
                            "position_ids [1, 32..2048] (opt [1, 512])")
    assert sig.regime(0).describe() == "profile 0: seq_len 1; input_ids [1, 1]; position_ids [1, 1]"
    assert [x.index for x in sig.regimes()] == [0, 1]


@pytest.mark.parametrize("bad", [-1, 2, True, "1"])
def test_regime_out_of_range(bad):
    with pytest.raises(IndexError, match="profiles 0..1"):
        llm().regime(bad)


def test_fitting_profiles_and_contains():
    sig = llm()
    assert sig.fitting_profiles({"input_ids": [1, 1], "position_ids": [1, 1]}) == [0]
    assert sig.fitting_profiles({"input_ids": [1, 100], "position_ids": [1, 100]}) == [1]
    assert sig.fitting_profiles({"input_ids": [1, 4096], "position_ids": [1, 4096]}) == []
    assert not sig.regime(1).contains({"input_ids": [1, 100]})  # position_ids missing
    assert not Bounds((1,), (1,), (4,)).contains([1, 1])  # rank differs


def test_static_and_dynamic_classification():
    static = Signature.from_bounds({"x": [([1, 16], [1, 16], [1, 16])]})
    assert static.is_static and static.dynamic_dims() == []
    dynamic_one = Signature.from_bounds({"x": [([1, 1], [1, 8], [1, 64])]})
    assert not dynamic_one.is_static
    assert dynamic_one.dynamic_dims() == [("x", 1, 1, 64)]
    # two fixed-shape profiles: not static (each profile is one shape, but the shapes differ)
    two = Signature.from_bounds({"x": [([1, 1], [1, 1], [1, 1]), ([1, 8], [1, 8], [1, 8])]})
    assert not two.is_static and two.dynamic_dims() == [("x", 1, 1, 8)]
    assert Signature.from_bounds({}).num_profiles == 1


def test_input_lookup_errors_name_what_exists():
    with pytest.raises(KeyError, match="input_ids, position_ids"):
        llm().input("tokens")
    with pytest.raises(KeyError, match="seq_len"):
        llm().symbol_ranges("batch")


# --- refusals -----------------------------------------------------------------


@pytest.mark.parametrize("build, message", [
    (lambda: Signature.from_bounds({"x": [([1], [1], [1])], "y": [([1], [1], [1]), ([1], [1], [1])]}),
     "'y' has bounds for 2 profiles but the signature has 1"),
    (lambda: Signature.from_bounds({"x": [([1, 1], [1, 1], [1, 1]), ([1], [1], [1])]}),
     "rank 1 in profile 1 but rank 2 in profile 0"),
    (lambda: Signature.from_bounds({"x": [([1, 1], [1], [1, 1])]}), "min of rank 2, opt of rank 1"),
    (lambda: Signature.from_bounds({"x": [([4], [2], [8])]}), "min 4, opt 2, max 8"),
    (lambda: Signature.from_bounds({"x": [([-1], [2], [8])]}), "between 0 and 2^63-1"),
    (lambda: Signature.from_bounds({"x": [([1.5], [2], [8])]}), "must be an integer"),
    (lambda: Signature.from_bounds({"x": [([True], [2], [8])]}), "must be an integer"),
    (lambda: Signature.from_bounds({"x": [([1] * 9, [1] * 9, [1] * 9)]}), "at most 8 dimensions"),
    (lambda: Signature.from_bounds({"": [([1], [1], [1])]}), "empty name"),
    (lambda: Signature.from_bounds({"x": [([1], [1], [1])]}, {"s": [("y", 0)]}), "refers to input 'y'"),
    (lambda: Signature.from_bounds({"x": [([1], [1], [1])]}, {"s": [("x", 1)]}), "dim 1 of input 'x', which has rank 1"),
    (lambda: Signature.from_bounds({"x": [([1], [1], [1])]}, {"s": [("x", 0)], "t": [("x", 0)]}),
     "named both 's' and 't'"),
    (lambda: Signature.from_bounds({"x": [([1], [1], [1])]}, {"": [("x", 0)]}), "empty name"),
    (lambda: Signature.from_bounds({"x": [([1], [1], [1])]}, [{"name": "s", "input": "x", "dim": 0,
                                                                 "ranges": [[3, 2]]}]), "0 <= lo <= hi"),
    (lambda: Signature.from_bounds({"x": [([1], [1], [1])]}, [{"name": "s", "input": "x", "dim": 0,
                                                                 "ranges": [[1, 1], [1, 1]]}]), "has 2 ranges"),
    (lambda: Signature.from_bounds({"x": {"min": [1]}}), "one bounds entry per profile"),
    (lambda: Signature.from_bounds({"x": [{"lo": [1]}]}), "must give min/opt/max"),
    (lambda: Signature.from_torch_trt([]), "non-empty list"),
    (lambda: Signature.from_torch_trt([{"x": {"shape": [1]}}, {"y": {"shape": [1]}}]),
     "profile 1 describes different inputs than profile 0 (missing 'x'; unexpected 'y')"),
    (lambda: Signature.from_torch_trt([["x"]]), "must be a dict"),
    (lambda: Signature(0, ()), "at least one optimization profile"),
    (lambda: Signature.from_json(b"{"), "not valid JSON"),
    (lambda: Signature.from_dict({"inputs": []}), "no 'num_profiles'"),
    (lambda: Signature.from_dict({"num_profiles": 1, "inputs": [{"name": "x"}]}), "inputs[0]"),
])
def test_invalid_signatures_are_refused_with_a_reason(build, message):
    with pytest.raises(SignatureError) as info:
        build()
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_duplicate_inputs_are_refused():
    with pytest.raises(SignatureError, match="both named 'x'"):
        Signature.from_bounds([("x", [([1], [1], [1])]), ("x", [([1], [1], [1])])])


def test_symbolic_dim_objects_are_accepted():
    sig = Signature.from_bounds({"x": [([1], [1], [4])]}, [SymbolicDim("n", "x", 0, ((1, 4),))])
    assert sig.symbol_ranges("n") == ((1, 4),)


def test_queries_stay_linear_on_thousands_of_inputs_and_symbols():
    import time

    n = 4096
    start = time.perf_counter()
    sig = Signature.from_bounds({f"in_{k}": [([1, 1], [1, 2], [1, 8])] for k in range(n)},
                                symbolic_dims={"seq": [(f"in_{k}", 1) for k in range(n)]})
    assert sig.problems() == []
    assert all(sig.input(f"in_{k}").rank == 2 for k in range(n))
    assert sig.symbol_ranges("seq") == ((1, 8),)
    assert time.perf_counter() - start < 5  # comparing every pair took minutes at this size


def test_more_profiles_than_the_runtime_accepts_are_refused():
    from etrt.signature import MAX_PROFILES

    assert MAX_PROFILES == 256
    with pytest.raises(SignatureError, match="above the limit of 256"):
        Signature(257, ())
