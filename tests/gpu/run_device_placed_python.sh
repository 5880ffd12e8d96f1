#!/usr/bin/env bash
# On the GPU machine, from the bundle (tests/gpu/make_bundle.sh): runs the device-placed exports of tests/export
# (target_device=cuda:0, as Torch-TensorRT writes them) through ExecuTorch's Python runtime with the bundle's CUDA
# build of libetrt, which registers a CUDA device allocator when it loads, against the eager outputs saved at export.
#   bash gpu-bundle/run_device_placed_python.sh [python]     # default python3
# Needs, in that Python: executorch==1.5.1 (its wheel for that Python, carried when there is no network), torch and
# numpy. Exit status: 0 when every run matched.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${1:-python3}"
# libetrt and what it links (the GPU-free NvInfer, libcudart) from the bundle; libexecutorch is the one ExecuTorch's
# Python bindings already loaded (etrt.runtime checks that it is shared).
# The wheel's lib/ comes first, so libetrt resolves libexecutorch.so to the one the bindings load, not the bundle's
# copy (which the C++ suites use).
EXECUTORCH_LIB="$("$PY" -c "import importlib.util, os; print(os.path.join(list(importlib.util.find_spec('executorch').submodule_search_locations)[0], 'lib'))")"
export ETRT_LIBRARY="$HERE/libetrt.so.0"
export LD_LIBRARY_PATH="$EXECUTORCH_LIB:$HERE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$HERE/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" "$HERE/run_device_placed.py" "$HERE/device_placed"
