#!/usr/bin/env bash
# The main job: builds etrt and the demo model (a reference engine with a
# decode profile [1,1] and a prefill profile [1,32..2048]), then runs a
# prefill and decode steps through ExecuTorch's Module with profile guards.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/bootstrap.sh >&2
.venv/bin/cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
.venv/bin/cmake --build build --target etrt_llm_runner >/dev/null
exec build/examples/etrt_llm_runner build/examples/demo.pte "$@"
