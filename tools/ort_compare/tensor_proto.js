// Reads an onnx.TensorProto file into an ORT tensor: just enough protobuf for what numpy_helper.from_array
// writes (dims (1), data_type (2), string_data (6), raw_data (9)). Shared by bench.js and tools/difftest.
'use strict';

// onnx.TensorProto element type -> [ORT type name, typed array]. bool is read as bytes.
const TYPES = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array], 4: ['uint16', Uint16Array],
  5: ['int16', Int16Array], 6: ['int32', Int32Array], 7: ['int64', BigInt64Array], 8: ['string', null],
  9: ['bool', Uint8Array], 10: ['float16', Uint16Array], 11: ['float64', Float64Array], 12: ['uint32', Uint32Array],
  13: ['uint64', BigUint64Array],
};

function decodeTensorProto(ort, buf) {
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
      if (field === 1) {  // packed dims
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
  if (name === 'string') return new ort.Tensor('string', tensor.strings, tensor.dims);
  if (!name || (!tensor.raw && tensor.dims.reduce((a, b) => a * b, 1) !== 0)) {
    throw new Error(`tensor type ${tensor.dataType} without raw_data is not supported`);
  }
  // Copy into an aligned buffer: raw_data can start at any byte offset.
  const bytes = new Uint8Array(tensor.raw || []);
  const data = new ArrayType(bytes.buffer, 0, bytes.byteLength / ArrayType.BYTES_PER_ELEMENT);
  return new ort.Tensor(name, data, tensor.dims);
}

module.exports = {decodeTensorProto};
