#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora: fuzz_seeds.py OUT_DIR [ONNX_TESTS_DIR].

Seeds are derived at run time from test data the repository already has, so none is committed:
  model/         model.onnx files of the ONNX backend tests (node/, simple/, pytorch-*) and the e2e models,
                 plus small graphs spelling what the load-time fusion passes rewrite (attention, LayerNorm,
                 Gelu, Conv + BatchNormalization + Add + Relu, MatMul + Add, Transpose/Reshape chains)
  tensor_proto/  the backend tests' input and output .pb files (onnx.TensorProto)
  image/         the encoded images of the backend tests' ImageDecoder inputs (BMP, JPEG, JPEG 2000, PNG,
                 PNM, TIFF, WebP)
  config/        the e2e and example config.pbtxt files, plus configs for the fuzz targets' "mixed" model
  infer_request/ ModelInferRequests for the "mixed" model (tests/fuzz/fuzz_models.h), raw and typed payloads
  http/          HTTP requests for every route of server/protocol/http.cc, and malformed ones
Each corpus keeps files of at most MAX_BYTES so a libFuzzer run starts quickly.
"""
import glob
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_BYTES = 64 * 1024
MAX_FILES = 1500  # per corpus: enough variety, and libFuzzer's first pass over them stays short


def put(out, target, data):
    if len(data) > MAX_BYTES:
        return False
    path = os.path.join(out, target)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    return True


def copy_files(out, target, pattern_list):
    count = 0
    for pattern in pattern_list:
        for name in sorted(glob.glob(pattern, recursive=True)):
            if count >= MAX_FILES:
                return count
            with open(name, "rb") as f:
                count += put(out, target, f.read())
    return count


def e2e_repository(tmp):
    repo = os.path.join(tmp, "e2e_models")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests/e2e/make_models.py"), repo], check=True,
                   stdout=subprocess.DEVNULL)
    return repo


MIXED_CONFIGS = [
    b"",
    b'name: "mixed"\nmax_batch_size: 8\ndynamic_batching { max_queue_delay_microseconds: 100 }\n',
    b'name: "mixed"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 0\n'
    b'input [ { name: "x" data_type: TYPE_FP32 dims: [ -1, 4 ] }, { name: "s" data_type: TYPE_STRING dims: [ -1 ] },\n'
    b'  { name: "i" data_type: TYPE_INT64 dims: [ -1, 3 ] }, { name: "h" data_type: TYPE_FP16 dims: [ -1, 2 ] },\n'
    b'  { name: "b" data_type: TYPE_BOOL dims: [ -1, 1 ] } ]\n'
    b'output [ { name: "x_out" data_type: TYPE_FP32 dims: [ -1, 4 ] } ]\n'
    b'instance_group [ { count: 2 kind: KIND_CPU } ]\n'
    b'parameters { key: "threads" value { string_value: "2" } }\n'
    b'parameters { key: "execution_timeout_ms" value { string_value: "1000" } }\n',
    b'max_batch_size: 4\ndynamic_batching { preferred_batch_size: [ 2, 4 ] max_queue_delay_microseconds: 500\n'
    b'  default_queue_policy { max_queue_size: 3 timeout_action: REJECT default_timeout_microseconds: 100\n'
    b'  allow_timeout_override: true } }\nversion_policy { latest { num_versions: 2 } }\n',
]


def infer_requests(tmp, out):
    """Requests for the mixed model; the first byte picks its unbatched (0) or batched (1) version."""
    subprocess.run(["protoc", "-I", os.path.join(ROOT, "proto"), "--python_out", tmp,
                    os.path.join(ROOT, "proto/grpc_service.proto"), os.path.join(ROOT, "proto/model_config.proto")],
                   check=True)
    sys.path.insert(0, tmp)
    import grpc_service_pb2 as pb  # noqa: E402  (generated just above)

    def request(n, raw):
        r = pb.ModelInferRequest(model_name="mixed", id="seed")
        specs = [("x", "FP32", [n, 4]), ("s", "BYTES", [n]), ("i", "INT64", [n, 3]), ("h", "FP16", [n, 2]),
                 ("b", "BOOL", [n, 1])]
        for name, dtype, shape in specs:
            t = r.inputs.add(name=name, datatype=dtype, shape=shape)
            count = 1
            for d in shape:
                count *= d
            if raw:
                if dtype == "FP32":
                    data = struct.pack("<%df" % count, *[float(k) for k in range(count)])
                elif dtype == "BYTES":
                    data = b"".join(struct.pack("<I", 2) + b"ab" for _ in range(count))
                elif dtype == "INT64":
                    data = struct.pack("<%dq" % count, *range(count))
                elif dtype == "FP16":
                    data = b"\x00\x3c" * count
                else:
                    data = b"\x01" * count
                r.raw_input_contents.append(data)
            elif dtype == "FP32":
                t.contents.fp32_contents.extend(float(k) for k in range(count))
            elif dtype == "BYTES":
                t.contents.bytes_contents.extend([b"ab"] * count)
            elif dtype == "INT64":
                t.contents.int64_contents.extend(range(count))
            elif dtype == "BOOL":
                t.contents.bool_contents.extend([True] * count)
            # FP16 has no typed field: that seed is an error case on purpose
        r.outputs.add(name="x_out")
        return r.SerializeToString()

    for version in (b"\x00", b"\x01"):
        for n in (0, 1, 3):
            put(out, "infer_request", version + request(n, True))
            put(out, "infer_request", version + request(n, False))


HTTP_REQUESTS = [
    b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v2/health/ready HTTP/1.0\r\n\r\n",
    b"GET /v2/models/add/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    b"GET /v2/models/add/versions/1/ready HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v2/models/add%2Fx/versions//ready?x=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /v2/health/live HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd",
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n",
    b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n",
    b"GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n",
]


def rest_request(method, path, body=b"", headers=b""):
    return (b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n%s\r\n" % (method, path, len(body), headers)) + body


# The REST protocol against the http target's "mixed" model (tests/fuzz/fuzz_models.h): x FP32 [N,4],
# s BYTES [N], i INT64 [N,3], h FP16 [N,2], b BOOL [N,1].
_MIXED_JSON = (b'{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]},'
               b'{"name":"s","shape":[1],"datatype":"BYTES","data":["ab"]},'
               b'{"name":"i","shape":[1,3],"datatype":"INT64","data":[[1,2,3]]},'
               b'{"name":"h","shape":[1,2],"datatype":"FP16","parameters":{"binary_data_size":4}},'
               b'{"name":"b","shape":[1,1],"datatype":"BOOL","data":[true]}],'
               b'"outputs":[{"name":"x_out","parameters":{"binary_data":true}},{"name":"s_out"}]}')
HTTP_REQUESTS += [
    rest_request(b"GET", b"/v2"),
    rest_request(b"GET", b"/v2/models/mixed"),
    rest_request(b"GET", b"/v2/models/mixed/versions/1/config"),
    rest_request(b"GET", b"/v2/models/mixed/stats"),
    rest_request(b"POST", b"/v2/models/mixed/infer", _MIXED_JSON + b"\x00\x3c\x00\x40",
                 b"Inference-Header-Content-Length: %d\r\n" % len(_MIXED_JSON)),
    rest_request(b"POST", b"/v2/models/mixed/versions/1/infer",
                 b'{"inputs":[{"name":"x","shape":[2,4],"datatype":"FP32","data":[1,2,3,4,5,6,7,8]}]}'),
    rest_request(b"POST", b"/v2/repository/index", b"{}"),
    rest_request(b"POST", b"/v2/repository/models/mixed/unload", b"{}"),
    rest_request(b"POST", b"/v2/repository/models/mixed/load", b"{}"),
]


def encoded_images(tests, out):
    """The raw bytes of node/test_image_decoder_*'s input tensors."""
    import onnx  # only here: the other corpora need no onnx package
    from onnx import numpy_helper
    count = 0
    for name in sorted(glob.glob(os.path.join(tests, "node/test_image_decoder_*/test_data_set_*/input_0.pb"))):
        tensor = onnx.TensorProto()
        with open(name, "rb") as f:
            tensor.ParseFromString(f.read())
        count += put(out, "image", numpy_helper.to_array(tensor).tobytes())
    return count


def fusion_patterns(out):
    """Graphs in the spellings runtime/passes/ rewrites, small enough for the model target to run: the
    backend tests have one op per graph, so without these the fuzzer rarely reaches a fused kernel."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes, inputs, outputs, inits=()):
        graph = helper.make_graph(nodes, "fusion", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                                  [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                                  [numpy_helper.from_array(np.asarray(v, dtype=np.float32), n) for n, v in inits])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()

    rng = np.random.default_rng(0)
    heads = [helper.make_node("Reshape", [x, "split"], [x + "h"]) for x in "qkv"]
    attention = model(heads + [
        helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", "scale"], ["scaled"]),
        helper.make_node("Add", ["scaled", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ot", "merge"], ["y"])],
        [("q", [1, 8, 16]), ("k", [1, 8, 16]), ("v", [1, 8, 16]), ("mask", [1, 1, 1, 8])], ["y"],
        [("split", np.array([1, 8, 2, 8], np.int64)), ("merge", np.array([1, 8, 16], np.int64)), ("scale", 2.828427)])
    layer_norm_gelu = model([
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["x", "mean"], ["centered"]),
        helper.make_node("Pow", ["centered", "two"], ["squared"]),
        helper.make_node("ReduceMean", ["squared"], ["variance"], axes=[-1]),
        helper.make_node("Add", ["variance", "eps"], ["shifted"]),
        helper.make_node("Sqrt", ["shifted"], ["deviation"]),
        helper.make_node("Div", ["centered", "deviation"], ["normed"]),
        helper.make_node("Mul", ["normed", "gamma"], ["scaled"]),
        helper.make_node("Add", ["scaled", "beta"], ["ln"]),
        helper.make_node("Div", ["ln", "sqrt2"], ["ln_over"]),
        helper.make_node("Erf", ["ln_over"], ["erf"]),
        helper.make_node("Add", ["erf", "one"], ["erf1"]),
        helper.make_node("Mul", ["ln", "erf1"], ["prod"]),
        helper.make_node("Mul", ["prod", "half"], ["y"])],
        [("x", [2, 4, 16])], ["y"],
        [("two", 2.0), ("eps", 1e-5), ("gamma", rng.standard_normal(16)), ("beta", rng.standard_normal(16)),
         ("sqrt2", 1.4142135), ("one", 1.0), ("half", 0.5)])
    conv_bn_add_relu_gemm = model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "var"], ["bn"]),
        helper.make_node("Add", ["bn", "x"], ["res"]),
        helper.make_node("Relu", ["res"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("MatMul", ["f", "fc"], ["mm"]),
        helper.make_node("Add", ["mm", "fcb"], ["y"])],
        [("x", [1, 4, 6, 6])], ["y"],
        [("w", rng.standard_normal((4, 4, 3, 3))), ("b", rng.standard_normal(4)), ("s", rng.random(4) + 0.5),
         ("bb", rng.standard_normal(4)), ("m", rng.standard_normal(4)), ("var", rng.random(4) + 0.5),
         ("fc", rng.standard_normal((144, 10))), ("fcb", rng.standard_normal(10))])
    transpose_reshape = model([
        helper.make_node("Transpose", ["x"], ["t1"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["t1"], ["t2"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["t2", "s1"], ["r1"]),
        helper.make_node("Reshape", ["r1", "s2"], ["r2"]),
        helper.make_node("Transpose", ["r2"], ["t3"], perm=[1, 0, 2]),
        helper.make_node("Squeeze", ["t3", "axes"], ["y"])],
        [("x", [2, 3, 1, 4])], ["y"],
        [("s1", np.array([6, 4], np.int64)), ("s2", np.array([1, 6, 4], np.int64)), ("axes", np.array([0], np.int64))])
    return sum(put(out, "model", m) for m in (attention, layer_norm_gelu, conv_bn_add_relu_gemm, transpose_reshape))


def main():
    out = sys.argv[1]
    tests = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "../shared/onnx-tests/data")
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        repo = e2e_repository(tmp)
        counts = {}
        counts["model"] = copy_files(out, "model", [
            os.path.join(repo, "**/*.onnx"), os.path.join(tests, "simple/*/model.onnx"),
            os.path.join(tests, "node/*/model.onnx"), os.path.join(tests, "pytorch-operator/*/model.onnx")])
        counts["model"] += fusion_patterns(out)
        counts["tensor_proto"] = copy_files(out, "tensor_proto", [
            os.path.join(tests, "simple/*/test_data_set_0/*.pb"), os.path.join(tests, "node/*/test_data_set_0/*.pb")])
        counts["image"] = encoded_images(tests, out)
        counts["config"] = copy_files(out, "config", [os.path.join(repo, "*/config.pbtxt"),
                                                      os.path.join(ROOT, "examples/**/config.pbtxt")])
        for config in MIXED_CONFIGS:
            counts["config"] += put(out, "config", config)
        infer_requests(tmp, out)
        for req in HTTP_REQUESTS:
            put(out, "http", req)
    for target in sorted(os.listdir(out)):
        print("%-14s %5d seeds" % (target, len(os.listdir(os.path.join(out, target)))))


if __name__ == "__main__":
    main()
