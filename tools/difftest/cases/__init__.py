"""Random single-node (and small fused) models per operator family for difftest.py. Each generator takes a
numpy Generator and yields Case objects; shapes, attributes and values are random but valid."""
from . import fusion, math_ops, nn_ops, tensor_ops

FAMILIES = {
    "unary": math_ops.unary,
    "binary": math_ops.binary,
    "cast": math_ops.cast,
    "reduce": math_ops.reduce,
    "softmax": math_ops.softmax,
    "gemm": math_ops.gemm,
    "edges": math_ops.edges,
    "conv": nn_ops.conv,
    "conv_transpose": nn_ops.conv_transpose,
    "pool": nn_ops.pool,
    "resize": nn_ops.resize,
    "normalization": nn_ops.normalization,
    "rnn": nn_ops.rnn,
    "detection": nn_ops.detection,
    "attention": nn_ops.attention,
    "big": nn_ops.big,
    "other_nn": nn_ops.other_nn,
    "gather_scatter": tensor_ops.gather_scatter,
    "shape_ops": tensor_ops.shape_ops,
    "layout": tensor_ops.layout,
    "quantization": tensor_ops.quantization,
    "fusion": fusion.fusion,
}
