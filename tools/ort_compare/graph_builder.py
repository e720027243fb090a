"""What the model generators share: a builder that names nodes and float initializers as it adds them, and
the checked save of a one-input, one-output float graph. Imported by make_mobilenet.py, make_kws.py and
make_lstm.py (run from this folder or by path, so Python finds it beside them)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    """Appends nodes and float32 initializers, each named by its kind and a running count (w1, conv2...)."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, array, prefix):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=np.float32), name))
        return name

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out


def save_model(out, name, nodes, inits, inputs, outputs, opset, ir_version):
    """Writes the graph to `out` after onnx.checker; inputs and outputs map a name to its FP32 dims."""
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n, dims in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n, dims in outputs.items()], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    onnx.checker.check_model(model)
    onnx.save(model, out)
