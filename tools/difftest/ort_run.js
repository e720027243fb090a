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

// onnx.TensorProto element type -> [ORT type name, typed array].
const TYPES = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array], 4: ['uint16', Uint16Array],
  5: ['int16', Int16Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array], 8: ['string', null],
  9: ['bool', Uint8Array], 10: ['float16', Uint16Array], 11: ['float64', Float64Array], 12: ['uint32', Uint32Array],
  13: ['uint64', BigUint64Array],
};

// Enough protobuf for numpy_helper.from_array's tensors: dims (1), data_type (2), string_data (6), raw_data (9).
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
  const tensor = {dims: [], dataType: 0, raw: null, strings: []};
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
      if (field === 1) {
        while (pos < end) tensor.dims.push(Number(BigInt.asIntN(64, varint())));
      } else if (field === 9) {
        tensor.raw = buf.subarray(pos, end);
      } else if (field === 6) {
        tensor.strings.push(buf.subarray(pos, end).toString('utf8'));
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
  const [name, ArrayType] = TYPES[tensor.dataType] || [];
  if (!name) throw new Error(`input type ${tensor.dataType} is not supported`);
  if (name === 'string') return new ort.Tensor('string', tensor.strings, tensor.dims);
  const bytes = new Uint8Array(tensor.raw || []);  // a copy, aligned
  const data = new ArrayType(bytes.buffer, 0, bytes.byteLength / ArrayType.BYTES_PER_ELEMENT);
  return new ort.Tensor(name, data, tensor.dims);
}

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
      feeds[name] = decodeTensorProto(fs.readFileSync(path.join(dir, `input_${k}.pb`)));
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
