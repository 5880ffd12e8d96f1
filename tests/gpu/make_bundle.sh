#!/usr/bin/env bash
# Stages everything the GPU suite and the GPU benchmark need on a GPU machine
# that has a CUDA driver but none of etrt's build dependencies (see
# docs/gpu-testing.md): the stripped test and benchmark binaries, libetrt, the
# shared libraries they load that a bare machine lacks (ExecuTorch's runtime
# from the wheel, libcudart, libbenchmark), the .pte fixtures (CUDA-mode, and
# tests/backend's host-mode ones in host_fixtures/), and
# run_bundle.sh, and the demo decoder's weights (fixtures/decoder_weights.*),
# so the logits the GPU suite dumps can be checked against NumPy. Everything
# lands in one folder; the binaries find their libraries through $ORIGIN or
# LD_LIBRARY_PATH.
#
# Device-placed programs (docs/gpu-testing.md): <build-dir>/device_placed/ (the
# exports etrt_gpu_device_placed_tests and run_device_placed_python.sh run;
# written by `.venv-export/bin/python tests/export/device_placed.py
# <build-dir>/device_placed`) and <build-dir>/python_wheels/ (the wheels the
# Python run installs; tests/gpu/download_python_wheels.sh) are staged when
# present, and their absence is reported loudly.
#
#   tests/gpu/make_bundle.sh [build-dir (build-cuda)] [bundle-dir (gpu-bundle)]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build-cuda}"
OUT="${2:-$ROOT/gpu-bundle}"

BINARIES=(tests/gpu/etrt_gpu_engine_tests tests/gpu/etrt_gpu_module_tests tests/gpu/etrt_gpu_fault_tests
          tests/gpu/etrt_gpu_integrated_tests tests/gpu/etrt_gpu_device_placed_tests bench/gpu/etrt_bench_gpu
          bench/gpu/etrt_bench_gpu_graphs bench/gpu/etrt_bench_gpu_scratch bench/gpu/etrt_bench_gpu_profiling
          bench/gpu/etrt_bench_gpu_sessions)
for b in "${BINARIES[@]}"; do
  if [[ ! -x "$BUILD/$b" ]]; then
    echo "make_bundle.sh: $BUILD/$b is missing; build $BUILD with -DETRT_WITH_CUDA=ON first" >&2
    exit 2
  fi
done

rm -rf "$OUT"
mkdir -p "$OUT/fixtures" "$OUT/host_fixtures" "$OUT/fallback"
for b in "${BINARIES[@]}"; do strip -o "$OUT/$(basename "$b")" "$BUILD/$b"; done
cp "$BUILD/tests/gpu/fixtures/"*.pte "$BUILD/tests/gpu/fixtures/decoder_weights."{bin,json} "$OUT/fixtures/"
# tests/backend's host-mode fixtures (same names): the Module suite runs on them beside the CUDA-mode ones.
cp "$BUILD/tests/backend/fixtures/"*.pte "$OUT/host_fixtures/"
cp "$ROOT/tests/gpu/run_bundle.sh" "$ROOT/tests/gpu/repeat_under_sanitizer.sh" "$ROOT/tests/gpu/bundle_env.sh" "$OUT/"
# elfutils' eu-stack and the libraries it needs beyond libc and libstdc++, for repeat_under_sanitizer.sh's stack
# dumps on machines without gdb; left out (and said) when this machine has no elfutils.
if command -v eu-stack > /dev/null; then
  mkdir -p "$OUT/debug" && cp -L "$(command -v eu-stack)" "$OUT/debug/"
  ldd "$(command -v eu-stack)" | awk '/=> \// {print $3}' | grep -E 'lib(dw|elf|bz2|lzma|z)\.so' |
    xargs -I{} cp -L {} "$OUT/debug/"
else
  echo "make_bundle.sh: no eu-stack here (apt-get install elfutils): repeat_under_sanitizer.sh will dump kernel" \
       "stacks only on a machine without gdb" >&2
fi
# Device-placed exports, for etrt_gpu_device_placed_tests and the Python run (run_device_placed_python.sh).
if [[ -f "$BUILD/device_placed/manifest.json" ]]; then
  cp -r "$BUILD/device_placed" "$OUT/device_placed"
  cp -r "$ROOT/python/etrt" "$OUT/python_etrt_tmp" && mkdir -p "$OUT/python" && mv "$OUT/python_etrt_tmp" "$OUT/python/etrt"
  find "$OUT/python" -name __pycache__ -prune -exec rm -rf {} +
  cp "$ROOT/tests/gpu/run_device_placed.py" "$ROOT/tests/gpu/run_device_placed_python.sh" "$OUT/"
  if compgen -G "$BUILD/python_wheels/*.whl" > /dev/null; then
    mkdir -p "$OUT/wheels" && cp "$BUILD/python_wheels/"*.whl "$OUT/wheels/"
  else
    echo "make_bundle.sh: WARNING: no $BUILD/python_wheels/*.whl: the Python run will need executorch==1.5.1 (and" \
      "ruamel.yaml) installed on the GPU machine; tests/gpu/download_python_wheels.sh $BUILD/python_wheels" \
      "downloads them" >&2
  fi
else
  echo "make_bundle.sh: WARNING: no $BUILD/device_placed/manifest.json: etrt_gpu_device_placed_tests will FAIL on" \
    "the GPU machine and the device-placed Python run is left out. Write the exports with" \
    ".venv-export/bin/python tests/export/device_placed.py $BUILD/device_placed, then run make_bundle.sh again" >&2
fi

# The KV-cache benchmark's programs (bench/gpu/decoder_state_export.py), when the build has the benchmark.
if [[ -x "$BUILD/bench/gpu/etrt_bench_gpu_decoder_state" ]]; then
  strip -o "$OUT/etrt_bench_gpu_decoder_state" "$BUILD/bench/gpu/etrt_bench_gpu_decoder_state"
  if [[ -f "$BUILD/decoder_state/manifest.json" ]]; then
    cp -r "$BUILD/decoder_state" "$OUT/decoder_state"
  else
    echo "make_bundle.sh: WARNING: no $BUILD/decoder_state/manifest.json: etrt_bench_gpu_decoder_state will fail on" \
      "the GPU machine. Write the programs with .venv-export/bin/python bench/gpu/decoder_state_export.py" \
      "$BUILD/decoder_state, then run make_bundle.sh again" >&2
  fi
fi

# Every shared library the binaries load, except the C/C++ runtime every Linux machine has.
ldd "$OUT"/etrt_* | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) ;;
    *) cp -L "$path" "$OUT/$name" && strip --strip-unneeded "$OUT/$name" ;;
  esac
done
# The C++ runtime this build needs, used only if the machine's is older (run_bundle.sh decides).
cp -L "$(g++ -print-file-name=libstdc++.so.6)" "$OUT/fallback/"
cp -L "$(g++ -print-file-name=libgcc_s.so.1)" "$OUT/fallback/"
du -sh "$OUT"
ls -l "$OUT"
