#!/bin/sh
# Benchmarks one model with `onnxserve bench` and with ONNX Runtime (bench.js) on the very same inputs and
# prints both JSON summaries and the p50 ratio onnxserve/ORT (below 1: onnxserve is faster).
#
#   tools/ort_compare/compare.sh MODEL.onnx [threads=1] [batch=1]
# Env: ONNXSERVE (the binary, default build/cli/onnxserve), ITERATIONS (100),
#      WARMUP (10), PYTHON (/usr/bin/python3). Needs `npm install` in tools/ort_compare once.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
model=${1:?usage: compare.sh MODEL.onnx [threads] [batch]}
threads=${2:-1}
batch=${3:-1}
python=${PYTHON:-/usr/bin/python3}
iterations=${ITERATIONS:-100}
warmup=${WARMUP:-10}
onnxserve=${ONNXSERVE:-}
if [ -z "$onnxserve" ]; then
  for candidate in "$root/build/cli/onnxserve"; do
    if [ -x "$candidate" ]; then onnxserve=$candidate; break; fi
  done
fi
[ -x "$onnxserve" ] || { echo "compare.sh: no onnxserve binary; set ONNXSERVE" >&2; exit 1; }

inputs=$(mktemp -d)
trap 'rm -rf "$inputs"' EXIT
"$python" "$here/make_inputs.py" "$model" "$inputs" --batch "$batch"

ours=$("$onnxserve" bench "$model" --inputs-dir "$inputs" --threads "$threads" --iterations "$iterations" \
       --warmup "$warmup" | tail -n 1)
theirs=$(node "$here/bench.js" "$model" --inputs-dir "$inputs" --threads "$threads" --iterations "$iterations" \
         --warmup "$warmup" | tail -n 1)
echo "onnxserve: $ours"
echo "onnxruntime: $theirs"
"$python" - "$ours" "$theirs" <<'PY'
import json, sys
ours, theirs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"p50 ratio onnxserve/ORT: {ours['p50_ms'] / theirs['p50_ms']:.3f} "
      f"({ours['p50_ms']:.3f} ms vs {theirs['p50_ms']:.3f} ms)")
PY
