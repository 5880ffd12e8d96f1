#!/usr/bin/env bash
# Called by scripts/test.sh before the real-export suite installs .venv-export: torch from PyPI brings its CUDA
# libraries (~6 GiB), and pip holds the downloaded wheels (~3 GiB) until it has installed them all. Where the disk of
# CHECKOUT has less than ETRT_EXPORT_NEEDS_GIB (default 10) free, removes the build trees whose tests have run by then
# (build-asan, build-cuda, build-fuzz, build-tsan; build/ stays); still short, exits 1 naming the shortfall, so that
# the run stops here instead of pip failing midway. Does nothing once .venv-export is there.
#
#   scripts/free_disk_for_exports.sh CHECKOUT
set -euo pipefail
ROOT="${1:?usage: free_disk_for_exports.sh CHECKOUT}"
NEED="${ETRT_EXPORT_NEEDS_GIB:-10}"
free_gib() { df -P -k "$ROOT" | awk 'NR == 2 {print int($4 / 1048576)}'; }

[[ -x "$ROOT/.venv-export/bin/python" ]] && exit 0
(($(free_gib) >= NEED)) && exit 0
echo "free_disk_for_exports.sh: $(free_gib) GiB free, .venv-export needs about $NEED: removing build-asan, build-cuda," \
  "build-fuzz and build-tsan, whose tests have run"
rm -rf "$ROOT/build-asan" "$ROOT/build-cuda" "$ROOT/build-fuzz" "$ROOT/build-tsan"
if (($(free_gib) < NEED)); then
  echo "free_disk_for_exports.sh: only $(free_gib) GiB free on $(df -P "$ROOT" | awk 'NR == 2 {print $6}'); the" \
    "real-export suite needs about $NEED GiB for .venv-export (torch and its CUDA libraries): free some and rerun" >&2
  exit 1
fi
