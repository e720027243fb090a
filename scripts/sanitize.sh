#!/usr/bin/env bash
# The AddressSanitizer + UndefinedBehaviorSanitizer build (clang-14, ONNXSERVE_SANITIZE and ONNXSERVE_FUZZ in
# one tree, build-fuzz/): builds it, runs the unit and e2e tests in it (the e2e tests start this tree's
# sanitized `onnxserve`), then every fuzz target briefly. Any sanitizer report fails the script.
# Usage: scripts/sanitize.sh [FUZZ_SECONDS_EACH (default 20; 0 skips fuzzing)] | --configure-only
# Environment: ONNXSERVE_FUZZ_BUILD_DIR (default build-fuzz), JOBS (default 2).
# `scripts/sanitize.sh --thread [--configure-only]`: ThreadSanitizer instead (ONNXSERVE_SANITIZE=thread, build-tsan/),
# the threaded unit tests and the e2e tests only, with tests/tsan.supp; run by hand, not by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${ONNXSERVE_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${JOBS:-2}
launcher=()

# The tests that run our code on two or more threads: the pool, sessions and kernels on it, memory budget
# and run limits, the batcher, the server layers in process, and the e2e tests against the TSan `onnxserve`.
tsan_tests=(core_test run_limits_test memory_budget_test packed_gemm_test grouped_conv_test winograd_test
            dnnl_conv_test nhwc_conv_test batcher_test held_requests_test response_cache_test warmup_test
            metrics_test server_e2e_test)
run_thread_sanitizer() {
  local tsan_dir=${ONNXSERVE_TSAN_BUILD_DIR:-build-tsan}
  cmake -S . -B "$tsan_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DCMAKE_CXX_COMPILER=clang++-14 \
    "${launcher[@]}" -DONNXSERVE_SANITIZE=thread -DONNXSERVE_BUILD_BENCHMARKS=OFF >/dev/null
  [ "$1" = --configure-only ] && return
  cmake --build "$tsan_dir" -j "$jobs" --target onnxserve "${tsan_tests[@]}"
  # Reports go to files, one per process, so that those of the e2e tests' servers are seen too. What the
  # uninstrumented libraries allocate and copy (gRPC's messages, abseil's Status) is left out: TSan cannot
  # see the order between those accesses anyway (tests/tsan.supp).
  local reports="$tsan_dir/tsan-reports"
  rm -rf "$reports" && mkdir -p "$reports"
  # A failed allocation returns null, as it does without TSan: tests make some on purpose (ThreadScratchTest).
  local options="ignore_noninstrumented_modules=1:allocator_may_return_null=1:second_deadlock_stack=1"
  options+=":suppressions=$PWD/tests/tsan.supp"
  export TSAN_OPTIONS=${TSAN_OPTIONS:-"$options:log_path=$PWD/$reports/tsan"}
  local failed=0 test
  # LargeResponseTest's answers of 2 GiB take minutes under TSan and run on one thread.
  for test in "${tsan_tests[@]}"; do
    "$(find "$tsan_dir/tests" -name "$test" -type f -perm -u+x | head -1)" --gtest_brief=1 \
      --gtest_filter=-LargeResponseTest.* || failed=1
  done
  if compgen -G "$reports/tsan.*" >/dev/null; then
    echo "sanitize.sh --thread: ThreadSanitizer reports in $reports:" && ls "$reports"
    failed=1
  fi
  return "$failed"
}
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ "${1:-}" = --thread ]; then
  run_thread_sanitizer "${2:-}"
  exit
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
