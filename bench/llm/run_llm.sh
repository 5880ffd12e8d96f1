#!/usr/bin/env bash
# On the GPU machine, from the TensorRT bundle (tests/contract/make_nvidia_bundle.sh; docs/real-llm.md), with
# NVIDIA's TensorRT 8.6 on LD_LIBRARY_PATH and PyTorch + onnx importable by python3:
#
#   bash run_llm.sh WORK LOGS [layers=16] [phase=all]
#
# phases: prepare  PyTorch: the model's ONNX, eager reference, `etrt pack` descriptions   (WORK/prepare.log)
#         build    NVIDIA's ONNX parser + builder: split.plan and wide.plan, side by side   (WORK/build.*.log)
#         pack     `etrt pack` (the bundle's Python package, flatc and ExecuTorch schema)  (WORK/pack.log)
#         bench    etrt_bench_llm: checks against eager, then the figures                  (WORK/bench.log)
#         all      the four in order
#         share-build  after all: split.plan again with profile sharing (split_sharing.plan), packed
#         share-bench  N = 1 and 8 sessions (SESSIONS) of split_sharing.pte and of split.pte, the engine shared and
#                  not: load time, engine counters, device memory (etrt_bench_nvidia_sessions)  (WORK/sessions.log)
# Every log is also copied into LOGS. Exit status 0 when every phase run passed. BENCH_ARGS: the runner's arguments
# after the folder ("7 check": the checks only).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:?usage: run_llm.sh WORK LOGS [layers] [phase]}"
LOGS="${2:?usage: run_llm.sh WORK LOGS [layers] [phase]}"
LAYERS="${3:-16}"
PHASE="${4:-all}"
PY="${PYTHON:-python3}"
mkdir -p "$WORK" "$LOGS"
export LD_LIBRARY_PATH="$HERE:${LD_LIBRARY_PATH:-}"
status=0
keep() { cp "$WORK"/*.log "$LOGS/" 2>/dev/null; }
phase() { [[ "$PHASE" == all || "$PHASE" == "$1" ]]; }

if phase prepare; then
  "$PY" "$HERE/llm/prepare_llm.py" "$WORK" --layers "$LAYERS" > "$WORK/prepare.log" 2>&1 || status=1
  grep -E "^prepare_llm" "$WORK/prepare.log"; tail -3 "$WORK/prepare.log" | grep -v "^prepare_llm"
fi
if phase build && [[ $status == 0 ]]; then
  for p in split wide; do
    "$HERE/etrt_llm_build_plan" "$WORK/model.onnx" "$WORK/$p.plan" "$p" > "$WORK/build.$p.log" 2>&1 &
  done
  wait -n || status=1
  wait -n || status=1
  for p in split wide; do tail -2 "$WORK/build.$p.log"; done
fi
if phase pack && [[ $status == 0 ]]; then
  for p in split wide; do
    ETRT_FLATC="$HERE/flatc" ETRT_EXECUTORCH_SCHEMA_DIR="$HERE/schema" ETRT_LIBRARY="$HERE/libetrt.so.0" \
      PYTHONPATH="$HERE/python" "$PY" -m etrt pack "$WORK/$p.io.json" -o "$WORK/$p.pte" >> "$WORK/pack.log" 2>&1 \
      || status=1
  done
  grep -E "^wrote|error" "$WORK/pack.log"
fi
if phase bench && [[ $status == 0 ]]; then
  "$HERE/etrt_bench_llm" "$WORK" ${BENCH_ARGS:-} > "$WORK/bench.log" 2>&1 || status=1
  cat "$WORK/bench.log" | grep -v "^\[TensorRT\]" | head -80
fi
if [[ "$PHASE" == share-build ]]; then
  ETRT_LLM_PROFILE_SHARING=1 "$HERE/etrt_llm_build_plan" "$WORK/model.onnx" "$WORK/split_sharing.plan" split \
    > "$WORK/build.split_sharing.log" 2>&1 || status=1
  tail -2 "$WORK/build.split_sharing.log"
  sed 's/"split\.plan"/"split_sharing.plan"/' "$WORK/split.io.json" > "$WORK/split_sharing.io.json"
  ETRT_FLATC="$HERE/flatc" ETRT_EXECUTORCH_SCHEMA_DIR="$HERE/schema" ETRT_LIBRARY="$HERE/libetrt.so.0" \
    PYTHONPATH="$HERE/python" "$PY" -m etrt pack "$WORK/split_sharing.io.json" -o "$WORK/split_sharing.pte" \
    >> "$WORK/pack.log" 2>&1 || status=1
  grep -E "^wrote|error" "$WORK/pack.log" | tail -1
fi
if [[ "$PHASE" == share-bench ]]; then
  # SESSIONS (default 1,8): the counts; REPS (default 3): the repetitions. A session of its own takes ~14.6 GiB (the
  # 5.4 GiB sharing plan and 9.2 GiB of scratch), so 8 need an H200; on an H100 (80 GB) SESSIONS=1,4. split.pte (no
  # profile sharing: every session deserializes, either way) once, to show it, when the build phase made it. On the
  # H200, REPS=2 without split.pte took 5 min.
  sessions="${SESSIONS:-1,8}"
  "$HERE/etrt_bench_nvidia_sessions" --reps "${REPS:-3}" --sessions "$sessions" "$WORK/split_sharing.pte" \
    >> "$WORK/sessions.log" 2>&1 || status=1
  if [[ -f "$WORK/split.pte" ]]; then
    "$HERE/etrt_bench_nvidia_sessions" --reps 1 --sessions "$sessions" "$WORK/split.pte" \
      >> "$WORK/sessions.log" 2>&1 || status=1
  fi
  cat "$WORK/sessions.log"
fi
keep
exit "$status"
