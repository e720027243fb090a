#!/usr/bin/env bash
# Builds onnxserve and runs its whole test suite: unit (fuzz-target replays included), conformance (ONNX
# backend tests from ../shared/onnx-tests when present) and server end-to-end tests in the release build;
# then the AddressSanitizer + UndefinedBehaviorSanitizer build (scripts/sanitize.sh) runs the unit and e2e
# tests again. That stage builds a second tree (about 15 minutes on 2 cores with a warm ccache, 30 cold):
# ONNXSERVE_SKIP_SANITIZERS=1 leaves it out. It replays the fuzz corpora but explores nothing new unless
# ONNXSERVE_FUZZ_SECONDS gives each target time, so a run's verdict does not depend on luck.
# Installs dependencies first unless ONNXSERVE_SKIP_DEPS=1.
# Usage: scripts/test.sh [extra ctest arguments for the release build]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${ONNXSERVE_SKIP_DEPS:-0}" != 1 ]; then
  scripts/install-deps.sh
fi
# ccache, when present, makes a rebuild of an unchanged tree take seconds; paths are made relative to the
# checkout so that two clones share the cache.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
build_dir=${ONNXSERVE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
cmake --build "$build_dir" -j "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "$@"

if [ "${ONNXSERVE_SKIP_SANITIZERS:-0}" != 1 ]; then
  JOBS=$(nproc) scripts/sanitize.sh "${ONNXSERVE_FUZZ_SECONDS:-0}"
fi
