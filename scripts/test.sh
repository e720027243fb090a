#!/usr/bin/env bash
# Builds onnxserve and runs its whole test suite: unit, conformance (ONNX backend tests from
# ../shared/onnx-tests when present) and server end-to-end tests. Installs dependencies first unless
# ONNXSERVE_SKIP_DEPS=1. Usage: scripts/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${ONNXSERVE_SKIP_DEPS:-0}" != 1 ]; then
  scripts/install-deps.sh
fi
build_dir=${ONNXSERVE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" "$@"
