#!/usr/bin/env bash
# Installs what etrt needs to build and test, idempotently:
#   * Debian packages: compiler, Ninja, GoogleTest, Google Benchmark, nlohmann-json; clang with libFuzzer
#     (scripts/test.sh's fuzz build);
#   * .venv/: ExecuTorch's PyPI wheel (--no-deps: we use its C++ runtime,
#     headers, CMake config, flatc and schema, not its Python side), a CMake
#     new enough for the wheel's imported targets (>= 3.28), pytest, and NumPy
#     (the demo decoder's independent reference, tests/python/test_decoder_demo.py).
# With --export, also .venv-export/: ExecuTorch's PyPI wheel with its dependencies
# and the torch it was released with, pytest and onnx, for the real-export suite
# (tests/export; scripts/test.sh pip-installs etrt into it).
# Safe to run repeatedly; does nothing once everything is present.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXECUTORCH_VERSION="${ETRT_EXECUTORCH_VERSION:-1.5.1}"

debian_packages=(g++ ninja-build libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev)
missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

# clang with libFuzzer and its sanitizer runtimes, for the fuzz build of scripts/test.sh (docs/testing.md).
fuzz_toolchain_works() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local dir
  dir="$(mktemp -d)"
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$dir/t.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$dir/t.cpp" -o "$dir/t" >/dev/null 2>&1
  local status=$?
  rm -rf "$dir"
  return $status
}
if ! fuzz_toolchain_works; then
  echo "bootstrap: installing clang and its runtimes (libFuzzer, sanitizers)"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q clang libclang-rt-dev
fi

VENV="$ROOT/.venv"
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "bootstrap: creating $VENV"
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
# have NAME VERSION|>=VERSION: whether $HAVE_PY (default $PY) has that distribution (a local label such as +cpu
# is ignored).
have() { "${HAVE_PY:-$PY}" - "$@" <<'PYEOF'
import sys
from importlib.metadata import version, PackageNotFoundError
name, want = sys.argv[1], sys.argv[2]
try:
    v = version(name).split("+")[0]
except PackageNotFoundError:
    sys.exit(1)
if want.startswith(">="):
    parse = lambda s: tuple(int(x) for x in s.split(".")[:2])
    sys.exit(0 if parse(v) >= parse(want[2:]) else 1)
sys.exit(0 if v == want else 1)
PYEOF
}
# --no-warn-conflicts, here and below: executorch is installed --no-deps on purpose; pip would list its Python deps.
if ! have executorch "$EXECUTORCH_VERSION"; then
  echo "bootstrap: installing executorch==$EXECUTORCH_VERSION (--no-deps)"
  "$PY" -m pip install -q --no-deps --no-warn-conflicts "executorch==$EXECUTORCH_VERSION"
fi
if ! have cmake ">=3.28"; then
  "$PY" -m pip install -q --no-warn-conflicts "cmake>=3.28,<4.2"
fi
if ! have pytest ">=7.0"; then
  "$PY" -m pip install -q --no-warn-conflicts "pytest>=7"
fi
if ! have numpy ">=1.22"; then
  "$PY" -m pip install -q --no-warn-conflicts "numpy>=1.22"
fi

if [[ "${1:-}" == "--export" ]]; then
  TORCH_VERSION="${ETRT_TORCH_VERSION:-2.14.0}"
  VENV_EXPORT="$ROOT/.venv-export"
  if [[ ! -x "$VENV_EXPORT/bin/python" ]]; then
    echo "bootstrap: creating $VENV_EXPORT"
    python3 -m venv "$VENV_EXPORT"
  fi
  # Git ignores the whole environment (what `python -m venv` writes itself from Python 3.13 on).
  [[ -f "$VENV_EXPORT/.gitignore" ]] || printf '*\n' >"$VENV_EXPORT/.gitignore"
  EPY="$VENV_EXPORT/bin/python"
  # No pip cache for this environment: torch's wheels and CUDA libraries would be kept twice on disk (the
  # environment itself is the cache; bootstrap installs nothing once it is there).
  export PIP_NO_CACHE_DIR=1
  if ! HAVE_PY="$EPY" have torch "$TORCH_VERSION"; then
    # CPU wheels from PyTorch's index when it answers (no CUDA libraries: ~1 GB instead of ~6 GB), else PyPI's.
    if "$EPY" -c "import urllib.request; urllib.request.urlopen('https://download.pytorch.org/whl/cpu/torch/', timeout=10)" \
      2>/dev/null; then
      echo "bootstrap: installing torch==$TORCH_VERSION (CPU, download.pytorch.org) into $VENV_EXPORT"
      "$EPY" -m pip install -q "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu
    else
      echo "bootstrap: installing torch==$TORCH_VERSION (PyPI; PyTorch's CPU index is not reachable) into $VENV_EXPORT"
      "$EPY" -m pip install -q "torch==$TORCH_VERSION"
    fi
  fi
  if ! HAVE_PY="$EPY" have executorch "$EXECUTORCH_VERSION" || ! HAVE_PY="$EPY" have pytest ">=7.0"; then
    echo "bootstrap: installing executorch==$EXECUTORCH_VERSION and pytest into $VENV_EXPORT"
    "$EPY" -m pip install -q "executorch==$EXECUTORCH_VERSION" "torch==$TORCH_VERSION" "pytest>=7"
  fi
  # ONNX, for the real-LLM pipeline's export (bench/llm, tests/export/test_llm_pipeline.py).
  if ! HAVE_PY="$EPY" have onnx ">=1.16"; then
    echo "bootstrap: installing onnx into $VENV_EXPORT"
    "$EPY" -m pip install -q "onnx>=1.16"
  fi
fi
