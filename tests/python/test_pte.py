"""Tests for etrt.pte: the .pte writer, the reader and the JSON spec front door.

Needs flatc and ExecuTorch's schema (the executorch wheel in .venv), nothing
else. The C++ side (tests/pte) proves the same files load in ExecuTorch's
runtime.
"""

import json
import os
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from etrt import pte
from etrt.pte import builder as pte_builder
from etrt.pte import schema as pte_schema
from etrt.pte import (
    DTYPES,
    PteError,
    Program,
    ToolchainError,
    describe_value,
    find_toolchain,
    program_from_spec,
    read_pte,
)

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"
STORAGES = ["segment", "inline"]


def _blob(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


def _sample_program(storage: str, big: int = 1000) -> Program:
    prog = Program(storage)
    m = prog.method("forward", inputs=["x", "n"], outputs=["y", "aux"])
    m.tensor("x", "float32", [1, 8], dynamic=True)
    m.tensor("t", "float16", [1, 8], dynamic=True)
    m.tensor("y", "float32", [1, 8], dynamic=True)
    m.tensor("aux", "int64", [3], dynamic=False)
    m.tensor("mask", "bool", [2, 3, 5], dim_order=[0, 2, 1])
    m.int_value("n", 7)
    m.bool_value("flag", True)
    m.double_value("scale", 0.5)
    m.delegate_call("BackendA", _blob(1, big), args=["x", "n", "t"],
                    compile_specs={"alpha": b"\x00\x01\x02", "beta": "text"})
    m.delegate_call("BackendB", _blob(2, 33), args=["t", "flag", "scale", "y", "aux"])
    m2 = prog.method("decode", inputs=["a"], outputs=["b"])
    m2.tensor("a", "bfloat16", [4, 2048], dynamic=True)
    m2.tensor("b", "uint8", [4, 2048], dynamic=True)
    m2.tensor("i8", "int8", [7])
    m2.tensor("i32", "int32", [])
    m2.delegate_call("BackendA", _blob(1, big), args=["a", "i8", "i32", "b"])
    return prog


@pytest.fixture(scope="module")
def toolchain():
    return find_toolchain()


# ---------------------------------------------------------------------------
# Round trip
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("storage", STORAGES)
def test_round_trip_values_io_and_instructions(tmp_path, storage):
    path = tmp_path / "m.pte"
    summary = _sample_program(storage).write(path)
    assert summary["size"] == path.stat().st_size
    info = read_pte(path)
    prog = info["program"]
    assert info["identifier"] == "ET12"
    assert prog["version"] == 0
    assert [p["name"] for p in prog["execution_plan"]] == ["forward", "decode"]

    fwd = prog["execution_plan"][0]
    vals = [describe_value(v) for v in fwd["values"]]
    assert [v["kind"] for v in vals] == ["tensor"] * 5 + ["int", "bool", "double"]
    x, t, y, aux, mask, n, flag, scale = vals
    assert (x["dtype"], x["sizes"], x["dynamism"], x["dim_order"]) == ("float32", [1, 8], "DYNAMIC_BOUND", [0, 1])
    assert (t["dtype"], t["scalar_type"]) == ("float16", "HALF")
    assert (aux["dtype"], aux["dynamism"], aux["sizes"]) == ("int64", "STATIC", [3])
    assert (mask["dtype"], mask["sizes"], mask["dim_order"]) == ("bool", [2, 3, 5], [0, 2, 1])
    assert (n["value"], flag["value"], scale["value"]) == (7, True, 0.5)
    assert fwd["inputs"] == [0, 5] and fwd["outputs"] == [2, 3]
    chain = fwd["chains"][0]
    assert chain["inputs"] == fwd["inputs"] and chain["outputs"] == fwd["outputs"]
    instrs = chain["instructions"]
    assert [i["instr_args_type"] for i in instrs] == ["DelegateCall", "DelegateCall"]
    assert [i["instr_args"]["delegate_index"] for i in instrs] == [0, 1]
    assert instrs[0]["instr_args"]["args"] == [0, 5, 1]
    assert instrs[1]["instr_args"]["args"] == [1, 6, 7, 2, 3]
    assert [d["id"] for d in fwd["delegates"]] == ["BackendA", "BackendB"]
    assert fwd["operators"] == []
    # every tensor: storage_offset 0, no constant data
    for v in fwd["values"]:
        if v["val_type"] == "Tensor":
            assert v["val"]["storage_offset"] == 0 and v["val"]["data_buffer_idx"] == 0

    dec = prog["execution_plan"][1]
    dvals = [describe_value(v) for v in dec["values"]]
    assert [v["dtype"] for v in dvals] == ["bfloat16", "uint8", "int8", "int32"]
    assert dvals[3]["sizes"] == [] and dvals[3]["nbytes"] == 4


@pytest.mark.parametrize("storage", STORAGES)
def test_round_trip_blobs_and_compile_specs_are_byte_identical(tmp_path, storage):
    path = tmp_path / "m.pte"
    _sample_program(storage).write(path)
    info = read_pte(path)
    ds = info["delegates"]
    assert [(d["method"], d["delegate_index"], d["id"]) for d in ds] == [
        ("forward", 0, "BackendA"), ("forward", 1, "BackendB"), ("decode", 0, "BackendA")]
    assert ds[0]["data"] == _blob(1, 1000)
    assert ds[1]["data"] == _blob(2, 33)
    assert ds[2]["data"] == _blob(1, 1000)
    assert all(isinstance(d["data"], bytes) for d in ds)
    assert ds[0]["compile_specs"] == {"alpha": b"\x00\x01\x02", "beta": b"text"}
    assert ds[1]["compile_specs"] == {}
    raw_specs = info["program"]["execution_plan"][0]["delegates"][0]["compile_specs"]
    assert raw_specs == [{"key": "alpha", "value": b"\x00\x01\x02"}, {"key": "beta", "value": b"text"}]
    assert {d["location"] for d in ds} == {storage.upper()}
    # identical blobs are stored once
    assert ds[0]["index"] == ds[2]["index"]
    if storage == "inline":
        assert len(info["program"]["backend_delegate_data"]) == 2
    else:
        assert len(info["program"]["segments"]) == 3  # constant segment + 2 blobs


@pytest.mark.parametrize("storage", STORAGES)
def test_memory_plan_is_aligned_non_overlapping_and_at_upper_bound(tmp_path, storage):
    prog = _sample_program(storage)
    summary = prog.write(tmp_path / "m.pte")
    info = read_pte(tmp_path / "m.pte")
    for plan in info["program"]["execution_plan"]:
        sizes = plan["non_const_buffer_sizes"]
        assert sizes[0] == 0 and len(sizes) == 2
        spans = []
        for v in plan["values"]:
            d = describe_value(v)
            if d["kind"] != "tensor":
                continue
            assert d["planned"] and d["memory_id"] == 1
            assert d["offset"] % 16 == 0
            n = 1
            for s in d["sizes"]:
                n *= s
            assert d["nbytes"] == n * DTYPES[d["dtype"]][1]
            assert d["offset"] + d["nbytes"] <= sizes[1]
            spans.append((d["offset"], d["offset"] + d["nbytes"]))
        spans.sort()
        for (a0, a1), (b0, _) in zip(spans, spans[1:]):
            assert a1 <= b0, f"overlap in {plan['name']}: {spans}"
        assert sizes[1] % 16 == 0
        assert summary["methods"][plan["name"]]["non_const_buffer_sizes"] == sizes
    # forward: x 32, t 16, y 32, aux 24, mask 30 bytes, each 16-aligned
    tensors = summary["methods"]["forward"]["tensors"]
    assert {k: (v["offset"], v["nbytes"]) for k, v in tensors.items()} == {
        "x": (0, 32), "t": (32, 16), "y": (48, 32), "aux": (80, 24), "mask": (112, 30)}
    assert summary["methods"]["forward"]["non_const_buffer_sizes"] == [0, 144]


def test_unplanned_tensors_have_no_allocation_info(tmp_path):
    prog = Program()
    m = prog.method("forward", inputs=["x"], outputs=["y"])
    m.tensor("x", "float32", [4], dynamic=True, planned=False)
    m.tensor("y", "float32", [4], dynamic=True, planned=False)
    m.delegate_call("B", b"blob", args=["x", "y"])
    prog.write(tmp_path / "u.pte")
    plan = read_pte(tmp_path / "u.pte")["program"]["execution_plan"][0]
    assert plan["non_const_buffer_sizes"] == [0]
    for v in plan["values"]:
        assert "allocation_info" not in v["val"] or v["val"]["allocation_info"] is None
        assert describe_value(v)["planned"] is False


# ---------------------------------------------------------------------------
# File layout facts
# ---------------------------------------------------------------------------


def test_segment_layout(tmp_path):
    blob = _blob(3, 5000)
    prog = Program("segment")
    m = prog.method("forward", inputs=["x"], outputs=["y"])
    m.tensor("x", "float32", [8])
    m.tensor("y", "float32", [8])
    m.delegate_call("B", blob, args=["x", "y"])
    m.delegate_call("B", blob[:100], args=["y", "x"])
    path = tmp_path / "s.pte"
    prog.write(path)
    data = path.read_bytes()
    assert data[4:8] == b"ET12"
    assert data[8:12] == b"eh00"
    length, program_size, base, seg_size = struct.unpack_from("<IQQQ", data, 12)
    assert length == 32
    assert base % 128 == 0 and base >= program_size
    assert base + seg_size == len(data)
    info = read_pte(path)
    assert info["extended_header"] == {"length": 32, "program_size": program_size,
                                       "segment_base_offset": base, "segment_data_size": seg_size}
    segs = info["program"]["segments"]
    assert segs[0] == {"offset": 0, "size": 0}  # the empty constant segment
    assert info["program"]["constant_segment"] == {"segment_index": 0, "offsets": [0]}
    assert info["program"]["constant_buffer"] == [] or "constant_buffer" not in info["program"]
    for s in segs[1:]:
        assert s["offset"] % 128 == 0
    assert data[base + segs[1]["offset"]:base + segs[1]["offset"] + 5000] == blob
    assert data[base + segs[2]["offset"]:base + segs[2]["offset"] + 100] == blob[:100]


@pytest.mark.parametrize("alignment", [None, 64])
def test_inline_layout_and_alignment(tmp_path, alignment):
    blob = _blob(4, 777)
    prog = Program("inline", delegate_alignment=alignment)
    m = prog.method("forward", inputs=["x"], outputs=["x"])
    m.tensor("x", "float32", [8])
    m.delegate_call("B", blob, args=["x"])
    path = tmp_path / "i.pte"
    prog.write(path)
    data = path.read_bytes()
    assert data[4:8] == b"ET12" and data[8:12] != b"eh00"
    assert data.count(blob) == 1
    assert data.index(blob) % (alignment or 16) == 0
    assert read_pte(path)["delegates"][0]["data"] == blob


def test_large_blob_in_a_segment(tmp_path):
    blob = _blob(5, 3 * 1024 * 1024 + 5)
    prog = Program()
    m = prog.method("forward", inputs=["x"], outputs=["y"])
    m.tensor("x", "float32", [1, 2048], dynamic=True)
    m.tensor("y", "float32", [1, 2048], dynamic=True)
    m.delegate_call("TensorRTBackend", blob, args=["x", "y"])
    prog.write(tmp_path / "big.pte")
    info = read_pte(tmp_path / "big.pte")
    assert info["delegates"][0]["data"] == blob


def test_empty_blob_stays_inline(tmp_path):
    prog = Program("segment")
    m = prog.method("forward", inputs=["x"], outputs=["x"])
    m.tensor("x", "float32", [1])
    m.delegate_call("B", b"", args=["x"])
    prog.write(tmp_path / "e.pte")
    info = read_pte(tmp_path / "e.pte")
    assert info["extended_header"] is None
    assert info["delegates"][0]["location"] == "INLINE"
    assert info["delegates"][0]["data"] == b""


def test_several_delegate_calls_feed_each_other(tmp_path):
    prog = Program()
    m = prog.method("forward", inputs=["v0"], outputs=["v5"])
    for i in range(6):
        m.tensor(f"v{i}", "float32", [2, 4], dynamic=True)
    for i in range(5):
        m.delegate_call(f"B{i % 2}", f"blob{i}".encode(), args=[f"v{i}", f"v{i + 1}"],
                        compile_specs={"step": str(i)})
    prog.write(tmp_path / "c.pte")
    info = read_pte(tmp_path / "c.pte")
    plan = info["program"]["execution_plan"][0]
    instrs = plan["chains"][0]["instructions"]
    assert [i["instr_args"]["args"] for i in instrs] == [[k, k + 1] for k in range(5)]
    assert [i["instr_args"]["delegate_index"] for i in instrs] == list(range(5))
    assert [d["data"] for d in info["delegates"]] == [f"blob{i}".encode() for i in range(5)]
    assert [d["compile_specs"]["step"] for d in info["delegates"]] == [str(i).encode() for i in range(5)]
    assert [d["id"] for d in info["delegates"]] == ["B0", "B1", "B0", "B1", "B0"]


def test_program_level_helpers_act_on_the_latest_method(tmp_path):
    prog = Program()
    prog.tensor("x", "float", [3], dynamic=True)  # creates "forward"
    prog.tensor("y", "torch.float32", [3], dynamic=True)
    prog.int_value("k", 2)
    prog.delegate_call("B", b"b", ["x", "k", "y"])
    prog.set_io(["x"], ["y"])
    prog.method("other", inputs=["a"], outputs=["a"])
    prog.tensor("a", "i64", [1])
    prog.write(tmp_path / "p.pte")
    plans = read_pte(tmp_path / "p.pte")["program"]["execution_plan"]
    assert [p["name"] for p in plans] == ["forward", "other"]
    assert len(plans[0]["values"]) == 3 and len(plans[1]["values"]) == 1
    assert plans[0]["container_meta_type"]["encoded_inp_str"] == "T2#1#0(T1#1($),D0())"
    assert plans[0]["container_meta_type"]["encoded_out_str"] == "$"


@pytest.mark.parametrize("storage", STORAGES)
def test_output_is_reproducible(tmp_path, storage):
    _sample_program(storage).write(tmp_path / "a.pte")
    _sample_program(storage).write(tmp_path / "b.pte")
    assert (tmp_path / "a.pte").read_bytes() == (tmp_path / "b.pte").read_bytes()


def test_to_json_follows_the_schema_names():
    doc = _sample_program("inline", big=4).to_json()
    assert doc["backend_delegate_data"][0]["data"] == list(_blob(1, 4))
    v = doc["execution_plan"][0]["values"][0]
    assert v["val_type"] == "Tensor"
    assert v["val"]["allocation_info"] == {"memory_id": 1, "memory_offset_low": 0, "memory_offset_high": 0}
    assert doc["execution_plan"][0]["chains"][0]["instructions"][0]["instr_args_type"] == "DelegateCall"


def test_the_named_data_table_is_empty_by_default_and_absent_on_request(tmp_path):
    # ExecuTorch 1.5.1's exporter writes no named_data table for a program without named data; a fixture can too.
    spec = {"values": [{"name": "x", "dtype": "int32", "sizes": [2]}], "inputs": ["x"], "outputs": ["x"],
            "delegate_calls": [{"backend_id": "B", "blob_text": "z", "args": ["x"]}]}
    assert program_from_spec(spec).to_json()["named_data"] == []
    program_from_spec({**spec, "named_data_table": False}).write(tmp_path / "none.pte")
    assert "named_data" not in read_pte(tmp_path / "none.pte")["program"]
    program_from_spec(spec).write(tmp_path / "empty.pte")
    assert read_pte(tmp_path / "empty.pte")["program"]["named_data"] == []


# ---------------------------------------------------------------------------
# Builder errors
# ---------------------------------------------------------------------------


def test_builder_rejects_invalid_programs():
    m = Program().method("f")
    with pytest.raises(PteError, match="unknown dtype"):
        m.tensor("a", "complex64", [1])
    with pytest.raises(PteError, match="rank 17"):
        m.tensor("a", "float32", [1] * 17)
    with pytest.raises(PteError, match="size -1"):
        m.tensor("a", "float32", [-1])
    with pytest.raises(PteError, match="size 2147483648"):
        m.tensor("a", "float32", [2**31])
    with pytest.raises(PteError, match="dim_order"):
        m.tensor("a", "float32", [1, 2], dim_order=[0, 0])
    m.tensor("a", "float32", [1])
    with pytest.raises(PteError, match="defined twice"):
        m.int_value("a", 1)
    with pytest.raises(PteError, match="64-bit"):
        m.int_value("b", 2**63)
    with pytest.raises(PteError, match="bytes"):
        m.delegate_call("B", "not bytes", ["a"])
    with pytest.raises(PteError, match="compile spec"):
        m.delegate_call("B", b"", ["a"], compile_specs={"k": 3})
    with pytest.raises(PteError, match="power of two"):
        Program(delegate_alignment=24)
    with pytest.raises(PteError, match="delegate_storage"):
        Program("external")


@pytest.mark.parametrize("mutate, message", [
    (lambda m: m.set_io(["nope"], []), "input 'nope'"),
    (lambda m: m.set_io([], ["nope"]), "output 'nope'"),
    (lambda m: m.set_io(["a", "a"], []), "listed twice"),
    (lambda m: m.delegate_call("B", b"", ["a", "ghost"]), "argument 'ghost'"),
])
def test_write_rejects_dangling_names(tmp_path, mutate, message):
    prog = Program()
    m = prog.method("f")
    m.tensor("a", "float32", [1])
    mutate(m)
    with pytest.raises(PteError, match=message):
        prog.write(tmp_path / "x.pte")
    assert not (tmp_path / "x.pte").exists()


def test_write_needs_a_method_and_unique_method_names(tmp_path):
    with pytest.raises(PteError, match="at least one method"):
        Program().write(tmp_path / "x.pte")
    prog = Program()
    prog.method("f")
    with pytest.raises(PteError, match="twice"):
        prog.method("f")


# ---------------------------------------------------------------------------
# Reader errors
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    out = {}
    for storage in STORAGES:
        p = d / f"{storage}.pte"
        _sample_program(storage, big=64).write(p)
        out[storage] = p.read_bytes()
    return out


@pytest.mark.parametrize("data, message", [
    (b"", "too short"),
    (b"ET12", "too short"),
    (b"hello world, this is text and not a program at all" * 3, "not a .pte"),
    (b"\x10\x00\x00\x00PK\x03\x04" + b"\x00" * 64, "not a .pte"),
    (b"\x10\x00\x00\x00ET11" + b"\x00" * 64, "schema version"),
])
def test_reader_rejects_non_pte_input(data, message):
    with pytest.raises(PteError, match=message):
        read_pte(data)


def test_reader_rejects_non_pte_file(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("definitely not a flatbuffer\n" * 10)
    with pytest.raises(PteError):
        read_pte(p)
    with pytest.raises(FileNotFoundError):
        read_pte(tmp_path / "missing.pte")
    assert issubclass(PteError, ValueError)


@pytest.mark.parametrize("storage", STORAGES)
def test_reader_rejects_every_truncation(sample_files, storage):
    data = sample_files[storage]
    assert read_pte(data)["delegates"]
    step = 1 if len(data) < 4000 else 7
    for n in list(range(0, len(data), step)) + [len(data) - 1]:
        with pytest.raises(PteError):
            read_pte(data[:n])


def test_reader_reports_truncated_segments_clearly(sample_files):
    data = sample_files["segment"]
    with pytest.raises(PteError, match="truncated"):
        read_pte(data[:-1])
    program_size = struct.unpack_from("<Q", data, 16)[0]
    with pytest.raises(PteError, match="truncated"):
        read_pte(data[:program_size - 8])


@pytest.mark.parametrize("storage", STORAGES)
def test_reading_a_file_and_reading_its_bytes_agree(tmp_path, sample_files, storage):
    """A regular file is read in parts (its header, its program, then each delegate's segment), not whole: the same
    answer, or the same refusal, as for its bytes, whole, truncated anywhere, or with a corrupt extended header."""
    data = sample_files[storage]
    cases = [data[:n] for n in list(range(0, len(data), 1 if len(data) < 4000 else 7)) + [len(data) - 1, len(data)]]
    if storage == "segment":
        for at, fmt, value in ((12, "<I", 8), (24, "<Q", 16), (16, "<Q", len(data) + 1)):
            bad = bytearray(data)
            struct.pack_into(fmt, bad, at, value)
            cases.append(bytes(bad))

    def outcome(source):
        try:
            info = read_pte(source)
        except PteError as e:
            return str(e)
        info.pop("path")
        return info

    path = tmp_path / "case.pte"
    for case in cases:
        path.write_bytes(case)
        assert outcome(path) == outcome(case), len(case)


def test_reader_rejects_corrupt_extended_header(sample_files):
    data = bytearray(sample_files["segment"])
    struct.pack_into("<I", data, 12, 8)  # header length below the minimum
    with pytest.raises(PteError, match="extended header"):
        read_pte(bytes(data))
    data = bytearray(sample_files["segment"])
    struct.pack_into("<Q", data, 24, 16)  # segment base inside the program
    with pytest.raises(PteError, match="segment_base_offset"):
        read_pte(bytes(data))


@pytest.mark.parametrize("storage", STORAGES)
def test_reader_never_crashes_flatc_on_corrupt_bytes(sample_files, storage):
    data = sample_files[storage]
    rnd = random.Random(20260822)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(250):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        try:
            read_pte(bytes(b))
            outcomes["ok"] += 1
        except PteError:
            outcomes["error"] += 1
        # anything else (ToolchainError from a crashed flatc) fails the test
    assert outcomes["error"] > 0


# ---------------------------------------------------------------------------
# Spec front door
# ---------------------------------------------------------------------------


def _run_cli(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "etrt.pte", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def _write_spec(tmp_path, storage="segment"):
    (tmp_path / "blobs").mkdir(exist_ok=True)
    (tmp_path / "blobs" / "engine.bin").write_bytes(_blob(9, 4096))
    spec = {
        "delegate_storage": storage,
        "methods": [{
            "name": "forward",
            "values": [
                {"name": "x", "dtype": "float32", "sizes": [1, 8], "dynamic": True},
                {"name": "t", "dtype": "float32", "sizes": [1, 8], "dynamic": True},
                {"name": "n", "type": "int", "value": 3},
                {"name": "y", "dtype": "float32", "sizes": [1, 8], "dynamic": True},
            ],
            "inputs": ["x"],
            "outputs": ["y"],
            "delegate_calls": [
                {"backend_id": "TensorRTBackend", "blob_file": "blobs/engine.bin", "args": ["x", "t"],
                 "compile_specs": {"device": "cuda:0", "raw": {"hex": "deadbeef"}}},
                {"backend_id": "Other", "blob_hex": "0102ff", "args": ["t", "n", "y"]},
                {"backend_id": "Other", "blob_text": "hi", "args": ["y", "y"]},
            ],
        }],
    }
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.parametrize("storage", STORAGES)
def test_spec_cli_writes_a_pte_and_a_depfile(tmp_path, storage):
    spec = _write_spec(tmp_path, storage)
    out = tmp_path / "out" / "model.pte"
    dep = tmp_path / "model.pte.d"
    r = _run_cli("--spec", str(spec), "--out", str(out), "--depfile", str(dep))
    assert r.returncode == 0, r.stderr
    info = read_pte(out)
    ds = info["delegates"]
    assert [d["data"] for d in ds] == [_blob(9, 4096), b"\x01\x02\xff", b"hi"]
    assert ds[0]["compile_specs"] == {"device": b"cuda:0", "raw": b"\xde\xad\xbe\xef"}
    assert ds[0]["location"] == storage.upper()
    target, deps = dep.read_text().split(": ", 1)
    assert target == str(out.resolve())
    assert deps.split() == [str(spec.resolve()), str((tmp_path / "blobs" / "engine.bin").resolve())]


def test_spec_single_method_shorthand(tmp_path):
    spec = {"values": [{"name": "x", "dtype": "int32", "sizes": [2]}],
            "inputs": ["x"], "outputs": ["x"],
            "delegate_calls": [{"backend_id": "B", "blob_text": "z", "args": ["x"]}]}
    prog = program_from_spec(spec)
    prog.write(tmp_path / "s.pte")
    plan = read_pte(tmp_path / "s.pte")["program"]["execution_plan"][0]
    assert plan["name"] == "forward"


@pytest.mark.parametrize("spec, message", [
    ({"methods": [], "name": "x"}, "not both"),
    ({"methods": []}, "non-empty"),
    ({"bogus": 1}, "unknown keys"),
    ({"named_data_table": "no"}, "'named_data_table' must be true or false"),
    ({"values": [{"name": "x", "dtype": "float32"}]}, "'dtype' and 'sizes'"),
    ({"values": [{"name": "x", "type": "list", "value": 1}]}, "unknown type"),
    ({"values": [{"name": "x", "dtype": "float32", "sizes": [1], "dynmic": True}]}, "unknown keys"),
    ({"delegate_calls": [{"backend_id": "B", "args": []}]}, "exactly one of"),
    ({"delegate_calls": [{"backend_id": "B", "blob_hex": "zz"}]}, "not hex"),
    ({"delegate_calls": [{"backend_id": "B", "blob_file": "missing.bin"}]}, "cannot read blob_file"),
    ({"delegate_calls": [{"blob_text": "x"}]}, "backend_id"),
    ({"delegate_calls": [{"backend_id": "B", "blob_text": "x", "compile_specs": {"k": 1}}]}, "compile spec"),
])
def test_spec_errors_are_clear(tmp_path, spec, message):
    with pytest.raises(PteError, match=message):
        program_from_spec(spec, tmp_path)


def test_spec_cli_reports_errors_with_exit_code_1(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = _run_cli("--spec", str(bad), "--out", str(tmp_path / "x.pte"))
    assert r.returncode == 1
    assert "not valid JSON" in r.stderr
    assert not (tmp_path / "x.pte").exists()
    r = _run_cli("--dump", str(bad))
    assert r.returncode == 1 and "not a .pte" in r.stderr


def test_dump_cli_prints_json(tmp_path):
    spec = _write_spec(tmp_path)
    out = tmp_path / "m.pte"
    assert _run_cli("--spec", str(spec), "--out", str(out)).returncode == 0
    r = _run_cli("--dump", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["identifier"] == "ET12"
    assert doc["delegates"][0]["data"]["bytes"] == 4096
    assert doc["program"]["execution_plan"][0]["name"] == "forward"


# ---------------------------------------------------------------------------
# Toolchain discovery
# ---------------------------------------------------------------------------


def test_toolchain_found_without_importing_executorch(toolchain):
    assert os.access(toolchain.flatc, os.X_OK)
    assert os.path.isfile(toolchain.program_fbs)
    assert "executorch" not in sys.modules


def test_toolchain_env_overrides(monkeypatch, tmp_path, toolchain):
    monkeypatch.setenv("ETRT_FLATC", str(tmp_path / "no-flatc"))
    with pytest.raises(ToolchainError, match="ETRT_FLATC"):
        find_toolchain()
    monkeypatch.setenv("ETRT_FLATC", toolchain.flatc)
    monkeypatch.setenv("ETRT_EXECUTORCH_SCHEMA_DIR", str(tmp_path))
    with pytest.raises(ToolchainError, match="program.fbs"):
        find_toolchain()
    for name in ("program.fbs", "scalar_type.fbs"):
        (tmp_path / name).write_bytes(Path(toolchain.schema_dir, name).read_bytes())
    tc = find_toolchain()
    assert tc.schema_dir == str(tmp_path) and tc.flatc == toolchain.flatc


def test_schema_facts_match_the_constants(toolchain):
    schema = pte_schema.load_schema(toolchain)
    assert schema.file_identifier == pte.FILE_IDENTIFIER
    assert schema.delegate_alignment == pte.INLINE_DELEGATE_ALIGNMENT
    base, values = schema.enums["TensorShapeDynamism"]
    assert values == {"STATIC": 0, "DYNAMIC_BOUND": 1, "DYNAMIC_UNBOUND": 2}
    scalar_types = schema.enums["ScalarType"][1]
    for name, (st, _) in DTYPES.items():
        assert st in scalar_types, name
    # unions take two vtable slots (type byte, then value)
    assert [(f.name, f.slot) for f in schema.tables["EValue"]] == [("val", 1)]


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_written_files_get_0666_minus_the_umask_not_the_temp_files_0600(tmp_path, umask_022):
    out = tmp_path / "model.pte"
    _sample_program("segment").write(out)
    assert out.stat().st_mode & 0o777 == 0o644
    # replacing a private file gives the usual mode too, and leaves no temporary file behind
    out.chmod(0o600)
    pte.write_atomic(out, b"new bytes")
    assert out.read_bytes() == b"new bytes" and out.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pte"]
    os.umask(0o027)
    pte.write_atomic(tmp_path / "other.pte", b"x")
    assert (tmp_path / "other.pte").stat().st_mode & 0o777 == 0o640


def test_the_umask_is_read_without_changing_it(umask_022, monkeypatch):
    assert pte_builder._umask() == 0o022
    assert os.umask(0o022) == 0o022

    def no_proc(*args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.setattr(pte_builder, "open", no_proc, raising=False)  # the fallback: set and restore
    assert pte_builder._umask() == 0o022
    assert os.umask(0o022) == 0o022


def test_spec_cli_output_has_the_usual_mode(tmp_path):
    spec = _write_spec(tmp_path, "segment")
    out = tmp_path / "model.pte"
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    r = subprocess.run([sys.executable, "-m", "etrt.pte", "--spec", str(spec), "--out", str(out)],
                       capture_output=True, text=True, env=env, preexec_fn=lambda: os.umask(0o022))
    assert r.returncode == 0, r.stderr
    assert out.stat().st_mode & 0o777 == 0o644
