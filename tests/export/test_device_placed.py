"""What etrt makes of the programs Torch-TensorRT's exporter really writes: ``target_device=cuda:0`` on every
delegate, so ExecuTorch places the delegates' IO on CUDA, plans a buffer there and copies around each call
(device_placed.py exports them). Without a GPU (CI): the tools show and flag the placement, and the runtime
refuses at load saying what is needed. On a GPU, with a CUDA build of etrt, tests/gpu/run_device_placed_python.sh
runs the same exports against eager outputs."""

from __future__ import annotations

import json

import pytest

import device_placed
import harness

CASES = list(device_placed.STEPS)


@pytest.fixture(scope="module")
def placed(pte_dir):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = device_placed.export(name, pte_dir)
        return cache[name]

    return get


def inspect_json(path):
    done = harness.etrt_cli("inspect", "--json", path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", CASES)
def test_inspect_shows_the_cuda_buffer_the_device_tensors_and_the_copies(placed, name):
    report = inspect_json(placed(name).path)
    (method,) = report["methods"]
    devices = [b["device"] for b in method["buffers"]]
    assert "cuda:0" in devices, method["buffers"]
    assert all(b["size"] > 0 for b in method["buffers"] if b["device"] == "cuda:0")
    # Every TensorRT delegate's bound arguments live on the device.
    for d in method["delegates"]:
        bound = [a["bound_to"] for a in d["arguments"] if a.get("bound_to") is not None]
        assert bound and all(t["device"] == "cuda:0" for t in bound), d["arguments"]
    ops = {c["op"] for c in method["copies"]}
    assert ops == {"et_copy::_h2d_copy.out", "et_copy::_d2h_copy.out"}, method["copies"]
    # Each copy connects a host value and a device value.
    device_values = {int(k) for k in method["device_values"]}
    for c in method["copies"]:
        src_on_device = c["source"] in device_values
        dst_on_device = c["destination"] in device_values
        assert (src_on_device, dst_on_device) == ((False, True) if c["direction"] == "host-to-device" else (True, False))
    text = harness.etrt_cli("inspect", placed(name).path).stdout
    assert "on cuda:0" in text and "et_copy::_h2d_copy.out (host-to-device)" in text


def test_two_delegates_with_executorch_ops_between_get_copies_around_each(placed):
    report = inspect_json(placed("sandwich").path)
    (method,) = report["methods"]
    assert len(method["delegates"]) == 2
    calls = sorted(d["instruction"] for d in method["delegates"])
    h2d = [c["instruction"] for c in method["copies"] if c["direction"] == "host-to-device"]
    d2h = [c["instruction"] for c in method["copies"] if c["direction"] == "device-to-host"]
    for call in calls:  # a copy in before and a copy out after each delegate call
        assert any(i < call for i in h2d) and any(i > call for i in d2h)


@pytest.mark.parametrize("name", CASES)
def test_validate_warns_that_a_cuda_device_allocator_is_needed(placed, name):
    path = placed(name).path
    done = harness.etrt_cli("validate", path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warning: method 'forward' places memory on cuda:0" in done.stdout
    assert "a CUDA build of etrt" in done.stdout
    cpu = harness.etrt_cli("validate", "--runtime", "cpu", path)
    assert cpu.returncode == 1 and "needs" not in cpu.stderr
    assert "error: method 'forward' places memory on cuda:0" in cpu.stdout
    cuda = harness.etrt_cli("validate", "--runtime", "cuda", "--strict", path)
    assert cuda.returncode == 0 and "cuda:0" not in cuda.stdout, cuda.stdout


def test_a_program_without_target_device_gets_no_placement_finding(exported):
    done = harness.etrt_cli("validate", "--runtime", "cpu", "--strict", exported("projection").path)
    assert done.returncode == 0, done.stdout
    (method,) = inspect_json(exported("projection").path)["methods"]
    assert {b["device"] for b in method["buffers"]} == {"cpu"} and method["copies"] == []


@pytest.mark.parametrize("name", CASES)
def test_without_a_cuda_device_allocator_loading_is_refused_saying_what_is_needed(rt, placed, name):
    # The installed etrt here is a CPU build (scripts/test.sh), whose CUDA device allocator refuses the method's CUDA
    # buffer saying why; etrt.runtime.load_method says that and what to do.
    with pytest.raises(rt.DeviceAllocatorMissing) as refused:
        rt.load_method(placed(name).path)
    message = str(refused.value)
    assert "on device 1:0" in message  # ExecuTorch's own words
    assert "this libetrt was built without CUDA" in message  # etrt's CUDA device allocator's
    assert "places memory on cuda:0" in message and "target_device" in message
    assert "-DETRT_WITH_CUDA=ON" in message and "ExecuTorch's CUDA backend" in message
    assert isinstance(refused.value.__cause__, RuntimeError)


# --------------------------------------------------------------------------
# Every way a program meets device placement (device_placed.VARIANTS): etrt validate's verdict is the runtime's.

VARIANT_CASES = [(name, variant) for name in CASES for variant in device_placed.VARIANTS]

#: What a CUDA build of etrt does on a GPU with each variant (tests/gpu/run_device_placed_python.sh runs "cuda0"
#: there): runs it, or refuses it -- a host engine refuses CUDA-placed arguments at the call, and legacy planning puts
#: CUDA-tagged tensors in host memory, which ExecuTorch refuses at the input copy or a CUDA-mode engine would read as
#: device memory.
CUDA_BUILD_RUNS = {"cuda0": True, "cuda0_host": False, "legacy": False, "legacy_host": False, "cuda_engine": True,
                   "plain": True}


@pytest.fixture(scope="module")
def variant(pte_dir):
    cache = {}

    def get(name, which):
        if (name, which) not in cache:
            cache[name, which] = device_placed.export_variant(name, which, pte_dir)
        return cache[name, which]

    return get


def _python_runtime_verdict(rt, path, inputs):
    """(ran, etrt's message) of the installed etrt (a build without CUDA) through ExecuTorch's Python runtime: loading
    the method, then one call."""
    from executorch.runtime import Runtime

    rt.clear_last_error()
    try:
        method = Runtime.get().load_program(str(path)).load_method("forward")
        method.execute(list(inputs))
    except RuntimeError:
        return False, rt.last_error_message()
    return True, ""


@pytest.mark.parametrize("name,which", VARIANT_CASES)
def test_validate_for_a_cpu_build_refuses_exactly_what_the_cpu_build_refuses(rt, variant, name, which):
    path = variant(name, which).path
    ran, _ = _python_runtime_verdict(rt, path, device_placed.STEPS[name][0])
    done = harness.etrt_cli("validate", "--runtime", "cpu", path)
    assert done.returncode in (0, 1), done.stderr
    assert (done.returncode == 0) == ran, f"{which}: the runtime {'ran' if ran else 'refused'} it\n{done.stdout}"


@pytest.mark.parametrize("name,which", VARIANT_CASES)
def test_validate_for_a_cuda_build_refuses_what_a_cuda_build_refuses(variant, name, which):
    done = harness.etrt_cli("validate", "--runtime", "cuda", variant(name, which).path)
    assert done.returncode in (0, 1), done.stderr
    assert (done.returncode == 0) == CUDA_BUILD_RUNS[which], done.stdout
    if which == "cuda0_host":
        assert "error: 'forward' delegate 0" in done.stdout and "engine runs on the host" in done.stdout
    if which.startswith("legacy"):
        assert "enable_non_cpu_memory_planning=False" in done.stdout


@pytest.mark.parametrize("name,which", [(n, w) for n, w in VARIANT_CASES if w in ("cuda0", "cuda0_host")])
def test_a_cpu_build_refuses_device_placed_memory_through_module_naming_the_fix(runner, variant, tmp_path, name,
                                                                             which):
    # C++ Module (the export runner): the method fails to load at its CUDA buffer, and etrt::last_error_message() says
    # why -- etrt's CUDA device allocator of the build without CUDA -- where ExecuTorch alone says nothing of etrt.
    steps = [{"inputs": list(device_placed.STEPS[name][0])}]
    (step,) = harness.run_cpp(runner, variant(name, which).path, steps, tmp_path)["steps"]
    assert not step["ok"]
    assert "etrt's CUDA device allocator: allocating" in step["error"]
    assert "this libetrt was built without CUDA" in step["error"]
    assert "-DETRT_WITH_CUDA=ON" in step["error"] and "without the target_device compile spec" in step["error"]


def test_other_load_failures_pass_through_unchanged(rt, exported):
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(str(exported("projection").path))
    with pytest.raises(KeyError) as e:  # ExecuTorch's own error for an unknown method, untouched
        rt.load_method(program, "no_such_method")
    assert "no_such_method" in str(e.value)


def test_the_gpu_bundle_holds_each_case_its_steps_and_eager_outputs(tmp_path):
    import numpy as np

    manifest = device_placed.write_bundle(tmp_path)
    assert [c["name"] for c in manifest["cases"]] == CASES
    for case in manifest["cases"]:
        assert (tmp_path / case["pte"]).is_file()
        for step in case["steps"]:
            for f in step["inputs"] + step["outputs"]:
                assert np.load(tmp_path / f).size > 0
    # The stateful case's steps differ: the cache carries over.
    kv = next(c for c in manifest["cases"] if c["name"] == "kv_around")
    first = np.load(tmp_path / kv["steps"][1]["outputs"][0])
    assert np.abs(first).sum() > 0
