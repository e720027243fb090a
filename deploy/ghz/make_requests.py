#!/usr/bin/python3
"""Writes ghz request files for the example `digits` model from scikit-learn's bundled 8x8 digits.

Each file is a KServe v2 ModelInferRequest in protobuf JSON form: the pixels travel as base64
`raw_input_contents` (little-endian float32, scaled to [0, 1] like the training script does).
Run with Debian's python3:  /usr/bin/python3 deploy/ghz/make_requests.py
"""
import base64
import json
import os

import numpy as np
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))


def request(images, request_id):
    pixels = (images.astype(np.float32) / 16.0).astype("<f4")
    return {
        "model_name": "digits",
        "id": request_id,
        "inputs": [{"name": "pixels", "datatype": "FP32", "shape": list(pixels.shape)}],
        "outputs": [{"name": "probabilities"}],
        "raw_input_contents": [base64.b64encode(pixels.tobytes()).decode("ascii")],
    }


def main():
    digits = load_digits()
    files = {
        "digits_request.json": request(digits.data[:1], "digit-0"),
        "digits_batch8_request.json": request(digits.data[:8], "digits-0-7"),
    }
    for name, body in files.items():
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(body, f, indent=2)
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
