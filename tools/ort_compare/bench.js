#!/usr/bin/env node
// ONNX Runtime's side of `onnxserve bench`: the same inputs (an --inputs-dir of input_K.pb TensorProto
// files, see make_inputs.py), warmup, iterations and percentiles, and the same JSON summary on the last
// stdout line, plus load_ms: how long InferenceSession.create took (read, optimize, prepack the model).
//
//   node bench.js MODEL.onnx --inputs-dir DIR [--threads 1] [--iterations 100] [--warmup 10]
'use strict';
const fs = require('fs');
const path = require('path');
// ORT_NODE_PACKAGE picks another copy of the package, e.g. ort_avx2.py's AVX2-only one.
const ort = require(process.env.ORT_NODE_PACKAGE || 'onnxruntime-node');
const {decodeTensorProto} = require('./tensor_proto');

function parseArgs(argv) {
  const args = {threads: 1, iterations: 100, warmup: 10, 'inputs-dir': ''};
  const positional = [];
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i].startsWith('--')) {
      const [key, inline] = argv[i].slice(2).split('=', 2);
      if (!(key in args)) throw new Error(`unknown flag --${key}`);
      args[key] = inline !== undefined ? inline : argv[++i];
    } else {
      positional.push(argv[i]);
    }
  }
  if (positional.length !== 1 || !args['inputs-dir']) {
    throw new Error('usage: node bench.js MODEL.onnx --inputs-dir DIR [--threads N] [--iterations N] [--warmup N]');
  }
  return {model: positional[0], dir: args['inputs-dir'], threads: +args.threads, iterations: +args.iterations,
          warmup: +args.warmup};
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(p / 100 * sorted.length))];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const loadStart = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(args.model, {
    intraOpNumThreads: args.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const loadMs = Number(process.hrtime.bigint() - loadStart) / 1e6;
  const feeds = {};
  session.inputNames.forEach((name, k) => {
    feeds[name] = decodeTensorProto(ort, fs.readFileSync(path.join(args.dir, `input_${k}.pb`)));
  });
  for (let i = 0; i < args.warmup; ++i) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < args.iterations; ++i) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  ms.sort((a, b) => a - b);
  const first = feeds[session.inputNames[0]];
  const items = first && first.dims.length > 0 ? first.dims[0] : 1;
  const f = (v) => +v.toFixed(4);
  console.log(JSON.stringify({
    model: path.basename(args.model), runtime: `onnxruntime-node ${require('onnxruntime-node/package.json').version}`,
    threads: args.threads, batch: items, iterations: args.iterations, warmup: args.warmup,
    p50_ms: f(percentile(ms, 50)), p90_ms: f(percentile(ms, 90)), p99_ms: f(percentile(ms, 99)), mean_ms: f(mean),
    min_ms: f(ms[0]), max_ms: f(ms[ms.length - 1]), items_per_second: +(items * 1000 / mean).toFixed(2),
    load_ms: f(loadMs),
  }));
}

main().catch((e) => {
  console.error(`bench.js: ${e.message}`);
  process.exit(1);
});
