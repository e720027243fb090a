#!/usr/bin/env bash
# The AddressSanitizer + UndefinedBehaviorSanitizer build (clang-14, ONNXSERVE_SANITIZE and ONNXSERVE_FUZZ in
# one tree, build-fuzz/): builds it, runs the unit and e2e tests in it (the e2e tests start this tree's
# sanitized `onnxserve`), then every fuzz target briefly. Any sanitizer report fails the script.
# Usage: scripts/sanitize.sh [FUZZ_SECONDS_EACH (default 20; 0 skips fuzzing)] | --configure-only
# Environment: ONNXSERVE_FUZZ_BUILD_DIR (default build-fuzz), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${ONNXSERVE_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${JOBS:-2}
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# -O1 with line tables: the usual sanitizer trade-off (fast enough to run, quick to build, readable stacks).
# No benchmarks: they would only add build time.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
  -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" \
  -DONNXSERVE_SANITIZE=ON -DONNXSERVE_FUZZ=ON -DONNXSERVE_BUILD_BENCHMARKS=OFF >/dev/null
[ "${1:-}" = --configure-only ] && exit 0

fuzz_seconds=${1:-20}
start=$(date +%s)
cmake --build "$build_dir" -j "$jobs"
built=$(date +%s)

export ASAN_OPTIONS=${ASAN_OPTIONS:-"detect_leaks=1:strict_string_checks=1:check_initialization_order=1"}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-"print_stacktrace=1:halt_on_error=1"}
export LSAN_OPTIONS=${LSAN_OPTIONS:-"suppressions=$PWD/tests/fuzz/lsan.supp"}
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -L 'unit|e2e'
tested=$(date +%s)

if [ "$fuzz_seconds" != 0 ]; then
  ONNXSERVE_FUZZ_SKIP_BUILD=1 scripts/fuzz.sh "$fuzz_seconds"
fi
done_at=$(date +%s)
echo "sanitize.sh: build $((built - start)) s, unit+e2e tests $((tested - built)) s, fuzzing $((done_at - tested)) s"
