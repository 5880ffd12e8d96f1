"""etrt.blob: the shared vectors, round trips, and the main malformations.

The C++ side (tests/blob) checks the same vectors, so both writers produce the
same bytes; the reader is one, src/blob's, reached here through libetrt.
"""

import json
import random
import struct
from pathlib import Path

import pytest
from _generated import assert_matches_fresh_generation

from etrt import blob
from etrt.blob import (
    AliasedIo,
    BlobError,
    DelegateState,
    IoBinding,
    Metadata,
    ProfileBounds,
    ProfileSignature,
    SignatureInput,
    SymbolicDim,
    parse_blob,
    write_blob,
)

VECTOR_DIR = Path(__file__).resolve().parents[1] / "vectors" / "blob"
VALID_CASES = sorted(p.stem for p in VECTOR_DIR.glob("*.blob"))
INVALID_CASES = json.loads((VECTOR_DIR / "invalid" / "invalid.json").read_text())


def _metadata_from_description(d) -> Metadata:
    # Built field by field, not through etrt.blob's decoder, so a decoder bug
    # cannot hide behind itself.
    sig = d.get("profile_signature")
    return Metadata(
        io_bindings=[IoBinding(b["name"], b["dtype"], b["shape"], b["is_input"]) for b in d["io_bindings"]],
        aliased_io=[AliasedIo(a["output"], a["input"], a["kind"]) for a in d["aliased_io"]],
        hardware_compatible=d["hardware_compatible"],
        device_id=d["device_id"],
        serialized_metadata=d["serialized_metadata"],
        target_platform=d["target_platform"],
        profile_signature=None
        if sig is None
        else ProfileSignature(
            num_profiles=sig["num_profiles"],
            inputs=[
                SignatureInput(i["name"], [ProfileBounds(p["min"], p["opt"], p["max"]) for p in i["profiles"]])
                for i in sig["inputs"]
            ],
            symbolic_dims=[
                SymbolicDim(s["name"], s["input"], s["dim"], [tuple(r) for r in s["ranges"]])
                for s in sig["symbolic_dims"]
            ],
        ),
        delegate_state=[DelegateState(s["name"], s["input"], s["output"], s["initial_value"])
                        for s in d.get("delegate_state", [])],
    )


def _raw_blob(metadata_json: bytes, engine=b"\x5a" * 16, magic=b"TR01", **fields) -> bytes:
    eo = (32 + len(metadata_json) + 15) // 16 * 16
    h = {"mo": 32, "ms": len(metadata_json), "eo": eo, "es": len(engine)}
    h.update(fields)
    header = struct.pack("<4sIIIQ8s", magic, h["mo"], h["ms"], h["eo"], h["es"], b"\x01" + b"\x00" * 7)
    return header + metadata_json + b"\x00" * (eo - 32 - len(metadata_json)) + engine


def _error(data: bytes) -> str:
    with pytest.raises(BlobError) as info:
        parse_blob(data)
    message = str(info.value)
    assert message.startswith("TensorRT blob: "), message
    return message


@pytest.fixture
def llm_metadata() -> Metadata:
    return Metadata(
        io_bindings=[
            IoBinding("input_ids", "int64", [1, -1]),
            IoBinding("kv_cache", "float16", [2, 4, 2048, 64]),
            IoBinding("logits", "float32", [1, -1, 32000], is_input=False),
            IoBinding("kv_cache_out", is_input=False),
        ],
        aliased_io=[AliasedIo("kv_cache_out", "kv_cache")],
        profile_signature=ProfileSignature(
            num_profiles=2,
            inputs=[
                SignatureInput(
                    "input_ids",
                    [ProfileBounds([1, 1], [1, 1], [1, 1]), ProfileBounds([1, 32], [1, 512], [1, 2048])],
                )
            ],
            symbolic_dims=[SymbolicDim("seq_len", "input_ids", 1, [(1, 1), (32, 2048)])],
        ),
    )


# --- shared vectors ----------------------------------------------------------


def test_vector_set_covers_the_required_cases():
    for required in ("upstream_minimal", "aliased_io_tr02", "profile_signature_llm", "escaped_strings", "no_padding"):
        assert required in VALID_CASES
    assert len(INVALID_CASES) >= 10


@pytest.mark.parametrize("case", VALID_CASES)
def test_writer_reproduces_the_vector_bytes(case):
    description = json.loads((VECTOR_DIR / f"{case}.json").read_text())
    metadata = _metadata_from_description(description["metadata"])
    engine = bytes.fromhex(description["engine_hex"])
    assert write_blob(metadata, engine) == (VECTOR_DIR / f"{case}.blob").read_bytes()


@pytest.mark.parametrize("case", VALID_CASES)
def test_reader_returns_the_described_metadata_and_engine(case):
    description = json.loads((VECTOR_DIR / f"{case}.json").read_text())
    metadata, engine = parse_blob((VECTOR_DIR / f"{case}.blob").read_bytes())
    assert metadata == _metadata_from_description(description["metadata"])
    assert engine == bytes.fromhex(description["engine_hex"])


@pytest.mark.parametrize("case", INVALID_CASES, ids=[c["case"] for c in INVALID_CASES])
def test_invalid_vector_is_refused_with_the_shared_message(case):
    assert case["error"] in _error((VECTOR_DIR / "invalid" / f"{case['case']}.blob").read_bytes())


def test_committed_vectors_match_a_fresh_generation(tmp_path):
    assert_matches_fresh_generation(VECTOR_DIR / "make_vectors.py", (".json", ".blob"), tmp_path)


def test_no_padding_vector_really_has_no_padding():
    data = (VECTOR_DIR / "no_padding.blob").read_bytes()
    _, mo, ms, eo, _, _ = struct.unpack("<4sIIIQ8s", data[:32])
    assert mo + ms == eo


# --- round trips and layout --------------------------------------------------


def test_round_trip_keeps_metadata_and_engine(llm_metadata):
    engine = bytes(range(256)) * 3
    metadata, out = parse_blob(write_blob(llm_metadata, engine))
    assert metadata == llm_metadata
    assert out == engine


def test_magic_is_tr02_only_with_aliased_io(llm_metadata):
    assert write_blob(llm_metadata, b"e")[:4] == b"TR02"
    llm_metadata.aliased_io = []
    assert write_blob(llm_metadata, b"e")[:4] == b"TR01"


def test_header_mirrors_upstream_layout():
    m = Metadata([IoBinding("x"), IoBinding("y", is_input=False)])
    data = write_blob(m, b"abcde")
    text = blob.metadata_to_json(m)
    magic, mo, ms, eo, es, reserved = struct.unpack("<4sIIIQ8s", data[:32])
    assert (magic, mo, ms, eo, es) == (b"TR01", 32, len(text), (32 + len(text) + 15) // 16 * 16, 5)
    assert reserved == b"\x01" + b"\x00" * 7
    assert data[32 : 32 + ms] == text
    assert data[32 + ms : eo] == b"\x00" * (eo - 32 - ms)
    assert text == (
        b'{"io_bindings":[{"name":"x","dtype":"","shape":[],"is_input":true},'
        b'{"name":"y","dtype":"","shape":[],"is_input":false}],"aliased_io":[],"hardware_compatible":false,'
        b'"device_id":0,"serialized_metadata":"","target_platform":""}'
    )


def test_missing_optional_keys_take_upstream_defaults():
    metadata, _ = parse_blob(_raw_blob(b'{"io_bindings":[{"name":"x"}]}'))
    assert metadata == Metadata([IoBinding("x", "", [], True)])


def test_missing_or_empty_alias_kind_means_kv_cache_update():
    text = (
        b'{"io_bindings":[{"name":"a"},{"name":"b"},{"name":"c","is_input":false},{"name":"d","is_input":false}],'
        b'"aliased_io":[{"output":"c","input":"a"},{"output":"d","input":"b","kind":""}]}'
    )
    metadata, _ = parse_blob(_raw_blob(text, magic=b"TR02"))
    assert [a.kind for a in metadata.aliased_io] == ["kv_cache_update", "kv_cache_update"]


def test_unknown_keys_are_ignored():
    text = (
        b'{"future":1,"io_bindings":[{"name":"x","is_shape_tensor":false}],"profile_signature":{"num_profiles":1,'
        b'"x":2,"inputs":[{"name":"x","profiles":[{"min":[1],"opt":[1],"max":[1],"label":"d"}]}]}}'
    )
    metadata, _ = parse_blob(_raw_blob(text))
    assert metadata.profile_signature.symbolic_dims == []


def test_bom_before_the_metadata_is_skipped():
    metadata, _ = parse_blob(_raw_blob(b'\xef\xbb\xbf{"io_bindings":[]}'))
    assert metadata.io_bindings == []


def test_interleaved_bindings_are_read_in_order_and_split_into_arguments():
    text = (
        b'{"io_bindings":[{"name":"y","is_input":false},{"name":"a"},{"name":"z","is_input":false},{"name":"b"}]}'
    )
    metadata, _ = parse_blob(_raw_blob(text))
    assert [b.name for b in metadata.io_bindings] == ["y", "a", "z", "b"]
    assert [b.name for b in metadata.arguments()] == ["a", "b", "y", "z"]
    assert (metadata.num_inputs, metadata.num_outputs) == (2, 2)


def test_interleaved_vector_lists_an_output_first():
    metadata, _ = parse_blob((VECTOR_DIR / "interleaved_bindings.blob").read_bytes())
    assert not metadata.io_bindings[0].is_input
    assert [b.name for b in metadata.arguments()] == ["input_ids", "kv_cache", "logits", "kv_cache_out"]


def test_an_unknown_alias_kind_is_kept_for_tools_to_show():
    text = (b'{"io_bindings":[{"name":"a"},{"name":"b","is_input":false}],'
            b'"aliased_io":[{"output":"b","input":"a","kind":"rope"}]}')
    metadata, _ = parse_blob(_raw_blob(text, magic=b"TR02"))
    assert metadata.aliased_io == [AliasedIo("b", "a", "rope")]
    assert write_blob(metadata, b"e")[:4] == b"TR02"


def test_tr01_with_aliased_io_is_accepted():
    text = b'{"io_bindings":[{"name":"a"},{"name":"b","is_input":false}],"aliased_io":[{"output":"b","input":"a"}]}'
    parse_blob(_raw_blob(text, magic=b"TR01"))


def test_non_ascii_is_escaped_like_json_dumps():
    m = Metadata([IoBinding("entr\u00e9e \U0001f600\x7f")])
    assert b'"name":"entr\\u00e9e \\ud83d\\ude00\\u007f"' in blob.metadata_to_json(m)


def test_parse_accepts_bytearray_and_memoryview(llm_metadata):
    data = write_blob(llm_metadata, b"engine")
    assert parse_blob(bytearray(data))[0] == llm_metadata
    assert parse_blob(memoryview(data))[1] == b"engine"


# --- malformations -----------------------------------------------------------


def test_refuses_data_shorter_than_the_header():
    assert "31 bytes, shorter than the 32-byte header" in _error(b"TR01" + b"\x00" * 27)


def test_refuses_unknown_magic_and_quotes_it_safely():
    data = _raw_blob(b'{"io_bindings":[]}', magic=b"TR\x00\xff")
    assert "magic is 'TR\\x00\\xff', expected 'TR01' or 'TR02'" in _error(data)


def test_refuses_an_absurd_engine_size():
    assert "with size 18446744073709551615 runs past the end" in _error(_raw_blob(b'{"io_bindings":[]}', es=2**64 - 1))


def test_refuses_an_engine_offset_inside_the_header():
    assert "engine_offset 0 points inside the 32-byte header" in _error(_raw_blob(b'{"io_bindings":[]}', eo=0))


def test_refuses_overlapping_regions():
    assert "overlaps engine [32, 48)" in _error(_raw_blob(b'{"io_bindings":[]}', eo=32))


@pytest.mark.parametrize(
    "text, fragment",
    [
        (b'{"io_bindings":[', "is not valid JSON"),
        (b'{"io_bindings":[],"device_id":Infinity}', "is not valid JSON"),
        (b'{"io_bindings":[],"x":1e400}', "is not valid JSON"),
        (b'{"io_bindings":[{"name":"\xc3\x28"}]}', "is not valid JSON: invalid UTF-8 at byte 25"),
        (b'{"io_bindings":[],"deep":' + b"[" * 64 + b"]" * 64 + b"}", "nests deeper than 64 levels"),
        (b"[]", "metadata must be a JSON object, got an array"),
        (b"{}", "metadata has no 'io_bindings'"),
        (b'{"io_bindings":{}}', "metadata field 'io_bindings' must be an array, got an object"),
        (b'{"io_bindings":[7]}', "metadata field 'io_bindings[0]' must be an object, got an integer"),
        (b'{"io_bindings":[{"is_input":true}]}', "metadata has no 'io_bindings[0].name'"),
        (b'{"io_bindings":[{"name":"x","is_input":1}]}', "'io_bindings[0].is_input' must be a boolean, got an integer"),
        (
            b'{"io_bindings":[{"name":"x","shape":[true]}]}',
            "'io_bindings[0].shape[0]' must be an integer, got a boolean",
        ),
        (b'{"io_bindings":[{"name":"x","shape":[-9223372036854775809]}]}', "must be an integer, got a number"),
        (b'{"io_bindings":[],"device_id":1.0}', "'device_id' must be an integer, got a number"),
        (b'{"io_bindings":[],"hardware_compatible":null}', "'hardware_compatible' must be a boolean, got null"),
        (b'{"io_bindings":[],"serialized_metadata":1}', "'serialized_metadata' must be a string, got an integer"),
        (b'{"io_bindings":[{"name":"\\ud800"}]}', "surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"),
        (b'{"io_bindings":[{"name":"x"},{"name":"x","is_input":false}]}', "are both named 'x'"),
        (
            b'{"io_bindings":[],"profile_signature":{"num_profiles":0,"inputs":[]}}',
            "profile_signature.num_profiles is 0",
        ),
        (
            b'{"io_bindings":[{"name":"x"}],"profile_signature":{"num_profiles":1,"inputs":[{"name":"x","profiles":'
            b'[{"min":[1],"opt":[1],"max":[1]}]}],"symbolic_dims":[{"name":"s","input":"x","dim":0,"ranges":[[1]]}]}}',
            "'profile_signature.symbolic_dims[0].ranges[0]' must be an array of two integers [lo, hi], "
            "got an array of 1",
        ),
    ],
)
def test_refuses_malformed_metadata(text, fragment):
    assert fragment in _error(_raw_blob(text))


# --- writer refusals ---------------------------------------------------------


def test_writer_refuses_an_empty_engine(llm_metadata):
    with pytest.raises(BlobError, match="the engine is empty"):
        write_blob(llm_metadata, b"")


def test_writer_refuses_what_the_reader_would_refuse(llm_metadata):
    llm_metadata.profile_signature.inputs[0].profiles.pop()
    with pytest.raises(BlobError, match="has 1 profiles but num_profiles is 2"):
        write_blob(llm_metadata, b"e")


def test_writer_refuses_wrong_python_types():
    with pytest.raises(BlobError, match="'io_bindings\\[0\\].is_input' must be a boolean, got an integer"):
        write_blob(Metadata([IoBinding("x", is_input=1)]), b"e")
    with pytest.raises(BlobError, match="'device_id' must be an integer, got a boolean"):
        write_blob(Metadata([], device_id=True), b"e")


def test_writer_refuses_a_lone_surrogate():
    with pytest.raises(BlobError, match="target_platform is not valid UTF-8"):
        write_blob(Metadata([], target_platform="\ud800"), b"e")


# --- robustness --------------------------------------------------------------


def test_mutated_blobs_raise_only_blob_error(llm_metadata):
    seed = write_blob(llm_metadata, bytes(range(40)))
    rng = random.Random(20240601)
    alphabet = b'{}[]",:-0123456789eE.tfnul\\ \x00\x7f\xc3'
    accepted = 0
    for _ in range(3000):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at] = rng.choice(alphabet) if at >= 32 and rng.random() < 0.6 else rng.randrange(256)
        if rng.random() < 0.1:
            del data[rng.randrange(len(data)) :]
        try:
            metadata, engine = parse_blob(bytes(data))
        except BlobError as e:
            assert str(e).startswith("TensorRT blob: ")
            continue
        accepted += 1
        assert parse_blob(write_blob(metadata, engine))[0] == metadata
    assert accepted > 50


# --- limits (docs/limits.md), linear time, names in messages ---------------------------------------------------


def _raw(metadata_json: bytes) -> bytes:
    """A well-formed layout around any metadata text (the C++ tests' raw_blob)."""
    eo = (blob.HEADER_SIZE + len(metadata_json) + 15) // 16 * 16
    header = struct.pack(blob.HEADER_FORMAT, b"TR01", blob.HEADER_SIZE, len(metadata_json), eo, 16, blob.RESERVED)
    return header + metadata_json + b"\x00" * (eo - blob.HEADER_SIZE - len(metadata_json)) + bytes(16)


def _many_bindings(n: int, last: str = "") -> bytes:
    items = [{"name": last if last and k == n - 1 else f"b{k}", "is_input": k % 2 == 0} for k in range(n)]
    return json.dumps({"io_bindings": items}, separators=(",", ":")).encode()


def test_bindings_at_the_limit_parse_and_a_duplicate_among_them_is_found_quickly():
    import time

    metadata, _ = parse_blob(_raw(_many_bindings(blob.MAX_IO_BINDINGS)))
    assert len(metadata.io_bindings) == 16384
    start = time.perf_counter()
    assert "io_bindings[0] and io_bindings[16383] are both named 'b0'" in _error(
        _raw(_many_bindings(blob.MAX_IO_BINDINGS, "b0")))
    assert time.perf_counter() - start < 5


def test_too_many_bindings_are_refused_from_the_text_before_parsing():
    body = b",".join([b"0"] * (blob.MAX_IO_BINDINGS + 1))
    assert "metadata field 'io_bindings' has more than 16384 entries" in _error(_raw(b'{"io_bindings":[' + body + b"],"))
    assert "metadata field 'aliased_io' has more than 16384 entries" in _error(
        _raw(b'{"io_bindings":[],"aliased_io":[' + body + b"]}"))


def test_metadata_above_16_mib_is_refused_before_parsing():
    prefix = b'{"io_bindings":[],"serialized_metadata":"'
    at_limit = prefix + b"a" * (blob.MAX_METADATA_SIZE - len(prefix) - 2) + b'"}'
    assert len(at_limit) == 16 * 2**20
    blob.parse_blob(_raw(at_limit))
    over = prefix + b"a" * (blob.MAX_METADATA_SIZE - len(prefix) - 1) + b'"}'
    assert ("metadata (16777217 bytes at offset 32) is larger than the limit of 16777216 bytes"
            in _error(_raw(over)))


def test_the_signature_is_held_to_the_profile_limits():
    assert "profile_signature.num_profiles is 2147483647, above the limit of 256" in _error(_raw(
        b'{"io_bindings":[],"profile_signature":{"num_profiles":2147483647,"inputs":[]}}'))
    m = Metadata(io_bindings=[IoBinding("x", is_input=True)], profile_signature=ProfileSignature(
        2, [SignatureInput("x", [ProfileBounds([1], [1], [1])] * 2)],
        [SymbolicDim("s", "x", 0, [(1, 1), (1, 1)])] * (blob.MAX_PROFILE_ENTRIES // 2 + 1)))
    with pytest.raises(BlobError, match="profile_signature has 32769 symbolic dims x 2 profiles = 65538 entries"):
        blob.validate_metadata(m)


def test_the_writer_refuses_what_the_reader_would():
    m = Metadata(io_bindings=[IoBinding(f"b{k}") for k in range(blob.MAX_IO_BINDINGS + 1)])
    with pytest.raises(BlobError, match="metadata field 'io_bindings' has more than 16384 entries"):
        write_blob(m, b"e")
    with pytest.raises(BlobError, match="io_bindings\\[0\\].name is 4097 bytes long, above the limit of 4096"):
        write_blob(Metadata(io_bindings=[IoBinding("n" * 4097)]), b"e")
    write_blob(Metadata(io_bindings=[IoBinding("n" * 4096)]), b"e")


def test_names_in_messages_have_control_characters_escaped():
    assert blob.escape_name("a\x00b") == "a\\x00b"
    assert blob.escape_name("tab\there\x7f") == "tab\\x09here\\x7f"
    assert blob.escape_name("back\\slash") == "back\\\\slash"
    assert blob.escape_name("entr\u00e9e") == "entr\u00e9e"
    message = _error(_raw(b'{"io_bindings":[{"name":"in\\u0000put"}]}'))
    assert "io_bindings[0].name 'in\\x00put' contains a NUL byte" in message and "\x00" not in message
    assert "are both named 'a\\x0ab'" in _error(_raw(b'{"io_bindings":[{"name":"a\\nb"},{"name":"a\\nb"}]}'))
