#!/usr/bin/env bash
# For a GPU machine with no network whose Python carries an older torch than the one ExecuTorch 1.5.1's Python
# bindings were built against (the H200 machine has torch 2.11; executorch 1.5.1 needs 2.14.0, and with 2.11 every
# tensor crossing the bindings fails with "tensor does not have a device"): packs torch==2.14.0 for that Python into
# parts a transfer can carry (<= 55 MiB each), with SHA256SUMS and a zstd for the machine (it has none).
#
#   tests/gpu/pack_torch.sh [out dir (.dp/torch)] [python version (3.12)]
#
# Leaves <out>/parts/tNN + SHA256SUMS and <out>/tools/{zstd, liblz4.so.1, unpack_torch.sh}. On the machine, with
# every part moved into one folder: `bash tools/unpack_torch.sh <parts folder> <site dir>`, then put <site dir>
# first on PYTHONPATH (run_device_placed_python.sh does, for ETRT_PYTHON_SITE, default /tmp/site).
# torch's CUDA libraries (nvidia-*-cu13) come from the machine, which has them for its torch 2.11.0+cu130 (same CUDA
# 13.0 sonames; torch finds them through sys.path), except NCCL: torch 2.14.0 pins nvidia-nccl-cu13 2.30.7 and
# libtorch_cuda.so needs symbols the machine's 2.28.9 lacks (ncclCommResume, ncclCommSuspend, ncclCommGrow, ...;
# `nm -D` against the wheels torch 2.11.0 pins: cudnn 9.19 and cusparseLt 0.8.0 lack none), so NCCL's wheel is
# carried too, as <site>/nvidia/nccl, which torch preloads before the machine's. The folder torch/include is left out
# (headers; nothing at run time reads them).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-$ROOT/.dp/torch}"
PYVER="${2:-3.12}"
TORCH_VERSION=2.14.0
NCCL_VERSION=2.30.7  # what torch 2.14.0's METADATA pins (nvidia-nccl-cu13)
command -v zstd > /dev/null || { echo "pack_torch.sh: needs zstd (apt-get install zstd)" >&2; exit 1; }
PIP=("$ROOT/.venv/bin/python" -m pip)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"${PIP[@]}" download -q --only-binary=:all: --no-deps --python-version "$PYVER" --implementation cp \
  --abi "cp${PYVER/./}" --platform manylinux_2_28_x86_64 --platform manylinux_2_18_x86_64 -d "$WORK" \
  "torch==$TORCH_VERSION" "nvidia-nccl-cu13==$NCCL_VERSION"
mkdir -p "$WORK/x"
for wheel in "$WORK"/torch-*.whl "$WORK"/nvidia_nccl_cu13-*.whl; do
  "$ROOT/.venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" \
    "$WORK/x"
done
rm -rf "$OUT/parts" "$OUT/tools"
mkdir -p "$OUT/parts" "$OUT/tools"
tar -C "$WORK/x" -c --exclude=torch/include torch "torch-$TORCH_VERSION.dist-info" nvidia/nccl |
  zstd -q -15 --long=31 -T0 -c | split -b 55M --numeric-suffixes=1 -a 2 - "$OUT/parts/t"
(cd "$OUT/parts" && sha256sum t?? > SHA256SUMS)
cp "$(command -v zstd)" "$OUT/tools/zstd"
cp "$(ldd "$(command -v zstd)" | awk '/liblz4/ {print $3}')" "$OUT/tools/"
cp "$ROOT/tests/gpu/unpack_torch.sh" "$OUT/tools/"
ls -l "$OUT/parts"
