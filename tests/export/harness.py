"""Helpers of the real-export suite (tests/export): export a case through
ExecuTorch's pipeline, build and drive the C++ runner, call the etrt CLI."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

# The checkout whose python/ package and C++ runner are tested (ETRT_CHECKOUT: another one).
ROOT = Path(os.environ.get("ETRT_CHECKOUT") or Path(__file__).resolve().parents[2])


class Exported:
    def __init__(self, case, path: Path, manager, edge) -> None:
        self.case = case
        self.path = path
        self.manager = manager  # the ExecutorchProgramManager
        self.edge = edge  # the EdgeProgramManager after to_backend

    def eager(self):
        return self.case.make().eval()


#: The compile spec Torch-TensorRT's partitioner adds to every delegate (py/torch_tensorrt/executorch/partitioner.py):
#: ExecuTorch then places the delegate's inputs and outputs on that device (PropagateDevicePass).
TARGET_DEVICE_KEY = "target_device"


def export_case(case, out_dir: Path, target_device: Optional[str] = None, suffix: str = "",
                etrecord: Optional[Path] = None, cuda_engine: Optional[bool] = None,
                plan_io: bool = True, device_planning: bool = True) -> Exported:
    import torch
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge
    from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
    from torch.export import export

    import etrt_export

    model = case.make().eval()
    with torch.no_grad():
        program = export(model, case.example, dynamic_shapes=case.dynamic_shapes)
    edge = to_edge(program, compile_config=EdgeCompileConfig(_check_ir_validity=False))
    from executorch.exir.backend.compile_spec_schema import CompileSpec

    extra = [CompileSpec(TARGET_DEVICE_KEY, target_device.encode())] if target_device else []
    edge = edge.to_backend(etrt_export.EtrtTestPartitioner(profiles=case.profiles,
                                                            own_mutable_buffers=case.own_mutable_buffers,
                                                            extra_specs=extra, cuda_engine=cuda_engine))
    # The ETRecord wants the edge program as it was before to_executorch.
    edge_copy = copy.deepcopy(edge) if etrecord is not None else None
    # Mutable buffers start from the module's values (zeros), as in eager, not from an unspecified state.
    # plan_io=False: ExecuTorch plans no memory for the method's inputs and outputs; the runner gives it
    # (Module::set_output for the outputs), as a runner that keeps its KV caches in device memory does: a planned
    # input would be copied into host memory.
    from executorch.exir.passes import MemoryPlanningPass

    # device_planning=False: ExecuTorch's legacy planning (enable_non_cpu_memory_planning=False), which tags the
    # delegates' IO with the target device but plans every tensor in host memory and inserts no copies.
    manager = edge.to_executorch(ExecutorchBackendConfig(passes=[InitializedMutableBufferPass(["acc", "cache"])],
                                                         memory_planning_pass=MemoryPlanningPass(
                                                             alloc_graph_input=plan_io, alloc_graph_output=plan_io),
                                                         enable_non_cpu_memory_planning=device_planning))
    if etrecord is not None:
        from executorch.devtools import generate_etrecord

        generate_etrecord(str(etrecord), edge_copy, manager)
    path = out_dir / f"{case.name}{suffix}.pte"
    path.write_bytes(manager.buffer)
    return Exported(case, path, manager, edge)


# ---------------------------------------------------------------------------
# The C++ side


def cmake() -> str:
    """A CMake new enough for ExecuTorch's package (3.28): $ETRT_CMAKE, the project's .venv, or PATH's."""
    import re

    for candidate in (os.environ.get("ETRT_CMAKE"), str(ROOT / ".venv" / "bin" / "cmake"), shutil.which("cmake")):
        if not candidate or not os.path.exists(candidate):
            continue
        out = subprocess.run([candidate, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"version (\d+)\.(\d+)", out)
        if m and (int(m.group(1)), int(m.group(2))) >= (3, 28):
            return candidate
    raise RuntimeError("no CMake >= 3.28 (set ETRT_CMAKE, or run scripts/bootstrap.sh for .venv/bin/cmake)")


def build_runner(build: Path) -> Path:
    """tests/export/runner built against the installed etrt (its CMake package in site-packages/etrt/_native)."""
    prefix = subprocess.run([sys.executable, "-m", "etrt.native", "--cmake-prefix-path"], check=True,
                            capture_output=True, text=True).stdout.strip()
    cmd = [cmake(), "-S", str(ROOT / "tests" / "export" / "runner"), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
           "-DCMAKE_BUILD_TYPE=Release"]
    if not (build / "CMakeCache.txt").exists() and shutil.which("ninja"):
        cmd += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={shutil.which('ninja')}"]
    for step in (cmd, [cmake(), "--build", str(build)]):
        p = subprocess.run(step, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(step)}\n{p.stdout}\n{p.stderr}")
    return build / "etrt_export_runner"


def to_json(t) -> Dict[str, Any]:
    import torch

    names = {torch.float32: "float32", torch.int64: "int64", torch.int32: "int32"}
    return {"dtype": names[t.dtype], "shape": list(t.shape), "data": t.reshape(-1).tolist()}


def from_json(d):
    import torch

    dtypes = {"float32": torch.float32, "int64": torch.int64, "int32": torch.int32}
    return torch.tensor(d["data"], dtype=dtypes[d["dtype"]]).reshape(d["shape"])


def run_cpp(runner: Path, pte: Path, steps: List[Dict[str, Any]], tmp_path: Path,
            load_options: Optional[Dict[str, Any]] = None, etdump: Optional[Path] = None) -> Dict[str, Any]:
    """Runs ``steps`` ({"inputs": [tensors], "request": None | {"pin": i} | {"auto": policy}}) in one process,
    on one loaded Module; returns the runner's results with outputs as tensors. ``etdump``: run the Module with
    ExecuTorch's ETDumpGen and write the dump there."""
    spec = {"steps": [{"inputs": [to_json(t) for t in s["inputs"]], "request": s.get("request")} for s in steps]}
    if load_options is not None:
        spec["load_options"] = load_options
    if etdump is not None:
        spec["etdump"] = str(etdump)
    spec_path, out_path = tmp_path / "steps.json", tmp_path / "results.json"
    spec_path.write_text(json.dumps(spec))
    p = subprocess.run([str(runner), str(pte), str(spec_path), str(out_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    results = json.loads(out_path.read_text())
    for step in results["steps"]:
        step["outputs"] = [from_json(o) for o in step["outputs"]]
    return results


def etrt_cli(*args: str) -> subprocess.CompletedProcess:
    """``python -m etrt ...`` of the installed package."""
    return subprocess.run([sys.executable, "-m", "etrt", *map(str, args)], capture_output=True, text=True)


def load_method(path: Path, method: str = "forward"):
    """A freshly loaded method (its delegates initialized now, with the default load options in force)."""
    from executorch.runtime import Runtime

    return Runtime.get().load_program(str(path)).load_method(method)


def run_py(rt, method, steps: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Runs ``steps`` like run_cpp does, through ExecuTorch's Python runtime and etrt.runtime's guards."""
    import contextlib
    from dataclasses import asdict

    results = []
    for s in steps:
        request = s.get("request") or {}
        guard = (rt.profile(request["pin"]) if "pin" in request else
                 rt.automatic(request["auto"]) if "auto" in request else contextlib.nullcontext())
        with guard, rt.report() as report:
            rt.clear_last_error()
            try:
                outputs, ok = list(method.execute(list(s["inputs"]))), True
            except RuntimeError:
                outputs, ok = [], False
        results.append({"ok": ok, "outputs": outputs, "error": "" if ok else rt.last_error_message(),
                        "report": [asdict(e) for e in report.entries]})
    return results


def profiles_of(result: Dict[str, Any]) -> List[int]:
    return [e["profile"] for e in result["report"]]
