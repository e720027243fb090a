#!/usr/bin/env bash
# End-to-end test of the container image with podman (no Docker engine needed):
#   1. makes the local debian:bookworm-slim base image when missing (../shared/containers/make-base-image.sh)
#   2. builds the image from the Dockerfile and reports its size
#   3. runs it, waits for its HEALTHCHECK to pass, checks it runs as non-root
#   4. sends real ModelInfer requests from the host (examples/client.py) and scrapes /metrics
#   5. runs Debian's Prometheus natively against the container and checks it scraped the target
# and removes everything it started. Needs root. Ports 8000-8002 (and 19090 for Prometheus) must be free.
# Usage: deploy/test-image.sh [BUILD_DIR]   (BUILD_DIR holds cli/onnxserve for the probe; default build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-$ROOT/build}
W=${ONNXSERVE_CONTAINERS_DIR:-/tmp/containers}
IMAGE=onnxserve:test
NAME=onnxserve-image-test-$$
PROM_DIR=$(mktemp -d)
PROM_PID=

log() { printf '[test-image] %s\n' "$*"; }
cleanup() {
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null || true
  podman rm -f "$NAME" >/dev/null 2>&1 || true
  rm -rf "$PROM_DIR"
}
trap cleanup EXIT

for port in 8000 8001 8002 19090; do
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    log "port $port is in use: stop what listens there first"; exit 1
  fi
done

if [ ! -f "$W/env.sh" ]; then
  base_script="$ROOT/../shared/containers/make-base-image.sh"
  [ -x "$base_script" ] || { log "no $W/env.sh and no $base_script to make the base image"; exit 1; }
  log "making the base image (about a minute)"
  W=$W SD=overlay "$base_script"
fi
# shellcheck disable=SC1091
. "$W/env.sh"
if ! podman image exists debian:bookworm-slim; then
  log "base image missing: re-making it"
  W=$W SD=overlay "$ROOT/../shared/containers/make-base-image.sh"
fi

log "building $IMAGE"
start=$(date +%s)
podman build --pull=never --network host --format docker -t "$IMAGE" "$ROOT"
log "built in $(( $(date +%s) - start )) s; image size: $(podman image inspect "$IMAGE" --format '{{.Size}}' \
  | awk '{printf "%.1f MiB", $1/1048576}')"

log "running $NAME"
podman run -d --init --network host --name "$NAME" "$IMAGE" >/dev/null
for i in $(seq 1 60); do
  if podman healthcheck run "$NAME" >/dev/null 2>&1; then break; fi
  [ "$i" = 60 ] && { podman logs "$NAME" | tail -20; log "never turned healthy"; exit 1; }
  sleep 1
done
log "healthy after ${i} s"
uid=$(podman exec "$NAME" id -u)
[ "$uid" != 0 ] || { log "runs as root"; exit 1; }
log "runs as uid $uid"

log "ModelInfer from the host"
/usr/bin/python3 "$ROOT/examples/client.py" --addr 127.0.0.1:8001 --count 8
log "REST inference from the host"
/usr/bin/python3 "$ROOT/examples/rest_client.py" --url http://127.0.0.1:8000 --binary

metrics=$(/usr/bin/python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8002/metrics").read().decode())')
grep -q '^onnxserve_requests_total{.*model="digits"' <<<"$metrics" || { log "no request metrics for digits"; exit 1; }
log "metrics scraped: $(grep -c '^onnxserve_' <<<"$metrics") onnxserve series"

if ! command -v prometheus >/dev/null; then
  log "installing Debian's prometheus"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
cat > "$PROM_DIR/prometheus.yml" <<PROM
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: onnxserve
    metrics_path: /metrics
    static_configs: [{targets: ["127.0.0.1:8002"]}]
PROM
prometheus --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/data" \
  --web.listen-address=127.0.0.1:19090 >"$PROM_DIR/log" 2>&1 &
PROM_PID=$!
query='http://127.0.0.1:19090/api/v1/query?query=sum(onnxserve_requests_total%7Bmodel%3D%22digits%22%7D)'
for i in $(seq 1 30); do
  value=$(/usr/bin/python3 -c "import json,urllib.request
try:
  r=json.load(urllib.request.urlopen('$query'))['data']['result']; print(r[0]['value'][1] if r else '')
except Exception: print('')")
  [ -n "$value" ] && break
  sleep 1
done
[ -n "$value" ] || { tail -5 "$PROM_DIR/log"; log "Prometheus did not scrape the container"; exit 1; }
log "Prometheus scraped the container: sum(onnxserve_requests_total{model=\"digits\"}) = $value"
log "OK"
