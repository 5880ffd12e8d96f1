"""Generates the shared blob test vectors from python/etrt/blob/.

    .venv/bin/python tests/vectors/blob/make_vectors.py [OUT_DIR]

For each case it writes <case>.json (the input: metadata in the blob's own JSON
schema plus the engine bytes as hex) and <case>.blob (the bytes the writer must
produce). Under invalid/ it writes malformed blobs and invalid.json, listing
for each the message fragment the reader must report. There is one reader,
src/blob's parse_blob: the C++ tests (tests/blob) call it directly, and the
pytest (tests/python/test_blob.py) through libetrt (etrt.blob.parse_blob), so
both hold the same code to the fragments; the pytest also reruns this script
and checks that the committed files still match.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "python"))

from etrt import blob  # noqa: E402


def engine(n: int, seed: int = 0) -> bytes:
    return bytes((i * 37 + seed * 101 + 11) % 256 for i in range(n))


def binding(name, is_input, dtype="", shape=()):
    return {"name": name, "dtype": dtype, "shape": list(shape), "is_input": is_input}


def metadata(io_bindings, aliased_io=(), hardware_compatible=False, device_id=0, serialized_metadata="",
             target_platform="", profile_signature=None, delegate_state=None):
    m = {
        "io_bindings": list(io_bindings),
        "aliased_io": list(aliased_io),
        "hardware_compatible": hardware_compatible,
        "device_id": device_id,
        "serialized_metadata": serialized_metadata,
        "target_platform": target_platform,
    }
    if profile_signature is not None:
        m["profile_signature"] = profile_signature
    if delegate_state is not None:
        m["delegate_state"] = delegate_state
    return m


LLM_SIGNATURE = {
    "num_profiles": 2,
    "inputs": [
        {"name": "input_ids", "profiles": [
            {"min": [1, 1], "opt": [1, 1], "max": [1, 1]},
            {"min": [1, 32], "opt": [1, 512], "max": [1, 2048]},
        ]},
        {"name": "position_ids", "profiles": [
            {"min": [1, 1], "opt": [1, 1], "max": [1, 1]},
            {"min": [1, 32], "opt": [1, 512], "max": [1, 2048]},
        ]},
    ],
    "symbolic_dims": [
        {"name": "seq_len", "input": "input_ids", "dim": 1, "ranges": [[1, 1], [32, 2048]]},
        {"name": "seq_len", "input": "position_ids", "dim": 1, "ranges": [[1, 1], [32, 2048]]},
    ],
}


def no_padding_metadata():
    # Grow serialized_metadata until 32 + len(json) is a multiple of 16, so the
    # engine starts right after the metadata with no padding at all.
    for k in range(16):
        m = metadata([binding("x", True), binding("y", False)], serialized_metadata="p" * k)
        if (blob.HEADER_SIZE + len(blob.metadata_to_json(blob.metadata_from_dict(m)))) % 16 == 0:
            return m
    raise AssertionError("unreachable: one of 16 consecutive lengths is aligned")


CASES = {
    # What Torch-TensorRT's exporter writes for a converted module: names only.
    "upstream_minimal": (metadata([binding("x", True), binding("y", False)]), engine(12)),
    "upstream_typed": (
        metadata(
            [binding("input0", True, "float32", [1, 3, 224, 224]), binding("mask", True, "bool", [-1, 16]),
             binding("output0", False, "float16", [1, 1000])],
            hardware_compatible=True, device_id=1, serialized_metadata="gASVAAAAAAAAAAB9lC4=",
            target_platform="linux_x86_64"),
        engine(100, 1)),
    "no_bindings": (metadata([]), engine(1, 2)),
    # TR02: aliased outputs written in place into inputs.
    "aliased_io_tr02": (
        metadata(
            [binding("tokens", True, "int64", [1, -1]), binding("kv_cache", True, "float16", [2, 8, 2048, 64]),
             binding("scratch", True), binding("logits", False, "float32", [1, -1, 32000]),
             binding("kv_cache_out", False), binding("scratch_out", False)],
            aliased_io=[{"output": "kv_cache_out", "input": "kv_cache", "kind": "kv_cache_update"},
                        {"output": "scratch_out", "input": "scratch", "kind": "user"}]),
        engine(64, 3)),
    # Inputs and outputs interleaved, an output first: the delegate's arguments
    # are the inputs in listed order (input_ids, kv_cache), then the outputs
    # (logits, kv_cache_out). Readers keep the listed order.
    "interleaved_bindings": (
        metadata(
            [binding("logits", False, "float32", [1, -1, 32000]), binding("input_ids", True, "int64", [1, -1]),
             binding("kv_cache_out", False, "float16", [2, 8, 2048, 64]),
             binding("kv_cache", True, "float16", [2, 8, 2048, 64])],
            aliased_io=[{"output": "kv_cache_out", "input": "kv_cache", "kind": "kv_cache_update"}]),
        engine(40, 8)),
    # etrt's addition: a decode profile [1,1] and a prefill profile [1,32..2048].
    "profile_signature_llm": (
        metadata(
            [binding("input_ids", True, "int64", [1, -1]), binding("position_ids", True, "int64", [1, -1]),
             binding("logits", False, "float32", [1, -1, 32000])],
            profile_signature=LLM_SIGNATURE),
        engine(48, 4)),
    "profile_signature_no_symbolic_dims": (
        metadata(
            [binding("image", True, "float32", [-1, 3, 224, 224]), binding("scale", True, "float32", [1]),
             binding("out", False)],
            profile_signature={
                "num_profiles": 3,
                "inputs": [
                    {"name": "image", "profiles": [
                        {"min": [1, 3, 224, 224], "opt": [1, 3, 224, 224], "max": [1, 3, 224, 224]},
                        {"min": [2, 3, 224, 224], "opt": [4, 3, 224, 224], "max": [8, 3, 224, 224]},
                        {"min": [9, 3, 224, 224], "opt": [32, 3, 224, 224], "max": [64, 3, 224, 224]},
                    ]},
                    {"name": "scale", "profiles": [{"min": [1], "opt": [1], "max": [1]}] * 3},
                ],
                "symbolic_dims": [],
            }),
        engine(33, 5)),
    # Python's json.dumps escaping, which the C++ writer must reproduce:
    # short escapes, \u00XX for other control bytes and DEL, \uXXXX for
    # non-ASCII, surrogate pairs above U+FFFF, '/' left alone.
    "escaped_strings": (
        metadata(
            [binding("entr\u00e9e", True, "float32", [1]), binding("\u8f38\u5165", True),
             binding("\U0001f600 \"q\" \\ /", False, "\u00b5s")],
            serialized_metadata="line1\nline2\ttab\r\b\f\x00\x01\x1f\x7f \u00e9 \u20ac \U0001f600 \U0010ffff",
            target_platform="plat\u2028form\ud7ff\ue000\uffff"),
        engine(20, 6)),
    "no_padding": (no_padding_metadata(), engine(16, 7)),
    # etrt's second addition, last: state the delegate owns (the call passes neither kv_cache nor kv_cache_out, nor
    # acc nor acc_out). kv_cache is written in place and starts as zeros; acc is written back and starts from the
    # program's named data.
    "delegate_state": (
        metadata(
            [binding("tokens", True, "int64", [1, -1]), binding("kv_cache", True, "float16", [2, 8, 2048, 64]),
             binding("acc", True, "float32", [1, 4]), binding("logits", False, "float32", [1, -1, 32000]),
             binding("kv_cache_out", False, "float16", [2, 8, 2048, 64]), binding("acc_out", False, "float32", [1, 4])],
            aliased_io=[{"output": "kv_cache_out", "input": "kv_cache", "kind": "kv_cache_update"}],
            profile_signature={"num_profiles": 1, "inputs": [
                {"name": "tokens", "profiles": [{"min": [1, 1], "opt": [1, 1], "max": [1, 64]}]}], "symbolic_dims": []},
            delegate_state=[{"name": "layers.0.kv_cache", "input": "kv_cache", "output": "kv_cache_out",
                             "initial_value": ""},
                            {"name": "acc", "input": "acc", "output": "acc_out", "initial_value": "etrt_state/acc"}]),
        engine(24, 9)),
}


def raw_blob(metadata_json: bytes, engine_bytes: bytes, magic: bytes = b"TR01", **fields) -> bytes:
    """A blob with arbitrary metadata text and header fields (the writer refuses to make bad ones)."""
    eo = (blob.HEADER_SIZE + len(metadata_json) + 15) // 16 * 16
    h = {"mo": blob.HEADER_SIZE, "ms": len(metadata_json), "eo": eo, "es": len(engine_bytes)}
    h.update(fields)
    header = struct.pack(blob.HEADER_FORMAT, magic, h["mo"], h["ms"], h["eo"], h["es"], blob.RESERVED)
    return header + metadata_json + b"\x00" * (eo - blob.HEADER_SIZE - len(metadata_json)) + engine_bytes


def compact(m) -> bytes:
    return json.dumps(m, separators=(",", ":")).encode()


def invalid_cases():
    good_meta = metadata([binding("x", True), binding("y", False)])
    good_json = compact(good_meta)
    good = raw_blob(good_json, engine(16))
    size = len(good)
    sig_meta = CASES["profile_signature_llm"][0]

    def with_meta(**changes):
        m = json.loads(json.dumps(sig_meta))
        for k, v in changes.items():
            m[k] = v
        return m

    def sig(mutate):
        m = json.loads(json.dumps(sig_meta))
        mutate(m["profile_signature"])
        return raw_blob(compact(m), engine(16))

    cases = {
        "truncated_header": (good[:31], "the delegate data is 31 bytes, shorter than the 32-byte header"),
        "bad_magic": (b"TR03" + good[4:], "magic is 'TR03', expected 'TR01' or 'TR02'"),
        "metadata_offset_in_header": (raw_blob(good_json, engine(16), mo=16),
                                      "metadata_offset 16 points inside the 32-byte header"),
        "engine_offset_in_header": (raw_blob(good_json, engine(16), eo=16),
                                    "engine_offset 16 points inside the 32-byte header"),
        "engine_offset_unaligned": (raw_blob(good_json, engine(16), eo=104),
                                    "engine_offset 104 is not a multiple of 16"),
        "metadata_past_end": (raw_blob(good_json, engine(16), ms=size),
                              f"metadata at offset 32 with size {size} ends at byte {size + 32}, past the end of the "
                              f"{size}-byte blob"),
        "engine_past_end_u64": (raw_blob(good_json, engine(16), es=2**64 - 1),
                                f"with size 18446744073709551615 runs past the end of the {size}-byte blob"),
        "engine_zero_size": (raw_blob(good_json, engine(16), es=0), "engine_size is 0"),
        "regions_overlap": (raw_blob(good_json, engine(16), eo=96, es=16), "overlaps engine [96, 112)"),
        "json_broken": (raw_blob(good_json[:-1], engine(16)), "is not valid JSON"),
        "json_invalid_utf8": (raw_blob(good_json.replace(b'"x"', b'"\xff"'), engine(16)), "is not valid JSON"),
        "json_nan": (raw_blob(good_json.replace(b'"device_id":0', b'"device_id":NaN'), engine(16)),
                     "is not valid JSON"),
        "json_trailing_nul": (raw_blob(good_json + b"\x00}", engine(16)),
                              f"is not valid JSON: NUL byte at byte {len(good_json)}"),
        "json_not_object": (raw_blob(b"[]", engine(16)), "metadata must be a JSON object, got an array"),
        "io_bindings_missing": (raw_blob(b'{"device_id":0}', engine(16)), "metadata has no 'io_bindings'"),
        "binding_name_empty": (raw_blob(compact(metadata([binding("", True)])), engine(16)),
                               "io_bindings[0].name is empty"),
        "binding_names_duplicate": (raw_blob(compact(metadata([binding("x", True), binding("x", False)])), engine(16)),
                                    "io_bindings[0] and io_bindings[1] are both named 'x'"),
        "device_id_string": (raw_blob(compact(with_meta(device_id="0")), engine(16)),
                             "metadata field 'device_id' must be an integer, got a string"),
        "shape_out_of_int64": (raw_blob(compact(metadata([binding("x", True)])).replace(
                                            b'"shape":[]', b'"shape":[9223372036854775808]'), engine(16)),
                               "metadata field 'io_bindings[0].shape[0]' is 9223372036854775808, outside the range "
                               "of a 64-bit signed integer"),
        "alias_unknown_output": (
            raw_blob(compact(metadata([binding("x", True), binding("y", False)],
                                      aliased_io=[{"output": "z", "input": "x", "kind": "user"}])),
                     engine(16), b"TR02"),
            "aliased_io[0].output 'z' is not an output in io_bindings"),
        "signature_profile_count": (sig(lambda s: s["inputs"][0]["profiles"].pop()),
                                    "profile_signature.inputs[0] 'input_ids' has 1 profiles but num_profiles is 2"),
        "signature_min_above_opt": (sig(lambda s: s["inputs"][1]["profiles"][1].update(min=[1, 600])),
                                    "profile_signature.inputs[1] 'position_ids' profile 1 dim 1 has min 600, opt 512, "
                                    "max 2048"),
        "signature_symbolic_dim_out_of_rank": (sig(lambda s: s["symbolic_dims"][0].update(dim=2)),
                                               "profile_signature.symbolic_dims[0] 'seq_len' is dim 2 of input "
                                               "'input_ids', which has rank 2"),
        # Names are quoted with control characters escaped; a NUL cannot name a TensorRT tensor.
        "binding_name_nul": (raw_blob(compact(metadata([binding("in\x00put", True)])), engine(16)),
                             "io_bindings[0].name 'in\\x00put' contains a NUL byte; TensorRT tensor names are C "
                             "strings"),
        "binding_names_duplicate_control": (
            raw_blob(compact(metadata([binding("a\nb", True), binding("a\nb", False)])), engine(16)),
            "io_bindings[0] and io_bindings[1] are both named 'a\\x0ab'"),
        "alias_unknown_input_escaped": (
            raw_blob(compact(metadata([binding("x", True), binding("y", False)],
                                      aliased_io=[{"output": "y", "input": "\\\x7f", "kind": "user"}])),
                     engine(16), b"TR02"),
            "aliased_io[0].input '\\\\\\x7f' is not an input in io_bindings"),
        # The limits (docs/limits.md), each checked before anything sized by it is built.
        "binding_name_too_long": (raw_blob(compact(metadata([binding("n" * 4097, True)])), engine(16)),
                                  "io_bindings[0].name is 4097 bytes long, above the limit of 4096"),
        # Counted in the text, before anything is parsed (and so before the parser allocates for them)...
        "io_bindings_above_limit": (raw_blob(b'{"io_bindings":[' + b",".join([b"0"] * 16385) + b"]}", engine(16)),
                                    "metadata field 'io_bindings' has more than 16384 entries"),
        "aliased_io_above_limit": (raw_blob(b'{"io_bindings":[],"aliased_io":[' + b",".join([b"0"] * 16385) + b"]}",
                                            engine(16)),
                                   "metadata field 'aliased_io' has more than 16384 entries"),
        "io_bindings_above_limit_then_broken_json": (
            raw_blob(b'{"io_bindings":[' + b",".join([b"0"] * 16385) + b"],", engine(16)),
            "metadata field 'io_bindings' has more than 16384 entries"),
        "io_bindings_above_limit_under_a_repeated_key": (
            raw_blob(b'{"io_bindings":[' + b",".join([b"0"] * 16385) + b'],"io_bindings":[]}', engine(16)),
            "metadata field 'io_bindings' has more than 16384 entries"),
        # ...and, for a key the text scan does not recognize (written with an escape), counted after parsing.
        "io_bindings_above_limit_escaped_key": (
            raw_blob(b'{"io\\u005fbindings":[' + b",".join([b"0"] * 16385) + b"]}", engine(16)),
            "metadata field 'io_bindings' has 16385 entries, above the limit of 16384"),
        "signature_num_profiles_above_limit": (
            raw_blob(compact(metadata([binding("x", True)],
                                      profile_signature={"num_profiles": 2**31 - 1, "inputs": []})), engine(16)),
            "profile_signature.num_profiles is 2147483647, above the limit of 256"),
        "signature_profiles_above_limit": (
            raw_blob(compact(metadata([binding("x", True)], profile_signature={
                "num_profiles": 257, "inputs": [{"name": "x", "profiles": [0] * 257}]})), engine(16)),
            "metadata field 'profile_signature.inputs[0].profiles' has 257 entries, above the limit of 256"),
        "signature_table_above_limit": (
            raw_blob(compact(metadata([binding("x", True)], profile_signature={
                "num_profiles": 256, "inputs": [{"name": "x", "profiles": [{}] * 256}] + [0] * 256})), engine(16)),
            "profile_signature has 257 inputs x 256 profiles = 65792 entries, above the limit of 65536"),
    }
    state_bindings = [binding("x", True), binding("cache", True), binding("y", False), binding("cache_out", False)]

    def state(entries, bindings=state_bindings):
        return raw_blob(compact(metadata(bindings, delegate_state=entries)), engine(16))

    one = {"name": "cache", "input": "cache", "output": "cache_out"}
    cases.update({
        "state_unknown_input": (state([dict(one, input="kv")]),
                                "delegate_state[0] 'cache': input 'kv' is not an input in io_bindings"),
        "state_output_is_an_input": (state([dict(one, output="x")]),
                                     "delegate_state[0] 'cache': output 'x' is not an output in io_bindings"),
        "state_name_empty": (state([dict(one, name="")]), "delegate_state[0].name is empty"),
        "state_name_missing": (state([{"input": "cache", "output": "cache_out"}]),
                               "metadata has no 'delegate_state[0].name'"),
        "state_names_duplicate": (state([one, dict(one, input="x", output="y")]),
                                  "delegate_state[0] and delegate_state[1] have the same name 'cache'"),
        "state_input_twice": (state([one, dict(one, name="other", output="y")]),
                              "delegate_state[0] and delegate_state[1] have the same input 'cache'"),
        "state_initial_value_not_a_string": (state([dict(one, initial_value=0)]),
                                             "metadata field 'delegate_state[0].initial_value' must be a string, "
                                             "got an integer"),
        "state_not_an_array": (state({"name": "cache"}), "metadata field 'delegate_state' must be an array, got an "
                                                         "object"),
        "state_above_limit": (raw_blob(b'{"io_bindings":[],"delegate_state":[' + b",".join([b"0"] * 16385) + b"]}",
                                       engine(16)),
                              "metadata field 'delegate_state' has more than 16384 entries"),
    })
    return cases


def write_all(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, (meta_dict, engine_bytes) in CASES.items():
        m = blob.metadata_from_dict(meta_dict)
        data = blob.write_blob(m, engine_bytes)
        description = {"metadata": meta_dict, "engine_hex": engine_bytes.hex()}
        (out_dir / f"{name}.json").write_text(json.dumps(description, indent=1) + "\n")
        (out_dir / f"{name}.blob").write_bytes(data)
    invalid_dir = out_dir / "invalid"
    invalid_dir.mkdir(exist_ok=True)
    manifest = []
    for name, (data, fragment) in invalid_cases().items():
        (invalid_dir / f"{name}.blob").write_bytes(data)
        manifest.append({"case": name, "error": fragment})
    (invalid_dir / "invalid.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
