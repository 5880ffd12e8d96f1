#!/usr/bin/env bash
# Compiles the TensorRT adapter (src/engine/tensorrt/*.cpp) against NvInfer headers with the project's warnings and
# -Werror: each INCLUDE_DIR given (NVIDIA's `include/`, e.g. of NVIDIA/TensorRT at tags v8.6.0, v10.16, v11.1, kept
# outside this repository), then against the GPU-free declarations (nvinfer/include), with and without CUDA.
# Prints one line per header set and exits non-zero on the first that does not compile clean. docs/tensorrt.md.
#
#   scripts/check_nvinfer_headers.sh [INCLUDE_DIR ...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CXX="${CXX:-g++}"
CUDA_INCLUDE="${CUDA_INCLUDE:-/usr/local/cuda/include}"
# ExecuTorch's headers (common/error.h uses its Error): the wheel's, from scripts/bootstrap.sh's .venv.
ET_INCLUDE="${ET_INCLUDE:-$(ls -d .venv/lib/python3*/site-packages/executorch/include 2>/dev/null | head -1)}"
[[ -n "$ET_INCLUDE" ]] || { echo "check_nvinfer_headers.sh: no ExecuTorch headers; run scripts/bootstrap.sh" >&2; exit 2; }
FLAGS=(-std=c++17 -fsyntax-only -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion
       -Wno-sign-conversion -Werror -Isrc -Iinclude -isystem "$ET_INCLUDE" -DC10_USING_CUSTOM_GENERATED_MACROS)
# The adapter's sources, less the other implementation's answers (nvinfer_implementation.h): nvinfer_nvidia.cpp is
# compiled against NVIDIA's headers, nvinfer_gpufree.cpp against the GPU-free declarations.
sources_for() {  # the implementation file to leave out
  SOURCES=()
  for src in src/engine/tensorrt/*.cpp; do [[ "$(basename "$src")" == "$1" ]] || SOURCES+=("$src"); done
}

check() {  # label, extra flags...
  local label="$1"; shift
  for src in "${SOURCES[@]}"; do
    if ! "$CXX" "${FLAGS[@]}" "$@" "$src"; then
      echo "check_nvinfer_headers.sh: $src does not compile clean against $label" >&2
      exit 1
    fi
  done
  echo "ok: ${#SOURCES[@]} adapter sources, 0 warnings, against $label"
}

version_of() {  # the NV_TENSORRT_MAJOR.MINOR.PATCH the headers in $1 declare
  printf '#include <NvInferVersion.h>\nNV_TENSORRT_MAJOR.NV_TENSORRT_MINOR.NV_TENSORRT_PATCH\n' |
    "$CXX" -E -P -x c++ -isystem "$1" - 2>/dev/null | tail -1 | tr -d ' '
}

sources_for nvinfer_gpufree.cpp
for dir in "$@"; do
  [[ -f "$dir/NvInferVersion.h" ]] || { echo "check_nvinfer_headers.sh: $dir holds no NvInferVersion.h" >&2; exit 2; }
  check "NVIDIA's TensorRT $(version_of "$dir") headers ($dir)" -DETRT_WITH_CUDA=1 -isystem "$dir" -isystem "$CUDA_INCLUDE"
done
sources_for nvinfer_nvidia.cpp
check "the GPU-free declarations (nvinfer/include), with CUDA" -DETRT_WITH_CUDA=1 -isystem nvinfer/include \
  -isystem "$CUDA_INCLUDE"
check "the GPU-free declarations (nvinfer/include), without CUDA" -isystem nvinfer/include
