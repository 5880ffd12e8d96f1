#!/usr/bin/env bash
# On the GPU machine, from the bundle (tests/gpu/make_bundle.sh): runs the device-placed exports of tests/export
# (target_device=cuda:0, as Torch-TensorRT writes them) through ExecuTorch's Python runtime with the bundle's CUDA
# build of libetrt, which registers a CUDA device allocator when it loads, against the eager outputs saved at export.
#   bash gpu-bundle/run_device_placed_python.sh [python]     # default python3
# Needs, in that Python: torch and numpy (the machine's), and executorch==1.5.1 with the pure-Python packages it
# imports that the machine lacks: the bundle's wheels/ (tests/gpu/download_python_wheels.sh) are installed with
# `pip install --no-index --no-deps --target $ETRT_PYTHON_SITE` (default /tmp/site) and put first on PYTHONPATH;
# without wheels/ the Python's own executorch is used. Exit status: 0 when every run matched.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${1:-python3}"
SITE="${ETRT_PYTHON_SITE:-/tmp/site}"

shopt -s nullglob
wheels=("$HERE"/wheels/*.whl)
if ((${#wheels[@]})); then
  echo "installing ${#wheels[@]} wheel(s) into $SITE: $(cd "$HERE/wheels" && echo *.whl)"
  mkdir -p "$SITE"
  if "$PY" -m pip --version > /dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --upgrade --target "$SITE" "${wheels[@]}"
  else  # no pip: a wheel is a zip whose top level goes into site-packages as it is
    echo "no pip in $PY: unpacking the wheels"
    "$PY" -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' "$SITE" "${wheels[@]}"
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$HERE/python${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c 'import sys, torch, numpy, importlib.metadata as m; print("python", sys.version.split()[0], "torch",
  torch.__version__, "numpy", numpy.__version__, "executorch", m.version("executorch"))'

# libetrt from a folder of its own (<tmp>/lib, so its RUNPATH's $ORIGIN and $ORIGIN/../lib both name only it): the
# bundle's folder also holds the libexecutorch.so the C++ suites use, which libetrt's $ORIGIN would find, and
# etrt.runtime refuses a libetrt that would resolve libexecutorch.so to another file than the one ExecuTorch's
# Python bindings loaded. What else libetrt links (the GPU-free NvInfer, libcudart)
# comes from the bundle through LD_LIBRARY_PATH; libexecutorch(+threadpool) are the wheel's, already loaded by the
# bindings, the wheel's lib/ first for good measure.
EXECUTORCH_LIB="$("$PY" -c "import importlib.util, os; print(os.path.join(list(importlib.util.find_spec('executorch').submodule_search_locations)[0], 'lib'))")"
NATIVE="$(mktemp -d)"
mkdir "$NATIVE/lib"
trap 'rm -rf "$NATIVE"' EXIT
cp "$HERE/libetrt.so.0" "$NATIVE/lib/"
export ETRT_LIBRARY="$NATIVE/lib/libetrt.so.0"
export LD_LIBRARY_PATH="$EXECUTORCH_LIB:$HERE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$PY" "$HERE/run_device_placed.py" "$HERE/device_placed"
