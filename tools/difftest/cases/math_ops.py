"""Elementwise, cast, reduction, softmax and product operators, and value edges."""
import itertools

import numpy as np
from onnx import TensorProto, helper

from .common import Case, F16, F32, F64, INTS, axis_of, broadcast_pair, elem_type, floats, ints, rand_shape


UNARY_FLOAT = ["Abs", "Neg", "Floor", "Ceil", "Round", "Sqrt", "Exp", "Log", "Reciprocal", "Sigmoid", "Tanh",
               "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
               "Sign", "Softplus", "Softsign", "Relu", "Selu", "Elu", "LeakyRelu", "HardSigmoid", "HardSwish",
               "IsNaN", "IsInf", "Celu", "ThresholdedRelu", "Shrink", "Mish", "Gelu"]


def unary(rng):
    for op, _ in itertools.product(UNARY_FLOAT, range(6)):
        dtype = rng.choice([F32, F32, F64, F16]) if op not in ("Celu",) else F32
        shape = rand_shape(rng)
        x = floats(rng, shape, dtype, scale=rng.choice([0.5, 3.0, 30.0]), specials=0.15)
        attrs, opset = {}, 17
        if op in ("Elu", "LeakyRelu", "Celu", "ThresholdedRelu") and rng.random() < 0.7:
            attrs["alpha"] = float(rng.choice([0.1, 0.5, 2.0]))
        if op == "HardSigmoid" and rng.random() < 0.7:
            attrs.update(alpha=float(rng.choice([0.1, 0.3])), beta=float(rng.choice([0.2, 0.6])))
        if op == "Shrink" and rng.random() < 0.8:
            attrs.update(lambd=float(rng.choice([0.0, 0.5, 1.5])), bias=float(rng.choice([0.0, 0.5, 2.0])))
        if op == "IsInf":
            attrs.update(detect_positive=int(rng.integers(0, 2)), detect_negative=int(rng.integers(0, 2)))
        if op == "Mish":
            opset = 18
        if op == "Gelu":
            opset = 20
            if rng.random() < 0.5:
                attrs["approximate"] = str(rng.choice(["none", "tanh"]))
        out = [np.bool_] if op in ("IsNaN", "IsInf") else None
        tol = 2e-3 if dtype == F16 else 1e-5
        yield Case("unary", op, [x], attrs, out_types=out, opset=opset, rtol=tol, atol=tol * 1e-1)
    for op, dtype in itertools.product(["Abs", "Neg", "Sign", "Relu"], [np.int8, np.int32, np.int64, np.uint8]):
        if op == "Neg" and dtype == np.uint8:
            continue
        if op == "Relu" and dtype not in (np.int8, np.int32, np.int64):
            continue
        yield Case("unary", op, [ints(rng, rand_shape(rng), dtype)], opset=14 if op == "Relu" else 13)
    for _ in range(4):
        yield Case("unary", "Not", [rng.random(rand_shape(rng)) < 0.5])
        yield Case("unary", "BitwiseNot", [ints(rng, rand_shape(rng), rng.choice([np.int8, np.uint16, np.int64]))],
                   opset=18)


BINARY = ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu", "Mod"]
COMPARE = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]


def binary(rng):
    for op, _ in itertools.product(BINARY + COMPARE, range(8)):
        sa, sb = broadcast_pair(rng)
        if op == "PRelu":
            sa, sb = rand_shape(rng, rng.integers(1, 5)), None
            sb = tuple(1 if rng.random() < 0.5 else d for d in sa[rng.integers(0, len(sa) + 1):])
        dtype = rng.choice([F32, F32, F64, F16])
        a, b = floats(rng, sa, dtype), floats(rng, sb, dtype)
        attrs = {}
        if op == "Pow":
            b = np.where(rng.random(sb) < 0.5, np.round(b), b).astype(dtype)
        if op == "Mod":
            attrs["fmod"] = 1
        out = [np.bool_] if op in COMPARE else None
        tol = 2e-3 if dtype == F16 else 1e-5
        yield Case("binary", op, [a, b], attrs, out_types=out, opset=13 if op == "Mod" else 17, rtol=tol,
                   atol=tol * 0.1)
    for op, dtype in itertools.product(["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Pow"] + COMPARE,
                                       [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64]):
        for _ in range(3):
            sa, sb = broadcast_pair(rng)
            a, b = ints(rng, sa, dtype), ints(rng, sb, dtype)
            attrs, opset = {}, 14
            if op in ("Div", "Mod"):
                b = np.where(b == 0, 3, b).astype(dtype)
                if np.issubdtype(dtype, np.signedinteger):  # INT_MIN / -1 overflows: no answer to compare
                    b = np.where(b == -1, -7, b).astype(dtype)
                if op == "Mod":
                    attrs["fmod"] = int(rng.integers(0, 2))
                    opset = 13
            if op == "Pow":
                if dtype not in (np.int32, np.int64):
                    continue
                a, b = ints(rng, sa, dtype, edges=0, low=-5, high=5), ints(rng, sb, dtype, edges=0, low=0, high=6)
                opset = 15
            if op in ("Max", "Min"):
                opset = 13
            out = [np.bool_] if op in COMPARE else None
            yield Case("binary_int", op, [a, b], attrs, out_types=out, opset=opset)
    for _ in range(12):
        dtype = rng.choice([np.uint8, np.uint16, np.uint32, np.uint64])
        sa, sb = broadcast_pair(rng)
        bits = np.iinfo(dtype).bits
        shifts = ints(rng, sb, dtype, edges=0, low=0, high=bits - 1)
        yield Case("binary_int", "BitShift", [ints(rng, sa, dtype), shifts],
                   {"direction": str(rng.choice(["LEFT", "RIGHT"]))}, opset=11)
    for op in ["And", "Or", "Xor"]:
        for _ in range(3):
            sa, sb = broadcast_pair(rng)
            yield Case("binary_int", op, [rng.random(sa) < 0.5, rng.random(sb) < 0.5])
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
        for _ in range(3):
            sa, sb = broadcast_pair(rng)
            dtype = rng.choice([np.int8, np.uint8, np.int32, np.uint64])
            yield Case("binary_int", op, [ints(rng, sa, dtype), ints(rng, sb, dtype)], opset=18)
    for op in ["Max", "Min", "Sum", "Mean"]:
        for _ in range(4):
            shapes = [rand_shape(rng, rng.integers(0, 3), zero=0) for _ in range(rng.integers(1, 4))]
            yield Case("binary", op, [floats(rng, s) for s in shapes], opset=13)
    for _ in range(8):
        sc, sa = broadcast_pair(rng)
        sb = sa
        yield Case("binary", "Where", [rng.random(sc) < 0.5, floats(rng, sa), floats(rng, sb)],
                   out_types=[F32], opset=16)


def cast(rng):
    float_src = [F32, F64, F16]
    targets = [F32, F64, F16, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
               np.bool_]
    for src, dst in itertools.product(float_src, targets):
        for _ in range(2):
            shape = rand_shape(rng, zero=0.02)
            if np.issubdtype(dst, np.integer):  # out-of-range is undefined: stay in range, with fractions
                info = np.iinfo(dst)
                x = rng.uniform(max(info.min, -3e4), min(info.max, 6e4), shape)
                x = np.where(rng.random(shape) < 0.3, np.round(x) + rng.choice([0.5, -0.5, 0.49, -0.99]), x)
                x = np.clip(x, info.min, min(info.max, 6e4))
                x = x.astype(src)
                x = np.where(x.astype(np.float64) > info.max, info.max // 2, x).astype(src)
                x = np.where(x.astype(np.float64) < info.min, 0, x).astype(src)
            else:
                x = floats(rng, shape, src, scale=rng.choice([1.0, 1e3, 1e5]), specials=0.2)
                if src == F64 and dst in (F32, F16):
                    x = np.where(rng.random(shape) < 0.2, rng.choice([1e39, 65520.0, 65519.0, 6e-8, 3e-8, 1e-46]),
                                 x)
                if src == F32 and dst == F16:
                    x = np.where(rng.random(shape) < 0.3, rng.choice([65520.0, 65519.0, 65504.0, 7e4, 6e-8, 2.9e-8,
                                                                       1e-5 + 1e-9]), x).astype(src)
            yield Case("cast", "Cast", [x], {"to": elem_type(dst)}, out_types=[dst], opset=13)
    for src, dst in itertools.product(INTS + [np.bool_], targets):
        shape = rand_shape(rng)
        x = rng.random(shape) < 0.5 if src == np.bool_ else ints(rng, shape, src, edges=0.2)
        if dst == F16 and src not in (np.bool_,):
            x = np.where(rng.random(shape) < 0.3, x, x).astype(src)
        yield Case("cast", "Cast", [x], {"to": elem_type(dst)}, out_types=[dst], opset=13)
    for _ in range(8):  # through bfloat16: the model casts float -> bfloat16 -> float
        x = floats(rng, rand_shape(rng), F32, scale=rng.choice([1.0, 1e20]), specials=0.2)
        x = np.where(rng.random(x.shape) < 0.3, rng.choice([1.00390625, 1.01171875, 3.3895314e38, 1e-40]), x)
        x = x.astype(F32)
        yield Case("cast", "Cast", [x], out_types=[F32], opset=13, nodes=lambda i, o: [
            helper.make_node("Cast", i, ["b"], to=TensorProto.BFLOAT16),
            helper.make_node("Cast", ["b"], o, to=TensorProto.FLOAT)])
    for to, _ in itertools.product([17, 18, 19, 20], range(4)):  # through the float 8 types, saturating or not
        x = floats(rng, rand_shape(rng), F32, scale=rng.choice([1.0, 100.0, 1e5]), specials=0.2)
        x = np.where(rng.random(x.shape) < 0.2, rng.choice([448.0, 464.0, 57344.0, 61440.0, 1e-3, 0.0625, 1e-7]),
                     x).astype(F32)
        saturate = int(rng.integers(0, 2))
        yield Case("cast", "Cast", [x], out_types=[F32], opset=19, nodes=lambda i, o, to=to, saturate=saturate: [
            helper.make_node("Cast", i, ["b"], to=to, saturate=saturate),
            helper.make_node("Cast", ["b"], o, to=TensorProto.FLOAT)])
    for _ in range(6):  # to and from strings
        x = floats(rng, rand_shape(rng), F32, specials=0.3)
        yield Case("cast", "Cast", [x], {"to": TensorProto.STRING}, out_types=[object], opset=13)
        s = np.array([str(v) for v in rng.choice(["1.5", "-2", "3e2", "inf", "-INF", "NaN", "0.1", "+7",
                                                   "1e-3", "  "[:0] + "42"], size=5)], dtype=object)
        dst = rng.choice([F32, F64])
        yield Case("cast", "Cast", [s], {"to": elem_type(dst)}, out_types=[dst], opset=13)
    for _ in range(4):
        s = np.array([str(v) for v in rng.choice(["12", "-3", "0", "127", "-128", "+5"], size=4)], dtype=object)
        dst = rng.choice([np.int8, np.int32, np.int64])
        yield Case("cast", "Cast", [s], {"to": elem_type(dst)}, out_types=[dst], opset=13)


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]


def reduce(rng):
    for op, _ in itertools.product(REDUCE, range(10)):
        rank = int(rng.integers(0, 5))
        shape = rand_shape(rng, rank, zero=0.1)
        dtype = rng.choice([F32, F32, F64, np.int32, np.int64]) if op not in ("ReduceLogSum", "ReduceLogSumExp",
                                                                              "ReduceL2", "ReduceMean") else F32
        if np.issubdtype(dtype, np.integer):
            x = ints(rng, shape, dtype, edges=0, low=-4, high=4)
        else:
            x = floats(rng, shape, dtype, specials=0.03, scale=2.0)
            if op in ("ReduceLogSum",):
                x = np.abs(x)
        axes = sorted(set(int(rng.integers(-rank, rank)) % rank for _ in range(rng.integers(0, rank + 1)))) if rank \
            else []
        axes = [a - rank if rng.random() < 0.4 else a for a in axes]
        attrs = {}
        if rng.random() < 0.5:
            attrs["keepdims"] = int(rng.integers(0, 2))
        new_style = rng.random() < 0.5
        opset = 18 if new_style else 13
        inputs = [x]
        if new_style or op == "ReduceSum":
            if rng.random() < 0.3:
                attrs["noop_with_empty_axes"] = int(rng.integers(0, 2))
            if axes or rng.random() < 0.5:
                inputs.append(np.array(axes, dtype=np.int64))
        elif axes:
            attrs["axes"] = axes
        consts = (1,) if len(inputs) > 1 and rng.random() < 0.5 else ()
        if op in ("ReduceMax", "ReduceMin") and 0 in shape and opset < 18:
            continue
        yield Case("reduce", op, inputs, attrs, opset=opset, consts=consts, rtol=1e-4, atol=1e-5)
    for op, _ in itertools.product(["ArgMax", "ArgMin"], range(12)):
        rank = int(rng.integers(1, 5))
        shape = rand_shape(rng, rank, zero=0)
        dtype = rng.choice([F32, F64, np.int32, np.int64, np.uint8, np.int8])
        if np.issubdtype(dtype, np.integer):
            x = ints(rng, shape, dtype, edges=0, low=0, high=3)  # many ties
        else:
            x = np.round(floats(rng, shape, dtype, specials=0.05)).astype(dtype)
        attrs = {"axis": axis_of(rng, rank)}
        if rng.random() < 0.5:
            attrs["keepdims"] = int(rng.integers(0, 2))
        if rng.random() < 0.6:
            attrs["select_last_index"] = int(rng.integers(0, 2))
        yield Case("reduce", op, [x], attrs, out_types=[np.int64], opset=13)


def softmax(rng):
    for op, opset, _ in itertools.product(["Softmax", "LogSoftmax", "Hardmax"], [11, 13], range(5)):
        rank = int(rng.integers(1, 5))
        shape = rand_shape(rng, rank, zero=0.05)
        dtype = rng.choice([F32, F64])
        x = floats(rng, shape, dtype, specials=0.02 if op != "Hardmax" else 0)
        if op == "Hardmax":
            x = np.round(x).astype(dtype)
        attrs = {} if rng.random() < 0.2 else {"axis": axis_of(rng, rank)}
        yield Case("softmax", op, [x], attrs, opset=opset, rtol=1e-5, atol=1e-6)


def gemm(rng):
    for _ in range(40):
        m, k, n = (int(rng.integers(1, 9)) for _ in range(3))
        if rng.random() < 0.1:
            k = 0
        attrs = {}
        ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        if ta:
            attrs["transA"] = 1
        if tb:
            attrs["transB"] = 1
        if rng.random() < 0.5:
            attrs["alpha"] = float(rng.choice([0.5, -1.0, 2.0]))
        if rng.random() < 0.5:
            attrs["beta"] = float(rng.choice([0.0, 0.5, 3.0]))
        a = floats(rng, (k, m) if ta else (m, k), specials=0)
        b = floats(rng, (n, k) if tb else (k, n), specials=0)
        c_shape = [(), (1,), (n,), (1, n), (m, 1), (m, n), (1, 1), None][rng.integers(0, 8)]
        inputs = [a, b] + ([] if c_shape is None and rng.random() < 0.5 else
                           [None if c_shape is None else floats(rng, c_shape, specials=0)])
        if inputs[-1] is None:
            inputs.pop()
        consts = [i for i in (1, 2) if i < len(inputs) and inputs[i] is not None and rng.random() < 0.5]
        yield Case("gemm", "Gemm", inputs, attrs, out_types=[F32], opset=13, consts=consts, rtol=1e-4, atol=1e-4)
    for _ in range(40):
        ra, rb = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        k = int(rng.integers(0 if rng.random() < 0.1 else 1, 9))
        batch = rand_shape(rng, max(ra, rb) - 2 if max(ra, rb) > 2 else 0, max_dim=3, zero=0.05)
        def operand(rank, last_two):
            if rank == 1:
                return (k,)
            lead = tuple(1 if rng.random() < 0.3 else d for d in batch[len(batch) - (rank - 2):]) if rank > 2 else ()
            return lead + last_two
        sa = operand(ra, (int(rng.integers(1, 7)), k))
        sb = operand(rb, (k, int(rng.integers(1, 7))))
        dtype = rng.choice([F32, F32, F64, np.int32, np.int64])
        if np.issubdtype(dtype, np.integer):
            a, b = ints(rng, sa, dtype, edges=0, low=-9, high=9), ints(rng, sb, dtype, edges=0, low=-9, high=9)
        else:
            a, b = floats(rng, sa, dtype, specials=0), floats(rng, sb, dtype, specials=0)
        consts = (1,) if rng.random() < 0.5 else ()
        yield Case("matmul", "MatMul", [a, b], opset=13, consts=consts, rtol=1e-4, atol=1e-4)
    equations = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]), ("ij->", [(3, 4)]),
                 ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
                 ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
                 ("ij,ij->i", [(3, 4), (3, 4)]), ("ijk->kji", [(2, 3, 4)]), ("ii", [(3, 3)]),
                 ("ij,jk", [(2, 3), (3, 2)]),
                 ("ba,ca->bc", [(2, 3), (4, 3)]), ("abc,cd->abd", [(2, 0, 3), (3, 2)]), ("...i->...", [(2, 3, 4)]),
                 ("i,i,i->i", [(4,), (4,), (4,)]), ("ij,kj->ik", [(3, 5), (2, 5)]), ("iij->ij", [(3, 3, 2)])]
    for eq, shapes in equations:
        for dtype in (F32, np.int64):
            ins = [floats(rng, s, specials=0) if dtype == F32 else ints(rng, s, dtype, edges=0) for s in shapes]
            yield Case("einsum", "Einsum", ins, {"equation": eq}, opset=12, rtol=1e-4, atol=1e-4)


def edges(rng):
    """Value edges the random families rarely draw: rows of -inf, NaN among TopK's candidates, quantization to
    float 8 and 4-bit types (through DequantizeLinear back to float), integer wrap-around in sums."""
    for op, opset in itertools.product(["Softmax", "LogSoftmax"], [13]):
        for _ in range(4):
            x = floats(rng, (3, 4), specials=0)
            x[0, :] = -np.inf
            x[1, int(rng.integers(0, 4))] = np.inf
            x[2, int(rng.integers(0, 4))] = -np.inf
            yield Case("edges", op, [x], {"axis": -1}, opset=opset)
    for _ in range(8):
        x = np.round(floats(rng, (2, 6), specials=0.3)).astype(F32)
        yield Case("edges", "TopK", [x, np.array([int(rng.integers(1, 7))], np.int64)],
                   {"largest": int(rng.integers(0, 2)), "sorted": 1}, out_types=[F32, np.int64], opset=11)
    for to, _ in itertools.product([17, 19, 21, 22], range(3)):  # E4M3FN, E5M2, UINT4, INT4
        x = floats(rng, (2, 5), specials=0.2, scale=rng.choice([1.0, 50.0, 1000.0]))
        scale = np.array(float(rng.choice([1.0, 0.5, 2.0])), F32)
        zp_type = {17: None, 19: None, 21: 21, 22: 22}[to]  # onnx 1.12 knows no UINT4 (21) or INT4 (22)
        saturate = int(rng.integers(0, 2))

        def nodes(i, o, to=to, zp_type=zp_type, saturate=saturate):
            zp = TensorProto(data_type=to, dims=[], raw_data=bytes([3 if to == 21 else 0x0e]) if zp_type else b"\0")
            q_attrs = {"saturate": saturate} if zp_type is None else {}
            return [helper.make_node("Constant", [], ["zp"], value=zp),
                    helper.make_node("QuantizeLinear", [i[0], i[1], "zp"], ["q"], **q_attrs),
                    helper.make_node("DequantizeLinear", ["q", i[1], "zp"], o)]
        yield Case("edges", "Q-DQ", [x, scale], out_types=[F32], opset=21, consts=(1,), nodes=nodes)
    for dtype in (np.int32, np.int64, np.int8, np.uint8):
        info = np.iinfo(dtype)
        x = np.array([[info.max, 1, info.max // 2 + 1], [info.min, -1 if info.min else 0, info.min]], dtype)
        yield Case("edges", "ReduceSum", [x, np.array([1], np.int64)], {"keepdims": 0}, opset=13)
        yield Case("edges", "CumSum", [x, np.array(1, np.int64)], opset=14)
        yield Case("edges", "ReduceProd", [x], {"axes": [0]}, opset=13)
        yield Case("edges", "Clip", [x, np.array(5, dtype), np.array(2, dtype)], opset=13)
    for dtype in (np.int32, np.int64, np.int8):
        a = ints(rng, (4, 6), dtype, edges=0.2)
        b = np.where(ints(rng, (6,), dtype, edges=0) == 0, -3, ints(rng, (6,), dtype, edges=0)).astype(dtype)
        b = np.where(b == -1, 7, b).astype(dtype)
        yield Case("edges", "Div", [a, b], opset=14)
        for fmod in (0, 1):
            yield Case("edges", "Mod", [a, b], {"fmod": fmod}, opset=13)
    for _ in range(4):
        a = floats(rng, (4, 5), specials=0.4)
        b = floats(rng, (5,), specials=0.4)
        yield Case("edges", "Mod", [a, b], {"fmod": 1}, opset=13)
        yield Case("edges", "Pow", [a, b], opset=15)
        yield Case("edges", "Div", [a, b], opset=14)
    for start, limit, delta in [(0.0, 1.0, 0.1), (1.0, -2.0, -0.3), (5, 5, 1), (10, 0, -3), (0.5, 10.0, 2.25)]:
        for dtype in (F32, F64, np.int32, np.int64):
            integral = (start, limit, delta) == tuple(int(v) for v in (start, limit, delta))
            if np.issubdtype(dtype, np.integer) and not integral:
                continue
            yield Case("edges", "Range", [np.array(start, dtype), np.array(limit, dtype), np.array(delta, dtype)],
                       opset=11)
    for _ in range(6):
        shape = rand_shape(rng, 3, zero=0)
        strings = np.array(rng.choice(["a", "bb", "", "é"], size=shape), dtype=object)
        idx = rng.integers(-shape[1], shape[1], (2,)).astype(np.int64)
        yield Case("edges", "Gather", [strings, idx], {"axis": 1}, opset=13)
        yield Case("edges", "Where", [rng.random(shape) < 0.5, strings, np.array(["z"], dtype=object)],
                   out_types=[object], opset=16)
        yield Case("edges", "Transpose", [strings], {"perm": [2, 0, 1]}, opset=13)
