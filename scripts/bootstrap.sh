#!/usr/bin/env bash
# Installs what etrt needs to build and test, idempotently:
#   * Debian packages: compiler, Ninja, GoogleTest, Google Benchmark, nlohmann-json;
#   * .venv/: ExecuTorch's PyPI wheel (--no-deps: we use its C++ runtime,
#     headers, CMake config, flatc and schema, not its Python side), a CMake
#     new enough for the wheel's imported targets (>= 3.28), pytest, and NumPy
#     (the demo decoder's independent reference, tests/python/test_decoder_demo.py).
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

VENV="$ROOT/.venv"
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "bootstrap: creating $VENV"
  python3 -m venv "$VENV"
fi
PY="$VENV/bin/python"
have() { "$PY" - "$@" <<'PYEOF'
import sys
from importlib.metadata import version, PackageNotFoundError
name, want = sys.argv[1], sys.argv[2]
try:
    v = version(name)
except PackageNotFoundError:
    sys.exit(1)
if want.startswith(">="):
    parse = lambda s: tuple(int(x) for x in s.split(".")[:2])
    sys.exit(0 if parse(v) >= parse(want[2:]) else 1)
sys.exit(0 if v == want else 1)
PYEOF
}
if ! have executorch "$EXECUTORCH_VERSION"; then
  echo "bootstrap: installing executorch==$EXECUTORCH_VERSION (--no-deps)"
  "$PY" -m pip install -q --no-deps "executorch==$EXECUTORCH_VERSION"
fi
if ! have cmake ">=3.28"; then
  "$PY" -m pip install -q "cmake>=3.28,<4.2"
fi
if ! have pytest ">=7.0"; then
  "$PY" -m pip install -q "pytest>=7"
fi
if ! have numpy ">=1.22"; then
  # --no-warn-conflicts: executorch was installed --no-deps on purpose; pip would list its Python deps.
  "$PY" -m pip install -q --no-warn-conflicts "numpy>=1.22"
fi
