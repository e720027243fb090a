#!/usr/bin/env node
// ONNX Runtime's side of difftest.py: runs each case folder's model.onnx on its input_K.pb files (graph-input
// order) and writes ort/output_K.bin (the raw elements) with ort/outputs.json (type and dims of each), or
// ort/error.txt when ORT refuses the model or the run.
//
//   node ort_run.js CASE_DIR...   (or a file of case folders, one a line, as @FILE)
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(process.env.ORT_NODE_PACKAGE ||
                    path.join(__dirname, '../ort_compare/node_modules/onnxruntime-node'));
const {decodeTensorProto} = require('../ort_compare/tensor_proto');

function rawBytes(tensor) {
  const data = tensor.data;
  if (tensor.type === 'bool') return Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)));
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

async function runCase(dir) {
  const out = path.join(dir, 'ort');
  fs.mkdirSync(out, {recursive: true});
  try {
    const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
      intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    });
    const feeds = {};
    session.inputNames.forEach((name, k) => {
      feeds[name] = decodeTensorProto(ort, fs.readFileSync(path.join(dir, `input_${k}.pb`)));
    });
    const results = await session.run(feeds);
    const meta = session.outputNames.map((name, k) => {
      const t = results[name];
      if (t.type === 'string') return {type: 'string', dims: t.dims, strings: t.data};
      fs.writeFileSync(path.join(out, `output_${k}.bin`), rawBytes(t));
      return {type: t.type, dims: t.dims};
    });
    fs.writeFileSync(path.join(out, 'outputs.json'), JSON.stringify(meta));
  } catch (e) {
    fs.writeFileSync(path.join(out, 'error.txt'), String(e && e.message || e));
  }
}

async function main() {
  let dirs = process.argv.slice(2);
  if (dirs.length === 1 && dirs[0].startsWith('@')) {
    dirs = fs.readFileSync(dirs[0].slice(1), 'utf8').split('\n').filter((d) => d);
  }
  for (const dir of dirs) await runCase(dir);
}

main().catch((e) => {
  console.error(`ort_run.js: ${e.message}`);
  process.exit(1);
});
