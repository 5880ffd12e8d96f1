# Sourced by the bundle's run scripts (run_bundle.sh, repeat_under_sanitizer.sh), from the bundle's folder: its
# libraries and fixtures, and its own C++ runtime (fallback/) when the machine's is older than the build's. Sets
# ETRT_BUNDLE_FALLBACK=1 in that case, for the caller to report.
#
#   source "$HERE/bundle_env.sh" "$HERE"
BUNDLE=${1:?usage: source bundle_env.sh BUNDLE_DIR}
export LD_LIBRARY_PATH="$BUNDLE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ETRT_GPU_FIXTURE_DIR="$BUNDLE/fixtures"
export ETRT_HOST_FIXTURE_DIR="$BUNDLE/host_fixtures"
export ETRT_DEVICE_PLACED_DIR="$BUNDLE/device_placed"
ETRT_BUNDLE_FALLBACK=0
if ! "$BUNDLE/etrt_gpu_engine_tests" --gtest_list_tests > /dev/null 2>&1; then
  export LD_LIBRARY_PATH="$BUNDLE/fallback:$LD_LIBRARY_PATH"
  ETRT_BUNDLE_FALLBACK=1
fi
