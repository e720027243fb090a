"""What the case generators share: the Case (one model and its inputs) and random shapes and values with
their edges drawn often."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

IR_FOR_OPSET = {1: 3, 2: 3, 6: 3, 9: 4, 10: 5, 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9,
                21: 10, 22: 10, 23: 11}
F32, F64, F16 = np.float32, np.float64, np.float16
INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


class Case:
    """One node: inputs are arrays (None: an omitted optional input); `consts` are the input positions that
    become initializers; outputs have the given numpy dtypes (default: the first input's)."""

    def __init__(self, family, op, inputs, attrs=None, out_types=None, opset=17, consts=(), rtol=1e-5,
                 atol=1e-6, domain="", nodes=None):
        self.family, self.op, self.inputs, self.attrs = family, op, inputs, attrs or {}
        first = next(a for a in inputs if a is not None) if any(a is not None for a in inputs) else None
        self.out_types = out_types or [first.dtype]
        self.opset, self.consts, self.rtol, self.atol, self.domain = opset, set(consts), rtol, atol, domain
        self.nodes = nodes

    def describe(self):
        shapes = [None if a is None else (str(a.dtype), list(a.shape)) for a in self.inputs]
        return f"{self.op} opset {self.opset} attrs={self.attrs} inputs={shapes} consts={sorted(self.consts)}"

    def model(self):
        names = ["" if a is None else f"x{k}" for k, a in enumerate(self.inputs)]
        outs = [f"y{k}" for k in range(len(self.out_types))]
        nodes = self.nodes(names, outs) if self.nodes else [
            helper.make_node(self.op, names, outs, domain=self.domain, **self.attrs)]
        graph_inputs, inits = [], []
        for k, a in enumerate(self.inputs):
            if a is None:
                continue
            if k in self.consts:
                inits.append(to_tensor(a, names[k]))
            else:
                graph_inputs.append(helper.make_tensor_value_info(names[k], elem_type(a.dtype), a.shape))
        graph_outputs = [helper.make_tensor_value_info(o, elem_type(t), None) for o, t in zip(outs, self.out_types)]
        graph = helper.make_graph(nodes, self.op, graph_inputs, graph_outputs, inits)
        opsets = [helper.make_opsetid("", self.opset)]
        if self.domain:
            opsets.append(helper.make_opsetid(self.domain, 1))
        model = helper.make_model(graph, opset_imports=opsets)
        model.ir_version = IR_FOR_OPSET[self.opset]
        return model

    def feeds(self):
        return [to_tensor(a, f"x{k}") for k, a in enumerate(self.inputs)
                if a is not None and k not in self.consts]


def elem_type(dtype):
    dtype = np.dtype(dtype)
    if dtype == object:
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(dtype) if hasattr(helper, "np_dtype_to_tensor_dtype") else \
        {v: k for k, v in __import__("onnx").mapping.TENSOR_TYPE_TO_NP_TYPE.items()
         if k not in (TensorProto.BFLOAT16,)}[dtype]


def to_tensor(a, name):
    return numpy_helper.from_array(np.asarray(a), name)


# ---- values ----

SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 1e-30, -1e30]


def floats(rng, shape, dtype=F32, scale=3.0, specials=0.1, low=None, high=None):
    if low is not None:
        a = rng.uniform(low, high, shape)
    else:
        a = rng.normal(0, scale, shape)
    if specials and a.size:
        mask = rng.random(shape) < specials
        a = np.where(mask, rng.choice(SPECIALS, shape), a)
    return a.astype(dtype)


def ints(rng, shape, dtype, edges=0.1, low=None, high=None):
    info = np.iinfo(dtype)
    lo = max(info.min, -100) if low is None else low
    hi = min(info.max, 100) if high is None else high
    a = rng.integers(lo, hi, shape, dtype=np.int64, endpoint=True).astype(dtype)
    if edges and a.size and low is None:
        mask = rng.random(shape) < edges
        a = np.where(mask, rng.choice(np.array([info.min, info.max, 0, 1], dtype=dtype), shape), a)
    return a


def rand_shape(rng, rank=None, max_dim=5, zero=0.05):
    rank = rng.integers(0, 5) if rank is None else rank
    return tuple(0 if rng.random() < zero else int(rng.integers(1, max_dim + 1)) for _ in range(rank))


def broadcast_pair(rng):
    out = rand_shape(rng, rng.integers(0, 5), zero=0.03)
    def derive():
        keep = rng.integers(0, len(out) + 1)
        return tuple(1 if rng.random() < 0.3 else d for d in out[len(out) - keep:])
    a, b = derive(), derive()
    return (out, b) if rng.random() < 0.3 else (a, b)


def axis_of(rng, rank):
    return int(rng.integers(-rank, rank)) if rank else 0


# ---- families ----
