# onnxserve image: build stage compiles and unit-tests; runtime stage holds the binary, its shared
# libraries and the example model repository, and runs as a non-root user.
#   podman build --format docker -t onnxserve .     (or docker build -t onnxserve .)
#   docker run -p 8000:8000 -p 8001:8001 -p 8002:8002 onnxserve     (REST, gRPC, metrics: Triton's ports)
FROM debian:bookworm-slim AS build
WORKDIR /src
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DONNXSERVE_BUILD_BENCHMARKS=OFF \
      -DONNXSERVE_ONNX_TESTS_DIR=/nonexistent \
 && cmake --build /build \
 && ctest --test-dir /build -L unit --output-on-failure -j "$(nproc)" \
 && strip /build/cli/onnxserve
# The runtime stage installs exactly the Debian packages that own the binary's shared libraries.
RUN ldd /build/cli/onnxserve | awk '/=> \//{print $3}' | xargs -r realpath \
      | xargs -r -n1 sh -c 'dpkg -S "$0" 2>/dev/null || dpkg -S "${0#/usr}" 2>/dev/null' \
      | cut -d: -f1 | sort -u | grep -v -E '^(libc6|libgcc-s1|libstdc\+\+6)$' > /build/runtime-packages.txt \
 && cat /build/runtime-packages.txt

FROM debian:bookworm-slim
COPY --from=build /build/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends $(cat /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin onnxserve
COPY --from=build /build/cli/onnxserve /usr/local/bin/onnxserve
COPY examples/models /models
USER onnxserve
EXPOSE 8000 8001 8002
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["onnxserve", "probe", "--addr", "127.0.0.1:8001"]
ENTRYPOINT ["onnxserve", "serve", "--model-repository", "/models"]
CMD ["--grpc-port", "8001", "--http-port", "8000", "--metrics-port", "8002"]
