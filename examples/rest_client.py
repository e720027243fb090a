#!/usr/bin/python3
"""Classifies drawn 8x8 digits with the "digits" model over onnxserve's KServe v2 REST API.

Python's standard library only (urllib, json, struct): the same requests work with curl or Triton's
tritonclient.http. examples/client.py does the same over gRPC.

    onnxserve serve --model-repository examples/models &
    /usr/bin/python3 examples/rest_client.py --url http://127.0.0.1:8000
    /usr/bin/python3 examples/rest_client.py --binary     # Triton's binary tensor data extension

Sends the digits as one POST /v2/models/digits/infer of shape [n, 64]: as JSON data, or with --binary as
little-endian FP32 after the JSON header (Inference-Header-Content-Length), asking for the output as binary
data too. Prints the predicted digit beside the drawn one. Exit status: 0 when the server answered, 1 else.
"""
import argparse
import json
import struct
import sys
import urllib.error
import urllib.request

# Three of scikit-learn's digits (load_digits, whose images the model learned from) as 8x8 drawings: each
# character is a pixel's ink, "." none, "1" to "9" and "a" to "g" one to sixteen sixteenths. Crisp drawings
# of our own were read as other digits: the model knows the blurred strokes of those images.
DRAWINGS = {
    0: ["..5d91..", "..dfaf5.", ".3f2.b8.", ".4c..88.", ".58..98.", ".4b.1c7.", ".2e5ac..", "..6da..."],
    1: ["...cd5..", "...bg9..", "..3fg6..", ".7fgg2..", "..1gg3..", "..1gg6..", "..1gg6..", "...bga.."],
    7: ["..78dgf1", "..774bc.", "....8d1.", ".488ff6.", ".2bff4..", "...g5...", "..9f1...", "..d5...."],
}
INK_LEVELS = ".123456789abcdefg"
HEADER_LENGTH = "Inference-Header-Content-Length"


def pixels_of(drawing):
    return [INK_LEVELS.index(c) / 16.0 for row in drawing for c in row]


def json_request(rows):
    body = {"inputs": [{"name": "pixels", "datatype": "FP32", "shape": [len(rows), 64], "data": rows}],
            "outputs": [{"name": "probabilities"}]}
    return json.dumps(body).encode(), {"Content-Type": "application/json"}


def binary_request(rows):
    raw = struct.pack("<%df" % (64 * len(rows)), *[p for row in rows for p in row])
    header = json.dumps({
        "inputs": [{"name": "pixels", "datatype": "FP32", "shape": [len(rows), 64],
                    "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": "probabilities", "parameters": {"binary_data": True}}]}).encode()
    return header + raw, {"Content-Type": "application/octet-stream", HEADER_LENGTH: str(len(header))}


def probabilities_of(body, headers):
    """The [n][10] probabilities of a response, JSON or binary."""
    length = headers.get(HEADER_LENGTH)
    header = json.loads(body if length is None else body[:int(length)])
    (output,) = header["outputs"]
    n, classes = output["shape"]
    if length is None:
        flat = output["data"]
    else:
        flat = struct.unpack("<%df" % (n * classes), body[int(length):])
    return [flat[i * classes:(i + 1) * classes] for i in range(n)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="onnxserve HTTP address")
    parser.add_argument("--model", default="digits")
    parser.add_argument("--binary", action="store_true", help="send and receive tensors as binary data")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the answer")
    args = parser.parse_args()

    labels = list(DRAWINGS)
    rows = [pixels_of(DRAWINGS[label]) for label in labels]
    body, headers = binary_request(rows) if args.binary else json_request(rows)
    request = urllib.request.Request(f"{args.url}/v2/models/{args.model}/infer", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=args.timeout) as response:
            probabilities = probabilities_of(response.read(), response.headers)
    except urllib.error.HTTPError as error:
        print(f"rest_client.py: HTTP {error.code}: {error.read().decode(errors='replace')}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as error:
        print(f"rest_client.py: no answer from {args.url}: {error}", file=sys.stderr)
        return 1

    print("drawn  predicted  probability")
    for label, row in zip(labels, probabilities):
        guess = max(range(len(row)), key=row.__getitem__)
        print(f"{label:5d}  {guess:9d}  {row[guess]:11.3f}{'' if guess == label else '  <- wrong'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
