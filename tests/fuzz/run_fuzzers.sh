#!/usr/bin/env bash
# Runs etrt's libFuzzer harnesses (tests/fuzz, docs/testing.md) from a build configured with
# -DETRT_BUILD_FUZZERS=ON, all at once, each for a fixed time. Exits non-zero if any finds something.
#
#   tests/fuzz/run_fuzzers.sh [--build DIR] [--time SECONDS] [--seed N] [--jobs N] [--fresh] [TARGET...]
#
#   --build DIR     the fuzz build (default build-fuzz)
#   --time SECONDS  how long each harness runs (default 60)
#   --seed N        libFuzzer's -seed (default 1; 0 lets libFuzzer pick one)
#   --jobs N        processes per harness (default 1); above 1, libFuzzer's fork mode (-fork=N)
#   --fresh         start from the seed corpus alone, forgetting what earlier runs found
#   TARGET          blob, engine, module (default: all three)
#
# Each harness reads the seed corpus (DIR/tests/fuzz/seeds/TARGET, built from the backend fixtures and the blob
# vectors) and tests/fuzz/regressions/TARGET, and grows its own corpus in DIR/fuzz/corpus/TARGET, kept between
# runs unless --fresh. Findings (crashes, leaks, timeouts, out-of-memory) are written to DIR/fuzz/findings/TARGET/
# and the log to DIR/fuzz/TARGET.log.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

BUILD="$ROOT/build-fuzz"
SECONDS_EACH=60
SEED=1
JOBS=1
FRESH=0
TARGETS=()
while (($#)); do
  case "$1" in
    --build) BUILD="$(cd "$2" && pwd)"; shift 2 ;;
    --time) SECONDS_EACH="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --jobs) JOBS="$2"; shift 2 ;;
    --fresh) FRESH=1; shift ;;
    blob|engine|module) TARGETS+=("$1"); shift ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_fuzzers.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
((${#TARGETS[@]})) || TARGETS=(blob engine module)

# ASan: an allocation past max_allocation_size_mb fails (malloc and nothrow new return null) as it would on a
# machine without the memory, so refusals of huge engines are exercised rather than reported; a throwing new of
# that size is still a finding. libFuzzer's own limits (-rss_limit_mb, -malloc_limit_mb) stay at 2048 MB.
export ASAN_OPTIONS="${ASAN_OPTIONS:-allocator_may_return_null=1:max_allocation_size_mb=2000}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

WORK="$BUILD/fuzz"
mkdir -p "$WORK"
start_mark="$WORK/.start"
touch "$start_mark"
pids=()
for t in "${TARGETS[@]}"; do
  bin="$BUILD/tests/fuzz/etrt_fuzz_$t"
  seeds="$BUILD/tests/fuzz/seeds/$t"
  if [[ ! -x "$bin" || ! -d "$seeds" ]]; then
    echo "run_fuzzers.sh: $bin or its seeds are missing; build them first:" >&2
    echo "  cmake --build $BUILD --target etrt_fuzz_$t" >&2
    exit 2
  fi
  corpus="$WORK/corpus/$t"
  ((FRESH)) && rm -rf "$corpus"
  mkdir -p "$corpus" "$WORK/findings/$t"
  args=(-seed="$SEED" -max_total_time="$SECONDS_EACH" -timeout=30 -print_final_stats=1
        -artifact_prefix="$WORK/findings/$t/")
  [[ "$t" == blob ]] && args+=(-dict="$ROOT/tests/fuzz/blob.dict")
  ((JOBS > 1)) && args+=(-fork="$JOBS")
  dirs=("$corpus" "$seeds")
  [[ -d "$ROOT/tests/fuzz/regressions/$t" ]] && dirs+=("$ROOT/tests/fuzz/regressions/$t")
  echo "== fuzz $t: ${SECONDS_EACH}s, seed $SEED, $JOBS job(s); log $WORK/$t.log"
  "$bin" "${args[@]}" "${dirs[@]}" >"$WORK/$t.log" 2>&1 &
  pids+=($!)
done

failed=0
for i in "${!TARGETS[@]}"; do
  t="${TARGETS[$i]}"
  if wait "${pids[$i]}"; then
    echo "== fuzz $t: no finding ($(grep -aE '^(#[0-9]+\s+DONE|#[0-9]+: cov:|stat::number_of_executed_units)' "$WORK/$t.log" | tail -2 | tr -s ' \t' ' ' | paste -sd ' ' -))"
  else
    status=$?
    failed=1
    echo "== fuzz $t: FINDING (exit status $status); the end of $WORK/$t.log:" >&2
    tail -n 60 "$WORK/$t.log" >&2
    for f in $(find "$WORK/findings/$t" -type f -newer "$start_mark" | sort); do
      echo "input: $f" >&2
      echo "  reproduce: $BUILD/tests/fuzz/etrt_fuzz_$t $f" >&2
      echo "  keep it as a regression test: cp $f $ROOT/tests/fuzz/regressions/$t/ (docs/testing.md)" >&2
    done
  fi
done
exit "$failed"
