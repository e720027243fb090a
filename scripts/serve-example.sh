#!/usr/bin/env bash
# Builds onnxserve (installing dependencies first unless ONNXSERVE_SKIP_DEPS=1) and serves the bundled
# example model repository: REST and HTTP health on :8000, gRPC on :8001, metrics on :8002.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${ONNXSERVE_SKIP_DEPS:-0}" != 1 ]; then
  scripts/install-deps.sh
fi
build_dir=${ONNXSERVE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$(nproc)" --target onnxserve
exec "$build_dir/cli/onnxserve" serve --model-repository examples/models "$@"
