#!/usr/bin/env bash
# Installs every build, test and tooling dependency of onnxserve from Debian 12's packages.
# Used by the README, .ci/run and the Dockerfile's build stage; run as root.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libonnx-dev libopenblas-dev libre2-dev prometheus-cpp-dev libmicrohttpd-dev libgnutls28-dev libcurl4-openssl-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libjpeg62-turbo-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev  # ImageDecoder
  libdnnl-dev  # ResNet-style 3x3 and 7x7 convolutions on oneDNN (runtime/math/dnnl_conv.h; ONNXSERVE_DNNL)
  ocl-icd-opencl-dev  # dnnl's CMake config finds OpenCL (its GPU runtime); libdnnl-dev only recommends it
  python3 python3-onnx python3-numpy python3-sklearn python3-grpcio python3-grpc-tools python3-yaml
  openssl curl  # tls_test.py: certificates made at test time, HTTPS requests
  docker-compose
  clang-14 libclang-rt-14-dev llvm-14  # scripts/sanitize.sh and scripts/fuzz.sh: ASan, UBSan, libFuzzer, symbolizer
)

$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}"
