"""The etrt command line, run as a subprocess the way users run it:
inspect/validate on generated fixtures, exit codes, every bad input, and pack."""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import _builders as B
from etrt.signature import Signature
from etrt.validate import validate_program

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable


def etrt(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    env.pop("ETRT_DEBUG", None)
    p = subprocess.run([PYTHON, "-m", "etrt.cli", *map(str, args)], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=300)
    assert "Traceback" not in p.stderr, p.stderr
    assert "Traceback" not in p.stdout, p.stdout
    return p


def one_error_line(p) -> str:
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("etrt: error: "), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    d = tmp_path_factory.mktemp("fixtures")
    files = {
        "good": B.llm_program(with_dynamic_single=True),
        "mismatch": B.llm_program(second_max=1024),
        "overflow": B.llm_program(planned_seq=1024),
        "unlinked": B.llm_program(second_symbol=None),
        "gpufree": B.single_delegate_program(
            B.trt_blob([("ids", "int64", [1, -1])], [("out", "int64", [1, -1])], None,
                       B.gpufree_engine("dec", [("ids", "int64", [1, -1])], [("out", "int64", [1, -1])],
                                        [[B.DECODE], [B.prefill(128, 2, 64)]])),
            [("ids", "int64", [1, 128], True)], [("out", "int64", [1, 128], True)]),
        "foreign": B.single_delegate_program(b"xnnpack payload", [("x", "float32", [1, 4], False)],
                                             [("y", "float32", [1, 4], False)], backend_id="XnnpackBackend"),
        "no_delegates": B.pte_bytes(lambda m: (m.tensor("x", "float32", [4]), m.set_io(["x"], ["x"]))),
    }
    good_blob = B.trt_blob([("x", "float32", [4])], [("y", "float32", [4])])
    lying = good_blob[:16] + struct.pack("<Q", 1 << 40) + good_blob[24:]
    files["lying_blob"] = B.single_delegate_program(lying, [("x", "float32", [4], False)],
                                                    [("y", "float32", [4], False)])
    eng = bytearray(B.gpufree_engine("dec", [("x", "float32", [4])], [("y", "float32", [4])], [[([4], [4], [4])]]))
    eng[30] ^= 0x55
    files["corrupt_engine"] = B.single_delegate_program(
        B.trt_blob([("x", "float32", [4])], [("y", "float32", [4])], None, bytes(eng)),
        [("x", "float32", [4], False)], [("y", "float32", [4], False)])
    not_blob = b"NOPE" + b"\x00" * 40
    files["not_a_blob"] = B.single_delegate_program(not_blob, [("x", "float32", [4], False)],
                                                    [("y", "float32", [4], False)])
    good = files["good"]
    files["not_pte"] = b"this is a text file, not an ExecuTorch program\n"
    files["empty"] = b""
    files["foreign_flatbuffer"] = b"\x10\x00\x00\x00TFL3" + b"\x00" * 200
    files["garbage_with_identifier"] = b"\xff\xff\x00\x00ET12" + bytes(range(256)) * 4
    files["future_schema"] = good[:4] + b"ET99" + good[8:]
    for cut in (6, 12, 40, len(good) // 2, len(good) - 1):
        files[f"truncated_{cut}"] = good[:cut]
    inline = B.single_delegate_program(good_blob, [("x", "float32", [4], False)], [("y", "float32", [4], False)],
                                       storage="inline")
    files["truncated_inline"] = inline[:len(inline) * 2 // 3]
    paths = {}
    for name, data in files.items():
        p = d / f"{name}.pte"
        p.write_bytes(data)
        paths[name] = p
    paths["dir"] = d
    return paths


# --- validate ----------------------------------------------------------------------


def test_validate_passing_program_exits_0_and_shows_warnings(fx):
    p = etrt("validate", fx["good"])
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    # One warning about the model, and needs-cuda-build for each of its four TensorRT plans on a build without CUDA.
    assert f"OK: 4 TensorRT delegate(s), 0 error(s), {1 + B.plan_warnings(4)} warning(s)" in p.stdout
    assert "warning: 'forward' delegate 4" in p.stdout
    assert "info:" not in p.stdout
    assert "info:" in etrt("validate", "-v", fx["good"]).stdout


def test_validate_failing_program_exits_1_naming_delegates_profiles_and_numbers(fx):
    p = etrt("validate", fx["mismatch"])
    assert p.returncode == 1
    assert "FAILED" in p.stdout
    for part in ("profile index 1", "'forward' delegate 0", "'forward' delegate 3", "seq_len", "32..1024"):
        assert part in p.stdout
    p = etrt("validate", fx["overflow"])
    assert p.returncode == 1 and "profile 1 dim 1 max 2048 > 1024" in p.stdout


def test_validate_strict_quiet_and_json(fx):
    assert etrt("validate", fx["unlinked"]).returncode == 0
    assert etrt("validate", "--strict", fx["unlinked"]).returncode == 1
    q = etrt("validate", "-q", fx["gpufree"])
    assert q.returncode == 0 and q.stdout == ""
    j = etrt("validate", "--json", fx["mismatch"])
    assert j.returncode == 1
    doc = json.loads(j.stdout)
    assert doc["ok"] is False and doc["errors"][0]["code"] == "regime-mismatch"
    assert [d["delegate_index"] for d in doc["errors"][0]["delegates"]] == [0, 3]


# --- inspect ------------------------------------------------------------------------


def test_inspect_text_shows_methods_delegates_blobs_bindings_profiles_and_verdict(fx):
    p = etrt("inspect", fx["good"])
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for part in ("method 'forward': 2 input(s), 3 output(s), 5 delegate(s)",
                 "delegate 0: TensorRTBackend (instruction 0, segment 1,",
                 "delegate 2: XnnpackBackend (instruction 2",
                 "blob: TR01, metadata",
                 "inputs:  input_ids int64 [1, -1]  <- v0 int64 [1, 2048] (upper bound)",
                 "profiles: 2 (from the signature)",
                 "profile 1: seq_len 32..2048; input_ids [1, 32..2048] (opt [1, 512])",
                 "profiles: 1 (from the signature)",
                 f"validation: OK: 4 TensorRT delegate(s), 0 error(s), {1 + B.plan_warnings(4)} warning(s)"):
        assert part in out, part


def test_inspect_json_report(fx):
    p = etrt("inspect", "--json", fx["good"])
    assert p.returncode == 0
    r = json.loads(p.stdout)
    assert r["tensorrt_delegates"] == 4 and r["identifier"] == "ET12"
    (m,) = r["methods"]
    assert m["name"] == "forward" and len(m["delegates"]) == 5
    d0 = m["delegates"][0]
    assert d0["backend_id"] == "TensorRTBackend" and d0["instruction"] == 0 and d0["storage"]["location"] == "SEGMENT"
    assert d0["blob"]["magic"] == "TR01" and d0["blob"]["metadata_offset"] == 32
    assert d0["blob"]["engine_offset"] % 16 == 0 and d0["blob"]["has_profile_signature"] is True
    assert d0["io_bindings"][0] == {"name": "input_ids", "is_input": True, "dtype": "int64", "shape": [1, -1],
                                    "bound_to": {"value": 0, "dtype": "int64", "sizes": [1, 2048],
                                                 "dynamism": "DYNAMIC_BOUND", "device": "cpu"}}
    assert d0["profiles"]["count"] == 2 and d0["profiles"]["source"] == "blob"
    assert d0["profiles"]["signature"]["symbolic_dims"][0]["ranges"] == [[1, 1], [32, 2048]]
    assert d0["engine"]["kind"] == "tensorrt"
    assert [a["kind"] for a in d0["args"]] == ["tensor", "int", "tensor"]
    assert m["delegates"][2]["is_tensorrt"] is False and "blob" not in m["delegates"][2]
    assert r["validation"]["ok"] is True
    assert [w["code"] for w in r["validation"]["warnings"] if w["code"] not in B.BUILD_CODES] == \
        ["dynamic-single-profile"]


def test_inspect_reads_profiles_from_a_gpufree_engine(fx):
    p = etrt("inspect", "--json", fx["gpufree"])
    assert p.returncode == 0
    report = json.loads(p.stdout)
    assert report["schema_version"] == 2
    d = report["methods"][0]["delegates"][0]
    assert d["engine"]["kind"] == "gpufree" and "reference" not in d["engine"]
    ref = d["engine"]["gpufree"]
    assert ref["label"] == "dec" and ref["num_profiles"] == 2
    assert ref["profiles"][1] == [{"input": "ids", "min": [1, 2], "opt": [1, 64], "max": [1, 128]}]
    assert d["profiles"]["source"] == "engine" and d["profiles"]["count"] == 2
    text = etrt("inspect", fx["gpufree"]).stdout
    assert "profiles: 2 (from the GPU-free NvInfer engine)" in text
    assert "engine: GPU-free NvInfer engine 'dec' (ETRF v2, 2 profile(s)" in text


def test_inspect_of_a_failing_program_still_exits_0_and_shows_the_verdict(fx):
    p = etrt("inspect", fx["mismatch"])
    assert p.returncode == 0
    assert "validation: FAILED: 3 TensorRT delegate(s), 1 error(s)" in p.stdout


# --- bad input ------------------------------------------------------------------------

BAD_INPUTS = {
    "not_pte": "not a .pte",
    "empty": "not a .pte",
    "foreign_flatbuffer": "not a .pte",
    "garbage_with_identifier": "corrupt or truncated .pte",
    "future_schema": "unsupported .pte schema version",
    "truncated_6": "not a .pte",
    "truncated_12": "truncated .pte",
    "truncated_40": "truncated .pte",
    "truncated_inline": ".pte",
    "foreign": "no TensorRTBackend delegate to check (it has only XnnpackBackend delegates)",
    "no_delegates": "no TensorRTBackend delegate to check (it has no delegates)",
    "lying_blob": "runs past the end of the",
    "not_a_blob": "magic is 'NOPE'",
    "corrupt_engine": "checksum mismatch",
    "missing": "no such file",
    "dir": "is a directory",
}


@pytest.mark.parametrize("command", ["validate", "inspect"])
@pytest.mark.parametrize("case", sorted(BAD_INPUTS) + ["truncated_half", "truncated_last"])
def test_bad_input_gets_one_clear_line_and_exit_2(fx, command, case):
    if case == "missing":
        path = fx["dir"] / "missing.pte"
    elif case == "truncated_half":
        path = next(p for k, p in fx.items() if k.startswith("truncated_") and k not in BAD_INPUTS
                    and int(k.split("_")[1]) > 100 and int(k.split("_")[1]) < os.path.getsize(fx["good"]) - 1)
    elif case == "truncated_last":
        path = fx[f"truncated_{os.path.getsize(fx['good']) - 1}"]
    else:
        path = fx[case]
    p = etrt(command, path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    line = one_error_line(p)
    if case in BAD_INPUTS:
        assert BAD_INPUTS[case] in line, line
    else:
        assert "truncated" in line
    assert str(path) in line


def test_usage_errors_exit_2_without_traceback(fx):
    for args in ([], ["bogus"], ["validate"], ["inspect", "--nope", fx["good"]], ["pack", "x.json"]):
        p = etrt(*args)
        assert p.returncode == 2, args
        assert "usage:" in p.stderr
    h = etrt("--help")
    assert h.returncode == 0 and "inspect" in h.stdout and "pack" in h.stdout


# --- pack ---------------------------------------------------------------------------

LLM_PROFILES = [
    {"input_ids": {"min": [1, 1], "opt": [1, 1], "max": [1, 1]},
     "position_ids": {"min": [1, 1], "opt": [1, 1], "max": [1, 1]}},
    {"input_ids": {"min": [1, 32], "opt": [1, 512], "max": [1, 2048]},
     "position_ids": {"min": [1, 32], "opt": [1, 512], "max": [1, 2048]}},
]


def _llm_description(**over):
    desc = {
        "plan": "llm.plan",
        "inputs": [{"name": "input_ids", "dtype": "int64", "shape": [1, 2048]},
                   {"name": "position_ids", "dtype": "int64", "shape": [1, 2048]}],
        "outputs": [{"name": "logits", "dtype": "float32", "shape": [1, 2048, 32000], "dynamic_dims": [1]}],
        "profiles": LLM_PROFILES,
        "symbolic_dims": {"seq_len": [["input_ids", 1], ["position_ids", 1]]},
    }
    desc.update(over)
    return desc


def _write(tmp_path, desc, plan=b"\x01opaque TensorRT plan bytes" * 10, name="io.json"):
    (tmp_path / "llm.plan").write_bytes(plan)
    (tmp_path / name).write_text(json.dumps(desc))
    return tmp_path / name


def test_pack_single_engine_description(tmp_path):
    io = _write(tmp_path, _llm_description())
    out = tmp_path / "out" / "model.pte"
    p = etrt("pack", io, "-o", out)
    assert p.returncode == 0, p.stderr
    assert f"wrote {out}" in p.stdout and "OK: 1 TensorRT delegate(s)" in p.stdout
    r = validate_program(out)
    assert r.ok and B.model_warnings(r) == []
    (d,) = r.delegates
    assert d.engine == b"\x01opaque TensorRT plan bytes" * 10
    assert [(b.name, b.dtype, b.shape, b.is_input) for b in d.metadata.io_bindings] == [
        ("input_ids", "int64", [1, -1], True), ("position_ids", "int64", [1, -1], True),
        ("logits", "float32", [1, -1, 32000], False)]
    assert d.blob_signature == Signature.from_torch_trt(LLM_PROFILES, {"seq_len": [("input_ids", 1),
                                                                                   ("position_ids", 1)]})
    # inferred: inputs and the output of a dynamic engine are DYNAMIC_BOUND
    assert [a.value["dynamism"] for a in d.tensor_args] == ["DYNAMIC_BOUND"] * 3
    insp = json.loads(etrt("inspect", "--json", out).stdout)
    assert insp["methods"][0]["delegates"][0]["profiles"]["count"] == 2


def test_pack_tensors_the_runner_provides_are_not_planned(tmp_path):
    # "planned": false: the runner gives the tensor's memory (set_input / set_output, e.g. device memory); the program
    # reserves none for it. The others keep their planned slot.
    desc = _llm_description(outputs=[{"name": "logits", "dtype": "float32", "shape": [1, 2048, 32000],
                                      "dynamic_dims": [1], "planned": False}])
    desc["inputs"][0]["planned"] = False
    out = tmp_path / "model.pte"
    p = etrt("pack", _write(tmp_path, desc), "-o", out)
    assert p.returncode == 0, p.stderr
    (d,) = validate_program(out).delegates
    assert [a.value["planned"] for a in d.tensor_args] == [False, True, False]


def test_pack_refuses_an_intermediate_the_runner_would_provide(tmp_path):
    (tmp_path / "a.plan").write_bytes(b"engine A")
    (tmp_path / "b.plan").write_bytes(b"engine B")
    desc = {"inputs": [{"name": "x", "dtype": "float32", "shape": [1, 4]}],
            "intermediates": [{"name": "h", "dtype": "float32", "shape": [1, 4], "planned": False}],
            "outputs": [{"name": "y", "dtype": "float32", "shape": [1, 4]}],
            "engines": [{"plan": "a.plan", "inputs": ["x"], "outputs": ["h"]},
                        {"plan": "b.plan", "inputs": ["h"], "outputs": ["y"]}]}
    io = tmp_path / "io.json"
    io.write_text(json.dumps(desc))
    p = etrt("pack", io, "-o", tmp_path / "m.pte")
    assert p.returncode == 2 and "an intermediate is planned memory" in one_error_line(p)


def test_pack_several_engines_with_intermediates_and_plan_override(tmp_path):
    (tmp_path / "a.plan").write_bytes(b"engine A")
    (tmp_path / "b.plan").write_bytes(b"engine B")
    prof = [{"ids": {"shape": [1, 1]}}, {"ids": {"min": [1, 32], "opt": [1, 64], "max": [1, 512]}}]
    hprof = [{"h": {"shape": [1, 1]}}, {"h": {"min": [1, 32], "opt": [1, 64], "max": [1, 512]}}]
    desc = {
        "method": "forward",
        "inputs": [{"name": "ids", "dtype": "int64", "shape": [1, 512]},
                   {"name": "mask", "dtype": "float16", "shape": [1, 8]}],
        "intermediates": [{"name": "hidden", "dtype": "float16", "shape": [1, 512]}],
        "outputs": [{"name": "out", "dtype": "float16", "shape": [1, 512]}],
        "engines": [
            {"plan": "a.plan", "inputs": ["ids"], "outputs": ["hidden"], "profiles": prof,
             "symbolic_dims": {"seq_len": [["ids", 1]]}},
            {"plan": "b.plan", "inputs": [{"tensor": "hidden", "binding": "h"}, "mask"], "outputs": ["out"],
             "profiles": hprof, "symbolic_dims": {"seq_len": [["h", 1]]}},
        ],
    }
    io = tmp_path / "io.json"
    io.write_text(json.dumps(desc))
    out = tmp_path / "m.pte"
    p = etrt("pack", io, "-o", out, "--delegate-storage", "inline")
    assert p.returncode == 0, p.stderr
    r = validate_program(out)
    assert r.ok and [d.num_profiles for d in r.delegates] == [2, 2]
    assert r.delegates[1].blob_signature.input("mask").is_static  # static input filled in from its shape
    assert r.delegates[0].location == "INLINE"
    # override both plans from the command line
    (tmp_path / "c.plan").write_bytes(b"engine C")
    p = etrt("pack", io, "-o", out, "--plan", tmp_path / "c.plan", "--plan", tmp_path / "b.plan")
    assert p.returncode == 0, p.stderr
    assert validate_program(out).delegates[0].engine == b"engine C"
    # a symbol that disagrees across engines is refused, and nothing is written
    desc["engines"][1]["profiles"][1]["h"]["max"] = [1, 256]
    io.write_text(json.dumps(desc))
    out2 = tmp_path / "m2.pte"
    p = etrt("pack", io, "-o", out2)
    assert p.returncode == 1 and not out2.exists()
    assert "regime-mismatch" not in p.stderr and "'seq_len'" in p.stderr
    assert p.stderr.rstrip().splitlines()[-1].startswith("etrt: error: ")
    p = etrt("pack", io, "-o", out2, "--force")
    assert p.returncode == 1 and out2.exists()


def test_pack_gpufree_engine_takes_its_profiles_from_the_engine(tmp_path):
    eng = B.gpufree_engine("dec", [("ids", "int64", [1, -1])], [("out", "int64", [1, -1])],
                           [[B.DECODE], [B.prefill(128, 2, 64)]])
    (tmp_path / "dec.etrf").write_bytes(eng)
    desc = {"plan": "dec.etrf", "inputs": [{"name": "ids", "dtype": "int64", "shape": [1, 128]}],
            "outputs": [{"name": "out", "dtype": "int64", "shape": [1, 128]}],
            "symbolic_dims": {"seq_len": [["ids", 1]]}}
    io = tmp_path / "io.json"
    io.write_text(json.dumps(desc))
    p = etrt("pack", io, "-o", tmp_path / "m.pte")
    assert p.returncode == 0, p.stderr
    assert "profile signature taken from the GPU-free NvInfer engine (2 profile(s))" in p.stderr
    (d,) = validate_program(tmp_path / "m.pte").delegates
    assert d.signature_source == "blob" and d.blob_signature.symbol_ranges("seq_len") == ((1, 1), (2, 128))
    # planned bound below the engine's max: refused
    desc["inputs"][0]["shape"] = [1, 64]
    io.write_text(json.dumps(desc))
    p = etrt("pack", io, "-o", tmp_path / "small.pte")
    assert p.returncode == 1 and "profile 1 dim 1 max 128 > 64" in p.stderr


def test_pack_without_profiles_notes_that_the_result_is_unverifiable(tmp_path):
    desc = _llm_description()
    del desc["profiles"], desc["symbolic_dims"]
    p = etrt("pack", _write(tmp_path, desc), "-o", tmp_path / "m.pte")
    assert p.returncode == 0 and "carries no profile signature" in p.stderr
    r = validate_program(tmp_path / "m.pte")
    assert r.ok and "unverifiable" in B.codes(r)["info"]
    assert r.delegates[0].tensor_args[0].value["dynamism"] == "STATIC"  # nothing said it is dynamic


PACK_BAD = [
    ("not json", None, "is not valid JSON"),
    ({"inputs": []}, None, "non-empty 'inputs'"),
    (_llm_description(typo=1), None, "unknown keys ['typo']"),
    (_llm_description(plan="missing.plan"), None, "cannot read engine plan"),
    (_llm_description(), b"", "is empty"),
    (_llm_description(), b"TR01" + b"\x00" * 60, "already a TensorRT delegate blob"),
    (_llm_description(), b"\x00\x00\x00\x00ET12" + b"\x00" * 60, "is a .pte, not an engine plan"),
    (_llm_description(profiles=[{"input_ids": {"lo": [1, 1]}}]), None, "must give min/opt/max"),
    (_llm_description(inputs=[{"name": "input_ids", "dtype": "int64", "shape": [1, 2048], "dynamic": True},
                              {"name": "position_ids", "dtype": "int64", "shape": [1, 2048]}],
                      profiles=[{"position_ids": {"shape": [1, 1]}}], symbolic_dims=None),
     None, "missing 'input_ids'"),
    (_llm_description(symbolic_dims={"seq_len": [["nope", 1]]}), None, "refers to input 'nope'"),
    (_llm_description(inputs=[{"name": "input_ids", "dtype": "complex", "shape": [1, 2048]},
                              {"name": "position_ids", "dtype": "int64", "shape": [1, 2048]}]), None,
     "unknown dtype 'complex'"),
    (_llm_description(inputs=[{"name": "input_ids", "dtype": "int64", "shape": [1, -5]}]), None,
     "non-negative integers"),
    (_llm_description(engines=[]), None, "unknown keys"),
    (_llm_description(outputs=[{"name": "logits", "dtype": "float32", "shape": [1, 2048, 32000], "planned": 0}]),
     None, "planned must be true or false"),
]


@pytest.mark.parametrize("desc, plan, message", PACK_BAD, ids=[m for _, _, m in PACK_BAD])
def test_pack_bad_descriptions_get_one_line_and_exit_2(tmp_path, desc, plan, message):
    if desc == "not json":
        io = tmp_path / "io.json"
        io.write_text("{not json")
    else:
        desc = {k: v for k, v in desc.items() if v is not None}
        io = _write(tmp_path, desc, **({"plan": plan} if plan is not None else {}))
    p = etrt("pack", io, "-o", tmp_path / "m.pte")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert message in one_error_line(p)
    assert not (tmp_path / "m.pte").exists()


def test_pack_missing_description_and_plan_count(tmp_path):
    p = etrt("pack", tmp_path / "nope.json", "-o", tmp_path / "m.pte")
    assert p.returncode == 2 and "no such file" in one_error_line(p)
    io = _write(tmp_path, _llm_description())
    p = etrt("pack", io, "-o", tmp_path / "m.pte", "--plan", "a", "--plan", "b")
    assert p.returncode == 2 and "--plan was given 2 time(s)" in one_error_line(p)


def test_console_script_entry_point_is_cli_main():
    import etrt.cli

    text = (PYTHON_DIR / "pyproject.toml").read_text()
    assert 'etrt = "etrt.cli:main"' in text
    assert etrt.cli.main(["--help"]) == 0


# --- the report in-process ------------------------------------------------------------


def test_inspect_report_of_an_upstream_blob_without_signature():
    from etrt.inspect_pte import format_report, inspect_program

    vector = ROOT / "tests" / "vectors" / "blob" / "upstream_minimal.blob"
    pte = B.single_delegate_program(vector.read_bytes(), [("x", "float32", [1, 4], False)],
                                    [("y", "float32", [1, 4], False)])
    from etrt import blob

    md, _ = blob.parse_blob(vector.read_bytes())
    if md.num_inputs != 1 or md.num_outputs != 1:  # keep the call's arity in step with the vector
        pytest.skip("vector shape changed")
    report = inspect_program(pte)
    d = report["methods"][0]["delegates"][0]
    assert d["profiles"]["count"] is None and d["engine"]["kind"] == "tensorrt"
    text = format_report(report)
    assert "profiles: unknown (no profile_signature, opaque TensorRT plan)" in text
    assert "carries no profile_signature" in text


def test_inspect_report_shows_engine_profiles_that_disagree_with_the_signature():
    from etrt.inspect_pte import format_report, inspect_program

    eng = B.gpufree_engine("dec", [("ids", "int64", [1, -1])], [("out", "int64", [1, -1])],
                           [[B.DECODE], [B.prefill(128, 2, 64)]])
    sig = Signature.from_bounds({"ids": [B.DECODE, B.prefill(256, 2, 64)]})
    pte = B.single_delegate_program(B.trt_blob([("ids", "int64", [1, -1])], [("out", "int64", [1, -1])], sig, eng),
                                    [("ids", "int64", [1, 256], True)], [("out", "int64", [1, 256], True)])
    report = inspect_program(pte)
    assert report["methods"][0]["delegates"][0]["engine"]["agrees_with_signature"] is False
    text = format_report(report, infos=False)
    assert "its profiles DISAGREE with the signature" in text
    assert "engine profile 1: ids min [1, 2] opt [1, 64] max [1, 128]" in text
    assert "error: 'forward' delegate 0 (instruction 0): its profile_signature disagrees" in text


# --- python -m etrt ---------------------------------------------------------------------


def test_python_dash_m_etrt_is_the_cli(fx):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    env.pop("ETRT_DEBUG", None)

    def run(*args):
        return subprocess.run([PYTHON, "-m", "etrt", *map(str, args)], capture_output=True, text=True, env=env,
                              timeout=300)

    h = run("--help")
    assert h.returncode == 0, h.stderr
    assert h.stdout.startswith("usage: etrt") and "inspect" in h.stdout and "pack" in h.stdout
    p = run("validate", fx["mismatch"])
    assert p.returncode == 1 and "FAILED" in p.stdout and "'seq_len'" in p.stdout
    assert run("validate", fx["good"]).returncode == 0
    assert run("bogus").returncode == 2


# --- programs the ExecuTorch runtime refuses ------------------------------------------


def _deprecated_constant_buffer_program(with_tensorrt=True):
    def mutate(p):
        p["constant_buffer"] = [{"storage": []}, {"storage": [0, 0, 128, 63]}]
        del p["constant_segment"]

    def build(m):
        m.tensor("x", "float32", [4])
        m.tensor("y", "float32", [4])
        blob_bytes = B.trt_blob([("x", "float32", [4])], [("y", "float32", [4])]) if with_tensorrt else b"x"
        m.delegate_call("TensorRTBackend" if with_tensorrt else "XnnpackBackend", blob_bytes, ["x", "y"])
        m.set_io(["x"], ["y"])

    return B.mutated_pte_bytes(build, mutate)


def test_validate_fails_a_program_that_relies_on_the_deprecated_constant_buffer(tmp_path):
    path = tmp_path / "old.pte"
    path.write_bytes(_deprecated_constant_buffer_program())
    p = etrt("validate", path)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "FAILED" in p.stdout
    assert "error: the program has no constant_segment (its deprecated constant_buffer has 2 entries)" in p.stdout
    assert "ExecuTorch 1.5.1's runtime refuses the program at Program::load (InvalidProgram)" in p.stdout
    j = json.loads(etrt("validate", "--json", path).stdout)
    assert [e["code"] for e in j["errors"]] == ["runtime-refuses-program"]
    # without a TensorRT delegate it is bad input (exit 2), and the refusal is still said
    path.write_bytes(_deprecated_constant_buffer_program(with_tensorrt=False))
    p = etrt("validate", path)
    assert p.returncode == 2
    assert "no TensorRTBackend delegate to check" in p.stderr and "relies on the constant_buffer path" in p.stderr


# --- pack: compile specs, file mode -----------------------------------------------------


def test_pack_passes_compile_specs_and_validation_checks_the_budget(tmp_path):
    io = _write(tmp_path, _llm_description(compile_specs={"weight_streaming_budget": "1073741824",
                                                          "raw": {"hex": "00ff"}}))
    out = tmp_path / "m.pte"
    p = etrt("pack", io, "-o", out)
    assert p.returncode == 0, p.stderr
    (d,) = validate_program(out).delegates
    assert d.compile_spec_list == [("weight_streaming_budget", b"1073741824"), ("raw", b"\x00\xff")]
    text = etrt("inspect", out).stdout
    assert "compile specs: weight_streaming_budget = '1073741824' (TensorRT's weight-streaming budget, " \
           "1073741824 bytes" in text
    io = _write(tmp_path, _llm_description(compile_specs={"weight_streaming_budget": "1.5"}))
    p = etrt("pack", io, "-o", tmp_path / "bad.pte")
    assert p.returncode == 1 and not (tmp_path / "bad.pte").exists()
    assert "compile spec 'weight_streaming_budget' is '1.5', not a byte count" in p.stderr
    io = _write(tmp_path, _llm_description(compile_specs=["weight_streaming_budget", "1"]))
    p = etrt("pack", io, "-o", tmp_path / "bad.pte")
    assert p.returncode == 2 and "the engine.compile_specs must be an object" in one_error_line(p)


def _umask_then(mask):
    return lambda: os.umask(mask)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_pack_writes_files_with_the_usual_mode(tmp_path, mask, mode):
    io = _write(tmp_path, _llm_description())
    out = tmp_path / "m.pte"
    out.write_bytes(b"an older file")
    out.chmod(0o600 if mode != 0o600 else 0o644)  # the mode of a replaced file is not kept
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    p = subprocess.run([PYTHON, "-m", "etrt", "pack", str(io), "-o", str(out)], capture_output=True, text=True,
                       env=env, timeout=300, preexec_fn=_umask_then(mask))
    assert p.returncode == 0, p.stderr
    assert out.stat().st_mode & 0o777 == mode
    assert [f.name for f in tmp_path.iterdir() if f.name.startswith(".etrt-")] == []
