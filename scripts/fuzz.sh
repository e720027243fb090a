#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang-14 with ASan + UBSan, in build-fuzz/ like
# scripts/sanitize.sh) and runs each for SECONDS (default 60). Seeds are generated from the test data
# (scripts/fuzz_seeds.py); what a run finds accumulates in build-fuzz/fuzz/corpus/<target>/, crashes go to the
# shared build-fuzz/fuzz/artifacts/. Prints executions and time per target; exits 1 if any target crashed.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (targets: model tensor_proto image config infer_request http)
# Environment: ONNXSERVE_FUZZ_BUILD_DIR, JOBS, FUZZ_ARGS (extra libFuzzer flags, e.g. "-fork=2 -ignore_crashes=1").
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(model tensor_proto image config infer_request http)
build_dir=${ONNXSERVE_FUZZ_BUILD_DIR:-build-fuzz}
work="$build_dir/fuzz"

if [ "${ONNXSERVE_FUZZ_SKIP_BUILD:-0}" != 1 ]; then
  scripts/sanitize.sh --configure-only
  cmake --build "$build_dir" -j "${JOBS:-2}" --target "${targets[@]/%/_fuzzer}"
fi
[ -d "$work/seeds" ] || /usr/bin/python3 scripts/fuzz_seeds.py "$work/seeds" >/dev/null
mkdir -p "$work/artifacts" "$work/logs"

# Allocations past 1 GiB fail (bad_alloc) instead of aborting, as a failed allocation does in the server:
# the runtime must turn it into an error (CatchExceptions), and the targets no longer catch anything, so one
# that escapes is a finding. Tensors are bounded lower still (tests/fuzz/fuzz_limits.h).
export ASAN_OPTIONS=${ASAN_OPTIONS:-"allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1"}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-"print_stacktrace=1:halt_on_error=1"}
export LSAN_OPTIONS=${LSAN_OPTIONS:-"suppressions=$PWD/tests/fuzz/lsan.supp"}

declare -A max_len=([model]=65536 [tensor_proto]=65536 [image]=16384 [config]=4096 [infer_request]=8192 [http]=4096)
# The HTTP server answers on its own threads, so nearly every input ends with allocations still live and
# libFuzzer's per-input leak scan (a fifth of the time) ran after most; leaks still fail the run at exit.
declare -A target_args=([http]=-detect_leaks=0)
failed=0
printf '%-14s %12s %8s %10s %8s\n' target executions seconds exec/s crashes
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t"
  dirs=("$work/corpus/$t" "$work/seeds/$t")
  [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
  before=$(find "$work/artifacts" -name "$t-*" | wc -l)
  start=$(date +%s)
  status=0
  # shellcheck disable=SC2086
  "$build_dir/tests/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=4096 \
    -malloc_limit_mb=2048 -max_len="${max_len[$t]}" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/$t-" ${target_args[$t]:-} ${FUZZ_ARGS:-} "${dirs[@]}" >"$work/logs/$t.log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/logs/$t.log" | grep -o '[0-9]*$' | tail -1)
  crashes=$(( $(find "$work/artifacts" -name "$t-*" | wc -l) - before ))
  if [ "$status" != 0 ] || [ "$crashes" != 0 ]; then
    failed=1
    [ "$crashes" != 0 ] || crashes="exit $status"
  fi
  printf '%-14s %12s %8s %10s %8s\n' "$t" "${execs:-?}" "$elapsed" "$(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))" "$crashes"
done
echo "logs: $work/logs/, crash inputs: $work/artifacts/"
exit $failed
