"""Generates the adversarial corpus: small .pte files whose TensorRT delegates
carry hostile blobs and engines (declared counts far beyond the bytes, counts
at and above the documented limits, names with NUL and control characters,
engines the runtime refuses, programs whose planned buffers are too small).

    .venv/bin/python tests/adversarial/make_corpus.py [OUT_DIR]

Writes <case>.pte for every case and corpus.json, which gives for each the
exit status ``etrt validate`` must return and a fragment its output (stdout
and stderr) must contain. tests/python/test_adversarial.py runs ``etrt
inspect`` and ``etrt validate`` on every file under a time and memory limit
and checks both, and reruns this script to check that the committed files do
not drift. See docs/limits.md.
"""

from __future__ import annotations

import importlib.util
import json
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "python"))

from etrt import blob  # noqa: E402
from etrt.pte import Program  # noqa: E402


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


E = _load("engine_vectors", ROOT / "tests" / "vectors" / "engine" / "make_vectors.py")
BV = _load("blob_vectors", ROOT / "tests" / "vectors" / "blob" / "make_vectors.py")

OK, INVALID, BAD_INPUT = 0, 1, 2
OPAQUE_PLAN = b"\x7fopaque-tensorrt-plan" * 3


def compact(m) -> bytes:
    return json.dumps(m, separators=(",", ":")).encode()


def raw_blob(metadata_json: bytes, engine: bytes = OPAQUE_PLAN, magic: bytes = b"TR01") -> bytes:
    return BV.raw_blob(metadata_json, engine, magic)


def binding(name, is_input, dtype="float32", shape=(4,)):
    return {"name": name, "dtype": dtype, "shape": list(shape), "is_input": is_input}


def program(blob_bytes: bytes, inputs, outputs) -> bytes:
    """forward(inputs) -> outputs through one TensorRT delegate; tensors are (name, dtype, sizes, dynamic)."""
    prog = Program("segment")
    m = prog.method("forward")
    for name, dtype, sizes, dynamic in list(inputs) + list(outputs):
        m.tensor(name, dtype, sizes, dynamic=dynamic)
    m.delegate_call("TensorRTBackend", blob_bytes, [t[0] for t in inputs] + [t[0] for t in outputs])
    m.set_io([t[0] for t in inputs], [t[0] for t in outputs])
    return prog.to_bytes()


def xy_program(blob_bytes: bytes) -> bytes:
    """The program most cases use: x float32 [4] -> y float32 [4]."""
    return program(blob_bytes, [("x", "float32", [4], False)], [("y", "float32", [4], False)])


def engine_blob(engine: bytes, bindings=None, **metadata) -> bytes:
    """A blob around engine bytes; empty io_bindings (the engine's own IO) unless given. Raw, so the engine may be
    anything."""
    md = {"io_bindings": bindings or [], "aliased_io": [], "hardware_compatible": False, "device_id": 0,
          "serialized_metadata": "", "target_platform": ""}
    md.update(metadata)
    return raw_blob(compact(md), engine)


ONE_IO = E.ONE_IO  # x float32 [4] -> identity -> y float32 [4]


def one_io(**changes) -> bytes:
    return E.variant(ONE_IO, **changes)


def chain_engine(n_profiles: int, n_ops: int) -> bytes:
    """x float32 [1, -1] -> n_ops scales -> y, with n_profiles distinct profiles."""
    io = [E.inp("x", E.F32, [1, -1]), E.out("y", E.F32, [1, -1])]
    intermediates = [(f"t{k}", E.F32) for k in range(n_ops - 1)]
    ops, previous = [], 0
    for k in range(n_ops):
        out = 1 if k == n_ops - 1 else 2 + k
        ops.append(E.op(E.SCALE, previous, o=out, factor=0.5))
        previous = out
    profiles = [[([1, p + 1], [1, p + 1], [1, p + 8])] for p in range(n_profiles)]
    return E.engine(label="chain", io=io, intermediates=intermediates, profiles=profiles, ops=ops, flags=0)


def wide_engine(n: int) -> bytes:
    """n inputs i<k> float32 [2], each copied to its output o<k>: 2n IO tensors, n ops."""
    io = [E.inp(f"i{k}", E.F32, [2]) for k in range(n)] + [E.out(f"o{k}", E.F32, [2]) for k in range(n)]
    return E.engine(label="wide", io=io, profiles=[[([2],) * 3] * n],
                    ops=[E.op(E.IDENTITY, k, o=n + k) for k in range(n)], flags=0)


def signature(inputs, num_profiles, symbolic_dims=()):
    return {"num_profiles": num_profiles, "inputs": inputs, "symbolic_dims": list(symbolic_dims)}


def cases():
    """{name: (pte bytes, validate's exit status, a fragment of its output)}."""
    c = {}

    # ---- blobs: counts, the signature, names ----
    n = 2048  # 4096 bindings: quadratic work on them would take seconds in Python
    many = [binding(f"in_{k}", True, "", ()) for k in range(n)] + [binding(f"out_{k}", False, "", ()) for k in range(n)]
    c["bindings_4096"] = (xy_program(raw_blob(compact({"io_bindings": many}))), INVALID,
                          "the call passes 2 tensor(s), but the blob's io_bindings list 2048 input(s)")
    dup = many[:-1] + [binding("in_0", False, "", ())]
    c["bindings_4096_last_duplicates_first"] = (xy_program(raw_blob(compact({"io_bindings": dup}))), BAD_INPUT,
                                                "io_bindings[0] and io_bindings[4095] are both named 'in_0'")
    c["bindings_above_limit"] = (
        xy_program(raw_blob(b'{"io_bindings":[' + b",".join([b"0"] * 16385) + b"]}")), BAD_INPUT,
        "metadata field 'io_bindings' has more than 16384 entries")
    c["bindings_100000_declared_in_a_short_array"] = (
        xy_program(raw_blob(b'{"io_bindings":[' + b",".join([b"{}"] * 100) + b"]}")), BAD_INPUT,
        "metadata has no 'io_bindings[0].name'")
    aliases = [{"output": f"out_{k}", "input": f"in_{k}", "kind": "user"} for k in range(0, n, 2)]
    c["aliases_1024_user"] = (xy_program(raw_blob(compact({"io_bindings": many, "aliased_io": aliases}),
                                                  magic=b"TR02")), INVALID,
                              "1024 of them written in place into inputs: a call passes 4096 tensors, or 3072")
    c["aliases_above_limit"] = (
        xy_program(raw_blob(b'{"io_bindings":[],"aliased_io":[' + b",".join([b"0"] * 16385) + b"]}")), BAD_INPUT,
        "metadata field 'aliased_io' has more than 16384 entries")
    xy = [binding("x", True), binding("y", False)]
    c["signature_2147483647_profiles"] = (
        xy_program(raw_blob(compact({"io_bindings": xy, "profile_signature": signature([], 2**31 - 1)}))), BAD_INPUT,
        "profile_signature.num_profiles is 2147483647, above the limit of 256")
    bounds = [{"min": [4], "opt": [4], "max": [4]}]
    c["signature_256_profiles"] = (
        xy_program(raw_blob(compact({"io_bindings": xy, "profile_signature": signature(
            [{"name": "x", "profiles": bounds * 256}], 256)}))), OK, "OK: 1 TensorRT delegate(s)")
    c["signature_table_above_limit"] = (
        xy_program(raw_blob(compact({"io_bindings": xy, "profile_signature": signature(
            [{"name": "x", "profiles": [{}] * 256}] + [0] * 256, 256)}))), BAD_INPUT,
        "profile_signature has 257 inputs x 256 profiles = 65792 entries, above the limit of 65536")
    wide_in = [binding(f"s{k}", True, "float32", [1, -1, -1, -1]) for k in range(512)] + [binding("y", False)]
    wide_sig = signature([{"name": f"s{k}", "profiles": [{"min": [1, 1, 1, 1], "opt": [1, 2, 2, 2],
                                                           "max": [1, 8, 8, 8]}]} for k in range(512)], 1,
                         [{"name": "seq", "input": f"s{k}", "dim": d, "ranges": [[1, 8]]}
                          for k in range(512) for d in (1, 2, 3)])
    c["signature_1536_symbolic_dims"] = (xy_program(raw_blob(compact({"io_bindings": wide_in,
                                                                      "profile_signature": wide_sig}))),
                                         INVALID, "the call passes 2 tensor(s), but the blob's io_bindings list 512 "
                                                  "input(s) and 1 output(s)")
    c["metadata_nested_65_deep"] = (xy_program(raw_blob(b'{"io_bindings":[],"x":' + b"[" * 65 + b"]" * 65 + b"}")),
                                    BAD_INPUT, "nests deeper than 64 levels")
    c["binding_name_nul"] = (xy_program(raw_blob(compact({"io_bindings": [binding("x\x00y", True),
                                                                          binding("y", False)]}))),
                             BAD_INPUT, "io_bindings[0].name 'x\\x00y' contains a NUL byte")
    c["binding_names_control_duplicated"] = (
        xy_program(raw_blob(compact({"io_bindings": [binding("x\x1b[31m", True), binding("x\x1b[31m", False)]}))),
        BAD_INPUT, "are both named 'x\\x1b[31m'")
    # Legal names (only NUL is refused) that would drive a terminal: every report prints them escaped.
    ansi = "in\x1b[2J\x1b[31m\r\nput"
    c["binding_name_terminal_escapes"] = (
        program(raw_blob(compact({"io_bindings": [binding(ansi, True, "int64"), binding("y", False)]})),
                [("x", "float32", [4], False)], [("y", "float32", [4], False)]), INVALID,
        "input 'in\\x1b[2J\\x1b[31m\\x0d\\x0aput' is int64 in the blob, but the program passes value 0 of dtype "
        "float32")
    c["binding_name_4097_bytes"] = (xy_program(raw_blob(compact({"io_bindings": [binding("x" * 4097, True)]}))),
                                    BAD_INPUT, "io_bindings[0].name is 4097 bytes long, above the limit of 4096")
    c["blob_engine_size_2_pow_64_minus_1"] = (
        xy_program(BV.raw_blob(compact({"io_bindings": xy}), OPAQUE_PLAN, es=2**64 - 1)), BAD_INPUT,
        "with size 18446744073709551615 runs past the end")

    # ---- GPU-free NvInfer engines the runtime refuses ----
    def refused(name, engine, fragment):
        c[name] = (xy_program(engine_blob(engine)), BAD_INPUT, fragment)

    refused("engine_io_count_100000_declared", E.seal(E.counted(E.prefix_through_flags(), 100000)),
            "the IO tensor count 100000 is above the limit of 16384")
    refused("engine_io_count_at_limit_without_bytes", E.seal(E.counted(E.prefix_through_flags(), 16384)),
            "the IO tensor count 16384 needs at least 131072 more bytes")
    io_only = E.payload(label="one", io=ONE_IO["io"])[:-16]  # up to the constant count
    refused("engine_constant_values_declared_2_pow_40",
            E.seal(io_only + struct.pack("<I", 1) + E._str("c") + E._shape([2]) + struct.pack("<Q", 2**40)),
            "constant 'c' claims 1099511627776 values, only 0 fit in the remaining bytes")
    refused("engine_scratch_2_pow_40", one_io(device_memory=2**40),
            "device memory size 1099511627776 is above the limit 68719476736")
    refused("engine_scratch_plan_above_limit", E.variant(E.SCRATCH_AT_LIMIT, profiles=[[([1, 1], [1, 1],
                                                                                        [9, E.MAX_DIM])]]),
            "the intermediates need more than 68719476736 bytes of scratch memory")
    refused("engine_negative_dim", E.replace_io(ONE_IO, 1, E.out("y", E.F32, [-7])),
            "IO tensor 'y' has an invalid shape [-7]")
    refused("engine_unknown_op_kind", E.replace_op(ONE_IO, 0, E.op(200, 0, o=1)), "has an unknown kind")
    refused("engine_tensor_id_out_of_range", E.replace_op(ONE_IO, 0, E.op(E.IDENTITY, 2**31 - 1, o=1)),
            "refers to a tensor that does not exist")
    refused("engine_nan_scale", E.replace_op(ONE_IO, 0, E.op(E.SCALE, 0, o=1, factor=float("nan"))),
            "scale factor must be finite")
    refused("engine_trailing_bytes", E.seal(E.payload(**ONE_IO) + b"\x00" * 7), "7 unexpected bytes after the last op")
    refused("engine_duplicate_names", E.replace_io(ONE_IO, 1, E.out("x", E.F32, [4])),
            "tensor name 'x' is used twice")
    refused("engine_name_nul", E.replace_io(ONE_IO, 1, E.out("y\x00", E.F32, [4])),
            "tensor #1 name 'y\\x00' contains a NUL byte")
    refused("engine_label_not_utf8", one_io(label=b"\xff\xfe"), "the label '\\xff\\xfe' is not valid UTF-8")
    refused("engine_profile_count_above_limit", one_io(profiles=[[([4],) * 3]] * 257),
            "the profile count 257 is above the limit of 256")
    refused("engine_shape_inference_above_limit", chain_engine(16, 4097),
            "16 profiles x 4097 ops = 65552 shape inferences per bound, above the limit of 65536")
    refused("engine_rank_9", E.replace_io(ONE_IO, 0, E.inp("x", E.F32, [1] * 9)), "has rank 9, above the maximum 8")

    # ---- engines at the limits: read in full, linear time ----
    c["engine_shape_inference_at_limit"] = (
        program(engine_blob(chain_engine(16, 4096)), [("x", "float32", [1, 64], True)],
                [("y", "float32", [1, 64], True)]), OK, "OK: 1 TensorRT delegate(s)")
    c["engine_4096_io_tensors"] = (xy_program(engine_blob(wide_engine(2048))), INVALID,
                                   "the engine has 2048 input(s) and 2048 output(s)")

    # ---- programs the runtime refuses at execute: planned output capacity ----
    grow = dict(label="grow", io=[E.inp("ids", E.I64, [1, -1]), E.out("h", E.F32, [1, -1, 8])],
                constants=[("table", [16, 8], 128)],
                profiles=[[([1, 1], [1, 1], [1, 1])], [([1, 2], [1, 64], [1, 128])]],
                ops=[E.op(E.EMBEDDING, 0, 2, o=1)])
    c["output_capacity_smaller_than_a_profile"] = (
        program(engine_blob(E.engine(**grow)), [("ids", "int64", [1, 128], True)], [("h", "float32", [1, 64, 8], True)]),
        INVALID, "profile 1 produces up to [1, 128, 8] (dim 1: 128 > 64)")
    c["static_output_a_profile_cannot_fill"] = (
        program(engine_blob(E.engine(**grow)), [("ids", "int64", [1, 128], True)], [("h", "float32", [1, 128, 8], False)]),
        OK, "is static in the program, but profile 0 produces [1, 1, 8]; profile 1 produces [1, 2, 8] to [1, 128, 8]")
    return c


def write_all(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name, (data, status, fragment) in sorted(cases().items()):
        (out_dir / f"{name}.pte").write_bytes(data)
        manifest[name] = {"validate_exit": status, "says": fragment}
    (out_dir / "corpus.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    write_all(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
