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

// onnx.TensorProto element type -> [ORT type name, typed array]. bool is read as bytes.
const TYPES = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array], 4: ['uint16', Uint16Array],
  5: ['int16', Int16Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array], 9: ['bool', Uint8Array],
  10: ['float16', Uint16Array], 11: ['float64', Float64Array], 12: ['uint32', Uint32Array],
  13: ['uint64', BigUint64Array],
};

// Just enough protobuf to read what make_inputs.py writes: dims (1), data_type (2), raw_data (9).
function decodeTensorProto(buf) {
  let pos = 0;
  const varint = () => {
    let result = 0n, shift = 0n, byte;
    do {
      byte = buf[pos++];
      result |= BigInt(byte & 0x7f) << shift;
      shift += 7n;
    } while (byte & 0x80);
    return result;
  };
  const tensor = {dims: [], dataType: 0, raw: null};
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >> 3, wire = key & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) tensor.dims.push(Number(BigInt.asIntN(64, v)));
      if (field === 2) tensor.dataType = Number(v);
    } else if (wire === 2) {
      const len = Number(varint());
      const end = pos + len;
      if (field === 1) {  // packed dims
        while (pos < end) tensor.dims.push(Number(BigInt.asIntN(64, varint())));
      } else if (field === 9) {
        tensor.raw = buf.subarray(pos, end);
      }
      pos = end;
    } else if (wire === 5) {
      pos += 4;
    } else if (wire === 1) {
      pos += 8;
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }
  const type = TYPES[tensor.dataType];
  if (!type || !tensor.raw) throw new Error(`tensor type ${tensor.dataType} without raw_data is not supported`);
  const [name, ArrayType] = type;
  // Copy into an aligned buffer: raw_data can start at any byte offset.
  const bytes = new Uint8Array(tensor.raw);
  const data = new ArrayType(bytes.buffer, 0, bytes.byteLength / ArrayType.BYTES_PER_ELEMENT);
  return new ort.Tensor(name === 'bool' ? 'bool' : name, name === 'bool' ? Uint8Array.from(data) : data,
                        tensor.dims);
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
    feeds[name] = decodeTensorProto(fs.readFileSync(path.join(args.dir, `input_${k}.pb`)));
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
