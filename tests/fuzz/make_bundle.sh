#!/usr/bin/env bash
# Stages a fuzz build's three harnesses, the shared libraries they load, their seed corpora, the regression
# inputs, the dictionary and run_fuzzers.sh in one folder, for long runs on a machine with more cores and none of
# etrt's build dependencies (docs/testing.md, "Long runs"). On that machine:
#
#   bash <bundle>/run.sh --time 540 --jobs 16 --seed 0 module
#
# takes run_fuzzers.sh's arguments; corpora, findings and logs land in <bundle>/build-fuzz/fuzz/.
#
#   tests/fuzz/make_bundle.sh [fuzz-build-dir (build-fuzz)] [bundle-dir (build-fuzz-bundle)]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build-fuzz}"
OUT="${2:-$ROOT/build-fuzz-bundle}"

for t in blob engine module; do
  if [[ ! -x "$BUILD/tests/fuzz/etrt_fuzz_$t" || ! -d "$BUILD/tests/fuzz/seeds/$t" ]]; then
    echo "make_bundle.sh: $BUILD/tests/fuzz/etrt_fuzz_$t or its seeds are missing; build the fuzz targets" \
      "(docs/testing.md)" >&2
    exit 2
  fi
done

rm -rf "$OUT"
mkdir -p "$OUT/build-fuzz/tests/fuzz" "$OUT/tests/fuzz" "$OUT/lib"
for t in blob engine module; do cp "$BUILD/tests/fuzz/etrt_fuzz_$t" "$OUT/build-fuzz/tests/fuzz/"; done
cp -r "$BUILD/tests/fuzz/seeds" "$OUT/build-fuzz/tests/fuzz/"
cp -r "$ROOT/tests/fuzz/regressions" "$ROOT/tests/fuzz/blob.dict" "$ROOT/tests/fuzz/run_fuzzers.sh" "$OUT/tests/fuzz/"
# Every shared library the harnesses load, except the C/C++ runtime every Linux machine has.
ldd "$OUT"/build-fuzz/tests/fuzz/etrt_fuzz_* | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) ;;
    *) cp -L "$path" "$OUT/lib/$name" ;;
  esac
done
cat > "$OUT/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the bundled harnesses: run_fuzzers.sh's arguments (--time, --jobs, --seed, --fresh, targets).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LD_LIBRARY_PATH="$HERE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec bash "$HERE/tests/fuzz/run_fuzzers.sh" --build "$HERE/build-fuzz" "$@"
RUN
du -sh "$OUT"
