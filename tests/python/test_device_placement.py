"""etrt validate on device-placed programs (ExecuTorch 1.5 places the arguments of a delegate exported with a
``target_device`` compile spec on that device): it refuses where the runtime refuses, for every ``--runtime``.
The programs here are the packer's, edited as ExecuTorch's exporter writes placement (each argument's
``extra_tensor_info.device_type``, the plan's ``non_const_buffer_device``); tests/export/test_device_placed.py holds
ExecuTorch's own exports against the runtime's verdicts."""

from __future__ import annotations

import pytest

import _builders as B
from etrt import _reader
from etrt.validate import validate_program

RUNTIMES = ("unknown", "cpu", "cuda")


def _program(*, cuda_mode: bool, placed: bool, device_planning: bool = True) -> bytes:
    """forward(x) -> y through one delegate; ``placed``: x and y tagged cuda:0, in a planned buffer on cuda:0
    (``device_planning``, ExecuTorch's default) or in host memory (its legacy planning)."""
    io_in, io_out = [("x", "float32", [4])], [("y", "float32", [4])]
    eng = B.gpufree_engine("dev", io_in, io_out, [[([4], [4], [4])]], cuda_mode=cuda_mode)

    def build(m):
        for n, d, s in io_in + io_out:
            m.tensor(n, d, s)
        m.delegate_call("TensorRTBackend", B.trt_blob(io_in, io_out, None, eng), ["x", "y"])
        m.set_io(["x"], ["y"])

    def place(program):
        plan = program["execution_plan"][0]
        for value in plan["values"]:
            value["val"]["extra_tensor_info"] = {"device_type": "CUDA", "device_index": 0}
        if device_planning:
            plan["non_const_buffer_device"] = [{"buffer_idx": 1, "device_type": "CUDA", "device_index": 0}]

    return B.mutated_pte_bytes(build, place) if placed else B.pte_bytes(build)


def _errors(data: bytes, runtime: str):
    return sorted(f.code for f in validate_program(data, runtime=runtime).errors)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_host_engine_behind_cuda_placed_arguments_is_refused_with_the_calls_own_words(runtime):
    r = validate_program(_program(cuda_mode=False, placed=True), runtime=runtime)
    (f,) = [f for f in r.errors if f.code == "host-engine-on-device"]
    # The runtime's rule and message, through the C ABI: what bind_host returns at the call.
    assert _reader.host_engine_binds("cuda:0", True, "x") in f.message
    assert "input 'x' is in CUDA memory (device 0" in f.message and "engine runs on the host" in f.message
    assert "1 more argument(s) likewise" in f.message  # y too
    assert not r.ok


def test_the_runtimes_rule_accepts_host_memory_and_refuses_every_device():
    assert _reader.host_engine_binds("cpu", True, "x") is None
    assert "output 'y' is in CUDA memory (device 1" in _reader.host_engine_binds("cuda:1", False, "y")
    with pytest.raises(ValueError):
        _reader.host_engine_binds("tpu:0", True, "x")


def test_a_cuda_engine_behind_cuda_placed_arguments_is_what_a_cuda_build_runs(monkeypatch):
    monkeypatch.setattr(_reader, "build_has_cuda", lambda: False)
    data = _program(cuda_mode=True, placed=True)
    assert _errors(data, "cuda") == []
    assert validate_program(data, runtime="cuda").warnings == []
    # A CPU build refuses it at load twice over: no CUDA memory for the buffer, no CUDA for the engine.
    assert _errors(data, "cpu") == ["needs-cuda-build", "needs-cuda-device-allocator"]
    unknown = validate_program(data, runtime="unknown")
    assert unknown.ok and {f.code for f in unknown.warnings} == {"needs-cuda-build", "needs-cuda-device-allocator"}


@pytest.mark.parametrize("cuda_mode", [False, True])
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_legacy_device_planning_is_refused_by_every_runtime(runtime, cuda_mode):
    data = _program(cuda_mode=cuda_mode, placed=True, device_planning=False)
    r = validate_program(data, runtime=runtime)
    (f,) = [f for f in r.errors if f.code == "device-tensor-in-host-memory"]
    assert "v0 on cuda:0, buffer 1 on cpu" in f.message and "v1 on cuda:0, buffer 1 on cpu" in f.message
    assert "enable_non_cpu_memory_planning=False" in f.message
    assert "Planned-buffer copy needs host memory on both sides" in f.message
    # No device buffer: no allocator is needed, so none is asked for.
    assert "needs-cuda-device-allocator" not in {g.code for g in r.findings}


def test_a_cuda_mode_engine_is_an_error_for_a_cpu_build_whatever_this_build_is(monkeypatch):
    data = _program(cuda_mode=True, placed=False)
    for has_cuda in (False, True):
        monkeypatch.setattr(_reader, "build_has_cuda", lambda: has_cuda)
        (f,) = validate_program(data, runtime="cpu").errors
        assert f.code == "needs-cuda-build" and "--runtime cpu" in f.message
        assert _errors(data, "cuda") == []
    monkeypatch.setattr(_reader, "build_has_cuda", lambda: False)
    assert validate_program(data, runtime="unknown").ok


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_program_without_placement_and_a_host_engine_is_fine_everywhere(runtime):
    r = validate_program(_program(cuda_mode=False, placed=False), runtime=runtime)
    assert r.errors == [] and B.model_warnings(r) == []


# --------------------------------------------------------------------------
# etrt inspect: a delegate-owned state's arguments, worded as the state's own line


def test_inspect_labels_a_states_input_and_output_as_its_state_line_does():
    from etrt import blob
    from etrt.inspect_pte import format_report, inspect_program

    io_in = [("x", "float32", [1, 2]), ("acc", "float32", [1, 2])]
    io_out = [("acc_out", "float32", [1, 2]), ("y", "float32", [1, 2])]
    eng = B.gpufree_engine("st", io_in, io_out, [[([1, 2], [1, 2], [1, 2])] * 2])
    md = blob.Metadata(io_bindings=[blob.IoBinding(n, d, s, True) for n, d, s in io_in]
                       + [blob.IoBinding(n, d, s, False) for n, d, s in io_out],
                       delegate_state=[blob.DelegateState("acc", "acc", "acc_out")])

    def build(m):
        m.tensor("x", "float32", [1, 2])
        m.tensor("y", "float32", [1, 2])
        m.delegate_call("TensorRTBackend", blob.write_blob(md, eng), ["x", "y"])  # neither acc nor acc_out
        m.set_io(["x"], ["y"])

    report = inspect_program(B.pte_bytes(build))
    (d,) = report["methods"][0]["delegates"]
    by_name = {a["name"]: a for a in d["arguments"]}
    assert by_name["acc"]["state"] == by_name["acc_out"]["state"] == {"name": "acc", "in_place": False}
    assert "state" not in by_name["x"]
    text = format_report(report)
    assert "acc float32 [1, 2]  <- the delegate's state 'acc' (not passed: the delegate keeps it)" in text
    assert "acc_out float32 [1, 2]  -> copied back into the delegate's state 'acc'" in text
    assert "new value from 'acc_out', copied back" in text  # the state's own line says the same
    assert "written in place into its input only" not in text
