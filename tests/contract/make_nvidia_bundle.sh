#!/usr/bin/env bash
# Stages the NvInfer contract suite built against NVIDIA's TensorRT for a GPU machine: the stripped test binary,
# libcudart, and run_nvidia.sh. TensorRT's own libraries travel separately (../shared/realtrt/prepare.sh and
# docs/gpu-testing.md); the bundle finds them through LD_LIBRARY_PATH.
#
#   tests/contract/make_nvidia_bundle.sh [build-dir (build-trt86)] [bundle-dir (.trt86/bundle)]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build-trt86}"
OUT="${2:-$ROOT/.trt86/bundle}"
BIN="$BUILD/tests/contract/etrt_nvidia_contract_tests"
if [[ ! -x "$BIN" ]]; then
  echo "make_nvidia_bundle.sh: $BIN is missing; configure $BUILD with -DTENSORRT_ROOT=<TensorRT> -DETRT_WITH_CUDA=ON" \
       "and build it" >&2
  exit 2
fi
rm -rf "$OUT" && mkdir -p "$OUT"
strip -o "$OUT/etrt_nvidia_contract_tests" "$BIN"
ldd "$BIN" | awk '/libcudart/ {print $3}' | xargs -r -I{} cp -L {} "$OUT/"
cp "$ROOT/tests/contract/run_nvidia.sh" "$OUT/"
du -sh "$OUT"
