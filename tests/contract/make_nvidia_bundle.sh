#!/usr/bin/env bash
# Stages the suites built against NVIDIA's TensorRT for a GPU machine: the NvInfer contract suite, the Module suite
# and its program generator (stripped), the shared libraries they load that a bare machine lacks except TensorRT's
# own (libetrt built against it, ExecuTorch's runtime from the wheel, libcudart), the project's .pte packer with the
# wheel's flatc and schema, and run_nvidia.sh. TensorRT's libraries travel separately (../shared/realtrt/prepare.sh,
# docs/gpu-testing.md); the bundle finds them through LD_LIBRARY_PATH.
#
#   tests/contract/make_nvidia_bundle.sh [build-dir (build-trt86)] [bundle-dir (.trt86/bundle)]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build-trt86}"
OUT="${2:-$ROOT/.trt86/bundle}"
BINARIES=(etrt_nvidia_contract_tests etrt_nvidia_make_programs etrt_nvidia_module_tests)
for b in "${BINARIES[@]}"; do
  if [[ ! -x "$BUILD/tests/contract/$b" ]]; then
    echo "make_nvidia_bundle.sh: $BUILD/tests/contract/$b is missing; configure $BUILD with" \
         "-DTENSORRT_ROOT=<TensorRT> -DETRT_WITH_CUDA=ON and build it" >&2
    exit 2
  fi
done
WHEEL="$(ls -d "$ROOT"/.venv/lib/python3*/site-packages/executorch | head -1)"
[[ -x "$WHEEL/data/bin/flatc" ]] || { echo "make_nvidia_bundle.sh: no flatc in $WHEEL; run scripts/bootstrap.sh" >&2; exit 2; }

rm -rf "$OUT" && mkdir -p "$OUT/schema" "$OUT/python"
for b in "${BINARIES[@]}"; do strip -o "$OUT/$b" "$BUILD/tests/contract/$b"; done
LINKED=("${BINARIES[@]/#/$BUILD/tests/contract/}")
# The figures' benchmarks, when the build has them (-DETRT_BUILD_BENCHMARKS=ON); run_nvidia.sh runs them, so what they
# load travels too.
for bench in etrt_bench_nvidia_decode etrt_bench_nvidia_sessions; do
  BENCH="$BUILD/bench/nvidia/$bench"
  if [[ -x "$BENCH" ]]; then strip -o "$OUT/$bench" "$BENCH"; LINKED+=("$BENCH"); fi
done
# The real-LLM benchmark (bench/llm), when the build has it (NVIDIA's ONNX parser at TENSORRT_ROOT): the plan builder,
# the runner, their Python side, the parser itself and the plugin library stub it loads (plugin_library_stub.cpp), and
# libetrt_tools, which the packer reads blobs with (etrt pack; found beside libetrt, as run_llm.sh's ETRT_LIBRARY).
LLM="$BUILD/bench/llm"
if [[ -x "$LLM/etrt_bench_llm" && -x "$LLM/etrt_llm_build_plan" ]]; then
  mkdir -p "$OUT/llm"
  for b in etrt_bench_llm etrt_llm_build_plan; do strip -o "$OUT/$b" "$LLM/$b"; LINKED+=("$LLM/$b"); done
  cp -L "$LLM/libnvinfer_plugin.so.8" "$(ldd "$LLM/etrt_llm_build_plan" | awk '/libnvonnxparser/ {print $3}')" "$OUT/"
  cp "$ROOT"/bench/llm/*.py "$ROOT/bench/llm/run_llm.sh" "$OUT/llm/"
  TOOLS_LIB="$BUILD/src/backend/libetrt_tools.so.0"
  [[ -f "$TOOLS_LIB" ]] || { echo "make_nvidia_bundle.sh: $TOOLS_LIB is missing; build the etrt_tools target" >&2; exit 2; }
  cp -L "$TOOLS_LIB" "$OUT/" && strip --strip-unneeded "$OUT/libetrt_tools.so.0"
fi
ldd "${LINKED[@]}" | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*|libnvinfer*) ;;
    libnvonnxparser*) ;;
    *) cp -L "$path" "$OUT/$name" && strip --strip-unneeded "$OUT/$name" ;;
  esac
done
# ExecuTorch's runtime libraries beside libexecutorch that ldd does not list for these binaries but a Module of this
# ExecuTorch loads for some programs: the et_copy kernels of device-placed programs (Torch-TensorRT's exports) and
# ETDump, ExecuTorch's event tracer. From the same wheel as the libexecutorch.so above.
for lib in libexecutorch_kernels_optimized.so libexecutorch_etdump.so; do
  if [[ -f "$WHEEL/lib/$lib" ]]; then
    [[ -f "$OUT/$lib" ]] || { cp -L "$WHEEL/lib/$lib" "$OUT/$lib" && strip --strip-unneeded "$OUT/$lib"; }
  else
    echo "make_nvidia_bundle.sh: WARNING: no $WHEEL/lib/$lib: the bundle goes without it" >&2
  fi
done
cp "$WHEEL/data/bin/flatc" "$OUT/"
cp "$WHEEL/exir/_serialize/program.fbs" "$WHEEL/exir/_serialize/scalar_type.fbs" "$OUT/schema/"
cp -r "$ROOT/python/etrt" "$OUT/python/" && find "$OUT/python" -name __pycache__ -prune -exec rm -rf {} +
cp "$ROOT/tests/contract/run_nvidia.sh" "$OUT/"
du -sh "$OUT"
