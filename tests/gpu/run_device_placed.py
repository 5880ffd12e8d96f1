"""Runs device-placed exports (tests/export/device_placed.py wrote them: target_device=cuda:0, CUDA-mode engines)
through ExecuTorch's Python runtime with a CUDA build of etrt, and compares every step with the eager outputs
saved at export time. Each case under both profile strategies, CUDA graphs off and on. Prints one line per run and
exits 1 on any mismatch or refusal. Usage: run_device_placed.py DIR (DIR holds manifest.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch

import etrt.runtime as rt


def main(root: Path) -> int:
    manifest = json.loads((root / "manifest.json").read_text())
    failures = 0
    for case in manifest["cases"]:
        for strategy in ("switch", "context_per_profile"):
            for graphs in (False, True):
                label = f"{case['name']} strategy={strategy} cuda_graphs={graphs}"
                try:
                    with rt.load_options(profile_strategy=strategy, cuda_graphs=graphs):
                        method = rt.load_method(str(root / case["pte"]))
                    worst = 0.0
                    for step in case["steps"]:
                        inputs = [torch.from_numpy(np.load(root / f)) for f in step["inputs"]]
                        outputs = rt.execute(method, inputs)
                        for got, f in zip(outputs, step["outputs"]):
                            want = np.load(root / f)
                            got = got.detach().cpu().numpy() if hasattr(got, "numpy") else np.asarray(got)
                            if got.shape != want.shape:
                                raise AssertionError(f"{f}: shape {got.shape}, expected {want.shape}")
                            worst = max(worst, float(np.max(np.abs(got - want))) if want.size else 0.0)
                    ok = worst <= 1e-4
                    print(f"{'PASS' if ok else 'FAIL'} {label}: max |etrt - eager| = {worst:.3g}")
                    failures += not ok
                except Exception as e:  # report and go on: one line per run
                    print(f"FAIL {label}: {type(e).__name__}: {e}")
                    failures += 1
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
