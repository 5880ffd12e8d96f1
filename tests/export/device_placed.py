"""Device-placed exports: the cases of models.py exported with the compile spec Torch-TensorRT's partitioner
always adds, ``target_device=cuda:0`` (py/torch_tensorrt/executorch/partitioner.py), so ExecuTorch places every
delegate's inputs and outputs on CUDA, plans a buffer there and copies around each call
(``et_copy::_h2d_copy.out`` / ``_d2h_copy.out``). The engines are the GPU-free NvInfer's CUDA mode.

``python tests/export/device_placed.py OUT_DIR`` (in .venv-export) writes, for a GPU machine
(tests/gpu/run_device_placed_python.sh): each case's .pte, every step's inputs and eager outputs as .npy, and
manifest.json naming them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict, List

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import models  # noqa: E402

TARGET_DEVICE = "cuda:0"

# Each case and the inputs of its steps, in order (a stateful case keeps its buffer across them). Several sequence
# lengths, so dynamic shapes go through the copies and both profiles are used.
STEPS: Dict[str, List[tuple]] = {
    "projection": [(models._ids(3),), (models._ids(40),), (models._ids(1),)],
    "sandwich": [(torch.randn(1, 1, 8), torch.randn(1, 1, 4)), (torch.randn(1, 20, 8), torch.randn(1, 20, 4))],
    "kv_around": [(torch.randn(1, 3, 4), torch.tensor([0])), (torch.randn(1, 1, 4), torch.tensor([3])),
                  (torch.randn(1, 1, 4), torch.tensor([4]))],
}


def export(name: str, out_dir: Path) -> harness.Exported:
    return harness.export_case(models.CASES[name], out_dir, target_device=TARGET_DEVICE, suffix="_cuda0")


#: Every way a program can meet device placement, for checking that etrt validate's verdict is the runtime's:
#: variant -> (target_device compile spec, CUDA-mode engine, ExecuTorch's per-device memory planning).
#: "cuda0" is what Torch-TensorRT writes; "cuda0_host" puts a host engine behind CUDA-placed arguments; "legacy"
#: and "legacy_host" are exported with enable_non_cpu_memory_planning=False (ExecuTorch's legacy planning: the
#: arguments are tagged CUDA but planned in host memory, with no copies); "cuda_engine" is a CUDA-mode engine without
#: placement; "plain" neither.
VARIANTS: Dict[str, tuple] = {
    "cuda0": (True, True, True),
    "cuda0_host": (True, False, True),
    "legacy": (True, True, False),
    "legacy_host": (True, False, False),
    "cuda_engine": (False, True, True),
    "plain": (False, False, True),
}


def export_variant(name: str, variant: str, out_dir: Path) -> harness.Exported:
    placed, cuda_engine, device_planning = VARIANTS[variant]
    return harness.export_case(models.CASES[name], out_dir, target_device=TARGET_DEVICE if placed else None,
                               suffix=f"_{variant}", cuda_engine=cuda_engine, device_planning=device_planning)


def eager_steps(name: str) -> List[Dict[str, Any]]:
    """``[{"inputs": [tensor], "outputs": [tensor]}]`` from a fresh eager model, step by step."""
    torch.manual_seed(0)
    model = models.CASES[name].make().eval()
    out = []
    with torch.no_grad():
        for inputs in STEPS[name]:
            result = model(*inputs)
            result = result if isinstance(result, tuple) else (result,)
            out.append({"inputs": list(inputs), "outputs": [r.clone() for r in result]})
    return out


def write_bundle(out_dir: Path) -> Dict[str, Any]:
    import numpy as np

    out_dir.mkdir(parents=True, exist_ok=True)
    manifest: Dict[str, Any] = {"target_device": TARGET_DEVICE, "cases": []}
    for name in STEPS:
        exported = export(name, out_dir)
        steps = []
        for si, step in enumerate(eager_steps(name)):
            entry: Dict[str, List[str]] = {"inputs": [], "outputs": []}
            for role in ("inputs", "outputs"):
                for k, t in enumerate(step[role]):
                    file = f"{name}_step{si}_{role[:-1]}{k}.npy"
                    np.save(out_dir / file, t.numpy())
                    entry[role].append(file)
            steps.append(entry)
        manifest["cases"].append({"name": name, "pte": exported.path.name, "steps": steps})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: device_placed.py OUT_DIR")
    print(json.dumps(write_bundle(Path(sys.argv[1])), indent=2))
