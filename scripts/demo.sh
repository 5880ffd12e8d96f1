#!/usr/bin/env bash
# The main job: builds etrt and the demo model, a one-layer attention decoder
# with a KV cache (a decode profile tokens [1,1] and a prefill profile
# [1,32..2048] over one set of weights; examples/llm_runner/), then runs a
# prefill and greedy decode steps through ExecuTorch's Module. The runner owns
# the caches and the engine updates them in place; every combination of
# profile strategy (switch, context_per_profile) and selection (pinned
# profiles, automatic) runs and must generate the same tokens.
#
#   scripts/demo.sh [prompt_tokens=48] [decode_steps=8] [--strategy S] [--select pin|auto|both] [--dump FILE]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/bootstrap.sh >&2
.venv/bin/cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
.venv/bin/cmake --build build --target etrt_llm_runner >/dev/null
exec build/examples/etrt_llm_runner build/examples/decoder.pte "$@"
