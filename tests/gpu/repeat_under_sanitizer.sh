#!/usr/bin/env bash
# On the GPU machine, from a bundle made by make_bundle.sh: runs one GPU suite's tests ROUNDS times, under a
# compute-sanitizer tool or plainly, to catch an intermittent stall. A round still running after STALL_S seconds
# (default 60) has every thread's stack written to <log-dir>/stacks.txt (gdb when the machine has it, else elfutils'
# eu-stack, else each thread's /proc wait channel and kernel stack), is killed, and ends the run; each round's log is
# kept. Frames in the bundle's stripped binaries show as offsets: resolve them against the build tree's unstripped
# files (addr2line -f -C -e build-cuda/src/libetrt.so.0 <offset>).
#
#   repeat_under_sanitizer.sh <log-dir> <rounds> <suite> <gtest-filter> <memcheck|racecheck|initcheck|none>
#   e.g. repeat_under_sanitizer.sh LOGS 20 etrt_gpu_module_tests 'SharedScratchCuda.*' memcheck
#
# Exit status: 0 when every round passed, 1 when one failed, 2 when one stalled.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOGS=${1:?usage: repeat_under_sanitizer.sh LOG_DIR ROUNDS SUITE FILTER TOOL}
ROUNDS=${2:?} SUITE=${3:?} FILTER=${4:?} TOOL=${5:?}
STALL_S=${STALL_S:-60}
# elfutils' eu-stack when the machine lacks gdb: the bundle's copy (make_bundle.sh stages it from the build
# machine, with the libraries it needs, when elfutils is installed there), else the machine's.
EU_STACK=$([[ -x $HERE/debug/eu-stack ]] && echo "$HERE/debug/eu-stack" || command -v eu-stack)
source "$HERE/bundle_env.sh" "$HERE"
[[ $TOOL == none ]] || export ETRT_GPU_TESTS_UNDER_SANITIZER=1
mkdir -p "$LOGS"
status=0
for round in $(seq 1 "$ROUNDS"); do
  log="$LOGS/round$round.log" start=$SECONDS
  if [[ $TOOL == none ]]; then
    "$HERE/$SUITE" --gtest_filter="$FILTER" > "$log" 2>&1 &
  else
    compute-sanitizer --tool "$TOOL" --error-exitcode 86 "$HERE/$SUITE" --gtest_filter="$FILTER" > "$log" 2>&1 &
  fi
  pid=$!
  while kill -0 "$pid" 2> /dev/null && ((SECONDS - start < STALL_S)); do sleep 0.5; done
  if kill -0 "$pid" 2> /dev/null; then
    echo "round $round: STALLED after $((SECONDS - start)) s in: $(grep -E '^\[ RUN' "$log" | tail -1)"
    for p in $(pgrep -f "$HERE/$SUITE"); do
      echo "== pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-120)"
      if command -v gdb > /dev/null; then
        gdb -p "$p" -batch -ex "thread apply all bt" 2>&1
      elif [[ -n $EU_STACK ]]; then
        LD_LIBRARY_PATH="$(dirname "$EU_STACK"):$LD_LIBRARY_PATH" "$EU_STACK" -p "$p" -i -m -s 2>&1
        grep -E ' r-xp .*\.so|r-xp .*/etrt_' "/proc/$p/maps"  # where each library's code is: address - start = offset
      else
        for t in /proc/"$p"/task/*; do
          echo "-- thread ${t##*/} $(cat "$t/comm") state $(cut -d' ' -f3 "$t/stat") waits in $(cat "$t/wchan")"
          cat "$t/stack" 2> /dev/null
        done
      fi
    done >> "$LOGS/stacks.txt"
    pkill -9 -f "$HERE/$SUITE"
    wait "$pid" 2> /dev/null
    exit 2
  fi
  wait "$pid"
  rc=$?
  ((rc == 0)) || status=1
  echo "round $round: exit $rc in $((SECONDS - start)) s $(grep -hE '^\[  (PASSED|FAILED) +\]|(ERROR|RACECHECK) SUMMARY' "$log" | tr '\n' ' ')"
done
exit $status
