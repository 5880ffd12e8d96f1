#!/usr/bin/env bash
# Downloads the wheels the bundle's Python run (run_device_placed_python.sh) installs on a GPU machine that has
# Python, torch and numpy but no network: ExecuTorch 1.5.1 for that Python, and the pure-Python packages
# `import executorch.runtime` needs that such a machine lacks. make_bundle.sh stages what lands in <dir> as wheels/.
#
#   tests/gpu/download_python_wheels.sh [dir (build-cuda/python_wheels)] [python version (3.12)]
#
# The list: `python -X importtime -c "import executorch.runtime"` in .venv-export, against a machine with torch,
# numpy, pyyaml, tabulate, flatbuffers, sympy, mpmath, networkx, jinja2, typing-extensions, packaging, filelock,
# fsspec and triton: ruamel.yaml (executorch.exir.dialects.edge._ops) is the one missing. torchao and tqdm are
# imported only when present; expecttest, hypothesis, pandas and the rest of executorch's declared dependencies are
# not imported by the runtime. --no-deps keeps pip from fetching torch.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIR="${1:-$ROOT/build-cuda/python_wheels}"
PYVER="${2:-3.12}"
PIP=("$ROOT/.venv-export/bin/python" -m pip)
[[ -x "$ROOT/.venv-export/bin/python" ]] || PIP=(python3 -m pip)
ABI="cp${PYVER/./}"
WHEELS=(executorch==1.5.1 ruamel.yaml==0.19.1)
mkdir -p "$DIR"
"${PIP[@]}" download -q --only-binary=:all: --no-deps --python-version "$PYVER" --implementation cp --abi "$ABI" \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform any -d "$DIR" "${WHEELS[@]}"
ls -l "$DIR"
du -sh "$DIR"
