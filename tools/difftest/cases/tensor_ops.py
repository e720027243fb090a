"""Indexing, shape and layout operators, and quantization."""

import numpy as np

from .common import Case, F32, F64, axis_of, floats, ints, rand_shape


def gather_scatter(rng):
    for _ in range(30):
        rank = int(rng.integers(1, 4))
        shape = rand_shape(rng, rank, zero=0.03)
        axis = axis_of(rng, rank)
        dim = shape[axis]
        ishape = rand_shape(rng, int(rng.integers(0, 3)), zero=0.05)
        idx = rng.integers(-dim, dim, ishape) if dim else np.zeros(ishape, np.int64)
        if dim == 0 and int(np.prod(ishape)):
            continue
        itype = rng.choice([np.int32, np.int64])
        x = ints(rng, shape, np.int64) if rng.random() < 0.3 else floats(rng, shape)
        yield Case("gather", "Gather", [x, idx.astype(itype)], {"axis": axis}, opset=13,
                   consts=(1,) if rng.random() < 0.3 else ())
    for _ in range(25):
        rank = int(rng.integers(1, 4))
        shape = rand_shape(rng, rank, zero=0)
        axis = axis_of(rng, rank)
        ishape = tuple(int(rng.integers(1, s + 1)) for s in shape)
        ishape = tuple(rng.integers(1, 4) if d == axis % rank else s for d, s in enumerate(ishape))
        dim = shape[axis]
        idx = rng.integers(-dim, dim, ishape).astype(rng.choice([np.int32, np.int64]))
        x = floats(rng, shape)
        yield Case("gather", "GatherElements", [x, idx], {"axis": axis}, opset=13)
        # ScatterElements: the updates' positions must be distinct for a defined result unless reduction
        upd_idx = np.stack([rng.permutation(dim)[:min(ishape[axis % rank], dim)] for _ in range(1)])[0]
        ishape2 = tuple(len(upd_idx) if d == axis % rank else s for d, s in enumerate(ishape))
        idx2 = np.broadcast_to(upd_idx.reshape([-1 if d == axis % rank else 1 for d in range(rank)]), ishape2)
        idx2 = np.where(rng.random(ishape2) < 0.5, idx2 - dim, idx2).astype(np.int64)
        reduction = str(rng.choice(["none", "add", "mul", "max", "min"]))
        attrs = {"axis": axis}
        opset = 16
        if reduction != "none":
            attrs["reduction"] = reduction
            opset = 18 if reduction in ("max", "min") else 16
            idx2 = rng.integers(-dim, dim, ishape2).astype(np.int64)  # duplicates allowed with a reduction
        yield Case("scatter", "ScatterElements", [x, idx2, floats(rng, ishape2)], attrs, opset=opset)
    for _ in range(25):
        rank = int(rng.integers(1, 5))
        shape = rand_shape(rng, rank, zero=0)
        batch_dims = int(rng.integers(0, min(rank, 2)))
        q = int(rng.integers(1, rank - batch_dims + 1))
        lead = rand_shape(rng, int(rng.integers(0, 3)), max_dim=3, zero=0)
        ishape = tuple(shape[:batch_dims]) + lead + (q,)
        idx = np.stack([rng.integers(-shape[batch_dims + j], shape[batch_dims + j], ishape[:-1]) for j in range(q)],
                       axis=-1).astype(np.int64)
        x = floats(rng, shape)
        yield Case("gather", "GatherND", [x, idx], {"batch_dims": batch_dims} if batch_dims else {}, opset=13)
    for _ in range(20):
        rank = int(rng.integers(1, 4))
        shape = rand_shape(rng, rank, zero=0)
        q = int(rng.integers(1, rank + 1))
        n = int(np.prod(shape[:q]))
        count = int(rng.integers(1, n + 1))
        reduction = str(rng.choice(["none", "add", "mul", "max", "min"]))
        flat = rng.permutation(n)[:count] if reduction == "none" else rng.integers(0, n, count)
        idx = np.stack(np.unravel_index(flat, shape[:q]), axis=-1).astype(np.int64)
        idx = np.where(rng.random(idx.shape) < 0.3, idx - np.array(shape[:q]), idx)
        upd = floats(rng, (count,) + tuple(shape[q:]))
        attrs = {} if reduction == "none" else {"reduction": reduction}
        yield Case("scatter", "ScatterND", [floats(rng, shape), idx, upd], attrs,
                   opset=18 if reduction in ("max", "min") else 16)


def shape_ops(rng):
    for _ in range(40):
        rank = int(rng.integers(1, 5))
        shape = rand_shape(rng, rank, max_dim=6, zero=0.05)
        n = int(rng.integers(1, rank + 1))
        axes = list(rng.permutation(rank)[:n])
        starts, ends, steps = [], [], []
        for a in axes:
            d = shape[a]
            step = int(rng.choice([1, 1, 2, 3, -1, -2]))
            cand = [0, 1, -1, d, -d, d + 5, -d - 5, 2 ** 63 - 1, -2 ** 63, 2]
            starts.append(int(rng.choice(cand)))
            ends.append(int(rng.choice(cand)))
            steps.append(step)
        axes = [int(a) - rank if rng.random() < 0.4 else int(a) for a in axes]
        inputs = [floats(rng, shape), np.array(starts, np.int64), np.array(ends, np.int64)]
        if rng.random() < 0.8:
            inputs.append(np.array(axes, np.int64))
            if rng.random() < 0.8:
                inputs.append(np.array(steps, np.int64))
        elif steps:
            continue
        consts = [i for i in range(1, len(inputs)) if rng.random() < 0.5]
        yield Case("slice", "Slice", inputs, opset=13, consts=consts)
    for _ in range(25):
        rank = int(rng.integers(1, 4))
        shape = rand_shape(rng, rank, max_dim=7, zero=0.05)
        axis = axis_of(rng, rank)
        dim = shape[axis]
        r = rng.random()
        if r < 0.4 and dim:
            parts = sorted(rng.integers(0, dim + 1, int(rng.integers(1, 4))))
            split = np.diff([0] + list(parts) + [dim]).astype(np.int64)
            yield Case("split", "Split", [floats(rng, shape), split], {"axis": axis}, out_types=[F32] * len(split),
                       opset=13, consts=(1,) if rng.random() < 0.5 else ())
        elif r < 0.7:
            k = int(rng.integers(1, 4))
            if dim and dim % k == 0:
                yield Case("split", "Split", [floats(rng, shape)], {"axis": axis}, out_types=[F32] * k, opset=13)
        else:
            k = int(rng.integers(1, 5))
            if k <= max(dim, 1):
                yield Case("split", "Split", [floats(rng, shape)], {"axis": axis, "num_outputs": k},
                           out_types=[F32] * k, opset=18)
    for _ in range(20):
        shape = rand_shape(rng, int(rng.integers(0, 4)), zero=0.05)
        reps = np.array([int(rng.integers(0 if rng.random() < 0.1 else 1, 4)) for _ in shape], np.int64)
        yield Case("tile", "Tile", [floats(rng, shape), reps], opset=13, consts=(1,) if rng.random() < 0.5 else ())
        target = rand_shape(rng, int(rng.integers(0, 4)), zero=0.05)
        tail = target[len(target) - int(rng.integers(0, len(target) + 1)):]
        src = tuple(1 if rng.random() < 0.5 else d for d in tail)
        tgt = tuple(1 if rng.random() < 0.2 else d for d in target)
        if rng.random() < 0.2:
            src, tgt = target, tuple(1 for _ in target[:len(target) - 1])
        yield Case("expand", "Expand", [floats(rng, src), np.array(tgt, np.int64)], opset=13)
    for _ in range(30):
        rank = int(rng.integers(1, 4))
        shape = rand_shape(rng, rank, max_dim=5, zero=0.05)
        mode = str(rng.choice(["constant", "reflect", "edge", "wrap"]))
        opset = 19 if mode == "wrap" or rng.random() < 0.3 else 13
        pads = [int(rng.integers(-1 if mode == "constant" else 0, 4)) for _ in range(2 * rank)]
        if mode == "reflect":
            pads = [min(p, max(shape[i % rank] - 1, 0)) for i, p in enumerate(pads)]
        if mode in ("edge", "reflect", "wrap") and 0 in shape:
            continue
        if mode == "wrap":
            pads = [min(p, shape[i % rank]) for i, p in enumerate(pads)]
        pads = [max(p, -shape[i % rank]) for i, p in enumerate(pads)]
        dtype = rng.choice([F32, np.int32, np.int64, np.uint8])
        x = floats(rng, shape, dtype) if dtype == F32 else ints(rng, shape, dtype)
        inputs = [x, np.array(pads, np.int64)]
        if mode == "constant" and rng.random() < 0.6:
            inputs.append(np.array(3, dtype=dtype))
        if opset >= 18 and rng.random() < 0.4:
            axes = [axis_of(rng, rank)]
            inputs = inputs + [None] * (3 - len(inputs)) + [np.array(axes, np.int64)]
            inputs[1] = np.array([pads[0], pads[rank]], np.int64)
        consts = [i for i in range(1, len(inputs)) if inputs[i] is not None and rng.random() < 0.5]
        yield Case("pad", "Pad", inputs, {"mode": mode}, opset=opset, consts=consts)
    for _ in range(20):
        rank = int(rng.integers(1, 4))
        shape = rand_shape(rng, rank, zero=0.05)
        dtype = rng.choice([F32, F64, np.int32, np.int64])
        x = floats(rng, shape, dtype, specials=0) if dtype in (F32, F64) else ints(rng, shape, dtype, edges=0)
        attrs = {k: 1 for k in ("exclusive", "reverse") if rng.random() < 0.5}
        axis = np.array(axis_of(rng, rank), dtype=rng.choice([np.int32, np.int64]))
        yield Case("cumsum", "CumSum", [x, axis], attrs, opset=14, consts=(1,) if rng.random() < 0.5 else (),
                   rtol=1e-5, atol=1e-5)
    for _ in range(40):
        rank = int(rng.integers(1, 4))
        shape = rand_shape(rng, rank, zero=0.02)
        axis = axis_of(rng, rank)
        dtype = rng.choice([F32, F64, np.int32, np.int64])
        x = np.round(floats(rng, shape, dtype, specials=0)).astype(dtype) if dtype in (F32, F64) else \
            ints(rng, shape, dtype, edges=0, low=-3, high=3)
        k = int(rng.integers(0, shape[axis] + 1))
        attrs = {"axis": axis}
        if rng.random() < 0.5:
            attrs["largest"] = int(rng.integers(0, 2))
        yield Case("topk", "TopK", [x, np.array([k], np.int64)], attrs, out_types=[dtype, np.int64], opset=11,
                   consts=(1,) if rng.random() < 0.5 else ())
    for _ in range(20):
        shape = rand_shape(rng)
        dtype = rng.choice([F32, F64, np.int8, np.int32, np.int64, np.uint8])
        x = floats(rng, shape, dtype) if dtype in (F32, F64) else ints(rng, shape, dtype)
        lo = None if rng.random() < 0.4 else np.array(rng.integers(-3, 2), dtype)
        hi = None if rng.random() < 0.4 else np.array(rng.integers(-1, 4), dtype)
        if dtype == np.uint8:
            lo = None if lo is None else np.array(2, dtype)
        inputs = [x, lo, hi]
        while inputs[-1] is None and len(inputs) > 1:
            inputs.pop()
        consts = [i for i in (1, 2) if i < len(inputs) and inputs[i] is not None and rng.random() < 0.5]
        yield Case("clip", "Clip", inputs, opset=13, consts=consts)
    for _ in range(12):
        rank = int(rng.integers(2, 4))
        shape = rand_shape(rng, rank, zero=0.05)
        k = None if rng.random() < 0.3 else np.array(int(rng.integers(-4, 5)), np.int64)
        yield Case("trilu", "Trilu", [floats(rng, shape)] + ([] if k is None else [k]),
                   {"upper": int(rng.integers(0, 2))}, opset=14)
    for _ in range(10):
        c = int(rng.choice([4, 8, 12]))
        b = 2
        mode = str(rng.choice(["DCR", "CRD"]))
        yield Case("depth_to_space", "DepthToSpace", [floats(rng, (1, c, 2, 3))], {"blocksize": b, "mode": mode},
                   opset=13)
        yield Case("depth_to_space", "SpaceToDepth", [floats(rng, (1, 2, 4, 6))], {"blocksize": b}, opset=13)
    for _ in range(10):
        depth = int(rng.integers(1, 6))
        shape = rand_shape(rng, int(rng.integers(1, 3)), zero=0)
        idx = rng.integers(-depth - 1, depth + 1, shape).astype(np.int64)
        yield Case("onehot", "OneHot", [idx, np.array(depth, np.int64), np.array([-2.0, 5.0], F32)],
                   {"axis": axis_of(rng, len(shape) + 1)}, out_types=[F32], opset=11)
    for _ in range(10):
        start, limit, delta = (float(rng.choice([-3, 0, 2.5, 7, 1])) for _ in range(3))
        if delta == 0:
            delta = 1.5
        dtype = rng.choice([F32, np.int64, np.int32, F64])
        vals = [np.array(v, dtype) for v in (start, limit, delta)]
        if vals[2] == 0:
            continue
        yield Case("range", "Range", vals, opset=11, rtol=1e-6, atol=1e-6)
    for _ in range(10):
        shape = rand_shape(rng, 2, zero=0.05)
        axis = axis_of(rng, 2)
        x = floats(rng, shape)
        cond = rng.random(int(rng.integers(0, shape[axis] + 2))) < 0.5 if rng.random() < 0.7 else \
            rng.random(int(rng.integers(0, x.size + 1))) < 0.5
        attrs = {"axis": axis} if cond.size <= shape[axis] else {}
        yield Case("compress", "Compress", [x, cond], attrs, opset=11)
    for _ in range(6):
        x = np.round(floats(rng, rand_shape(rng, 2, zero=0), specials=0))
        yield Case("nonzero", "NonZero", [x], out_types=[np.int64], opset=13)
        seq = (3, 4, 2)
        lens = rng.integers(0, 4, 4).astype(np.int64)
        yield Case("reverse_sequence", "ReverseSequence", [floats(rng, seq), lens],
                   {"batch_axis": 1, "time_axis": 0}, opset=10)


def quantization(rng):
    for _ in range(40):
        rank = int(rng.integers(0, 4))
        shape = rand_shape(rng, rank, zero=0.03)
        qtype = rng.choice([np.uint8, np.int8]) if rng.random() < 0.8 else rng.choice([np.uint16, np.int16])
        per_axis = rank > 0 and rng.random() < 0.4
        axis = axis_of(rng, rank) if per_axis else 1
        sshape = (shape[axis],) if per_axis else ()
        scale = np.abs(floats(rng, sshape, specials=0, scale=0.2)).astype(F32) + F32(0.01)
        if rng.random() < 0.3:
            scale = np.full(sshape, 0.5, F32)  # exact halves: rounding ties to even
        zp = ints(rng, sshape, qtype, edges=0.1) if rng.random() < 0.7 else None
        opset = 21 if qtype in (np.uint16, np.int16) else int(rng.choice([13, 19, 21]))
        x = floats(rng, shape, specials=0, scale=30.0)
        x = np.where(rng.random(shape) < 0.3, np.round(x * 2) / 2 * scale.reshape(
            [-1 if d == axis % max(rank, 1) else 1 for d in range(rank)] if per_axis else ()), x).astype(F32)
        attrs = {"axis": axis} if per_axis or rng.random() < 0.2 else {}
        inputs = [x, scale] + ([zp] if zp is not None else [])
        out = qtype if zp is not None else np.uint8
        consts = [i for i in (1, 2) if i < len(inputs) and rng.random() < 0.5]
        yield Case("quantize", "QuantizeLinear", inputs, attrs, out_types=[out], opset=opset, consts=consts)
        q = ints(rng, shape, out)
        dq_inputs = [q, scale] + ([zp] if zp is not None else [])
        yield Case("quantize", "DequantizeLinear", dq_inputs, attrs, out_types=[F32], opset=opset, consts=consts)
    for _ in range(12):  # blocked (opset 21)
        rows, blocks, bs = int(rng.integers(1, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
        cols = blocks * bs - int(rng.integers(0, bs))
        axis = int(rng.choice([1, -1]))
        scale = np.abs(floats(rng, (rows, blocks), specials=0, scale=0.2)).astype(F32) + F32(0.01)
        zp = ints(rng, (rows, blocks), np.int8)
        attrs = {"axis": axis, "block_size": bs}
        yield Case("quantize", "DequantizeLinear", [ints(rng, (rows, cols), np.int8), scale, zp], attrs,
                   out_types=[F32], opset=21)
        yield Case("quantize", "QuantizeLinear", [floats(rng, (rows, cols), specials=0, scale=10), scale, zp], attrs,
                   out_types=[np.int8], opset=21)
    for _ in range(8):
        x = floats(rng, rand_shape(rng, int(rng.integers(1, 3)), zero=0), specials=0, scale=5)
        yield Case("quantize", "DynamicQuantizeLinear", [x], out_types=[np.uint8, F32, np.uint8], opset=11)
    for _ in range(15):
        m, k, n = (int(rng.integers(1, 6)) for _ in range(3))
        at, bt = rng.choice([np.uint8, np.int8]), rng.choice([np.uint8, np.int8])
        if at == np.int8 and bt == np.uint8:
            bt = np.int8
        a, b = ints(rng, (m, k), at), ints(rng, (k, n), bt)
        a_s, b_s = np.array(0.05, F32), np.array(0.02, F32)
        a_zp, b_zp = np.array(3, at), np.array(-1 if bt == np.int8 else 128, bt)
        y_s, y_zp = np.array(0.3, F32), np.array(5, np.uint8)
        yield Case("qlinear", "QLinearMatMul", [a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp], out_types=[np.uint8],
                   opset=10, consts=(1, 2, 4, 5, 6, 7))
        yield Case("qlinear", "MatMulInteger", [a, b, a_zp, b_zp], out_types=[np.int32], opset=10)
    for _ in range(12):
        c, oc = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        x = ints(rng, (1, c, 5, 5), np.uint8)
        w = ints(rng, (oc, c, 3, 3), np.int8 if rng.random() < 0.5 else np.uint8)
        attrs = {"pads": [1, 1, 1, 1]} if rng.random() < 0.5 else {}
        w_s = np.abs(floats(rng, (oc,) if rng.random() < 0.5 else (), specials=0, scale=0.05)) + F32(0.001)
        w_zp = np.zeros(w_s.shape, w.dtype)
        inputs = [x, np.array(0.02, F32), np.array(7, np.uint8), w, w_s.astype(F32), w_zp, np.array(0.5, F32),
                  np.array(100, np.uint8)]
        if rng.random() < 0.5:
            inputs.append(ints(rng, (oc,), np.int32, edges=0, low=-500, high=500))
        yield Case("qlinear", "QLinearConv", inputs, attrs, out_types=[np.uint8], opset=10,
                   consts=[1, 2, 3, 4, 5, 6, 7] if rng.random() < 0.5 else [])
        yield Case("qlinear", "ConvInteger", [x, w, np.array(7, np.uint8)], attrs, out_types=[np.int32], opset=10)


def layout(rng):
    """Shape and layout operators: Transpose, Concat, Squeeze/Unsqueeze, Reshape, Flatten, Shape, Unique,
    EyeLike, Col2Im, CenterCropPad, DFT, Det, MaxUnpool, RMSNormalization."""
    for _ in range(15):
        rank = int(rng.integers(1, 6))
        shape = rand_shape(rng, rank, max_dim=4, zero=0.05)
        attrs = {} if rng.random() < 0.2 else {"perm": [int(p) for p in rng.permutation(rank)]}
        dtype = rng.choice([F32, np.int8, np.int64, np.bool_])
        x = floats(rng, shape) if dtype == F32 else (rng.random(shape) < 0.5 if dtype == np.bool_ else
                                                      ints(rng, shape, dtype))
        yield Case("layout", "Transpose", [x], attrs, opset=13)
        axis = axis_of(rng, rank)
        parts = [tuple(int(rng.integers(0, 4)) if d == axis % rank else s for d, s in enumerate(shape))
                 for _ in range(int(rng.integers(1, 4)))]
        yield Case("layout", "Concat", [floats(rng, p) for p in parts], {"axis": axis}, opset=13)
        ones = [d for d, s in enumerate(shape) if s == 1]
        if ones:
            axes = [d - rank if rng.random() < 0.5 else d for d in ones[:int(rng.integers(1, len(ones) + 1))]]
            yield Case("layout", "Squeeze", [x, np.array(axes, np.int64)], opset=13)
        ax = sorted(set(int(rng.integers(-(rank + 2), rank + 2)) for _ in range(int(rng.integers(1, 3)))))
        norm = sorted({a % (rank + len(ax)) for a in ax})
        if len(norm) == len(ax):
            yield Case("layout", "Unsqueeze", [x, np.array(ax, np.int64)], opset=13)
        target = list(shape)
        if rank and rng.random() < 0.5:
            target[int(rng.integers(0, rank))] = -1 if 0 not in shape else 0
        if rank and rng.random() < 0.5:
            target[int(rng.integers(0, rank))] = 0
        allow = int(rng.random() < 0.3)
        if allow and -1 in target and 0 in target:
            allow = 0
        yield Case("layout", "Reshape", [x, np.array(target, np.int64)], {"allowzero": allow} if allow else {},
                   opset=14, consts=(1,) if rng.random() < 0.5 else ())
        yield Case("layout", "Flatten", [x], {"axis": int(rng.integers(-rank, rank + 1))}, opset=13)
        start, end = int(rng.integers(-rank - 2, rank + 2)), int(rng.integers(-rank - 2, rank + 2))
        yield Case("layout", "Shape", [x], {"start": start, "end": end}, out_types=[np.int64], opset=15)
    for _ in range(10):
        rank = int(rng.integers(1, 3))
        x = ints(rng, rand_shape(rng, rank, zero=0), np.int64, edges=0, low=-2, high=2).astype(
            rng.choice([F32, np.int64]))
        attrs = {"sorted": int(rng.integers(0, 2))}
        if rng.random() < 0.5 and rank > 1:
            attrs["axis"] = axis_of(rng, rank)
        yield Case("layout", "Unique", [x], attrs, out_types=[x.dtype, np.int64, np.int64, np.int64], opset=11)
    for _ in range(6):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
        yield Case("layout", "EyeLike", [floats(rng, shape)], {"k": int(rng.integers(-3, 4))}, opset=9)
        yield Case("layout", "Det", [floats(rng, (2,) + (shape[0],) * 2, specials=0)], opset=11, rtol=1e-4,
                   atol=1e-4)
    for _ in range(8):
        c, kh, kw = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
        h, w = int(rng.integers(kh, 6)), int(rng.integers(kw, 6))
        strides = [int(rng.integers(1, 3)), int(rng.integers(1, 3))]
        pads = [int(rng.integers(0, 2)) for _ in range(4)]
        bh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
        bw = (w + pads[1] + pads[3] - kw) // strides[1] + 1
        yield Case("layout", "Col2Im", [floats(rng, (1, c * kh * kw, bh * bw), specials=0),
                                        np.array([h, w], np.int64), np.array([kh, kw], np.int64)],
                   {"strides": strides, "pads": pads}, opset=18, consts=(1, 2))
        shape = rand_shape(rng, 3, zero=0)
        yield Case("layout", "CenterCropPad", [floats(rng, shape), np.array([int(rng.integers(1, 7)) for _ in shape],
                                                                            np.int64)], opset=18)
    for _ in range(10):
        n = int(rng.integers(1, 9))
        x = floats(rng, (1, n, 1) if rng.random() < 0.5 else (1, n, 2), specials=0)
        attrs = {"onesided": int(rng.integers(0, 2)) if x.shape[-1] == 1 else 0,
                 "inverse": int(rng.integers(0, 2)) if x.shape[-1] == 2 else 0}
        yield Case("layout", "DFT", [x, np.array(int(rng.integers(1, 10)), np.int64) if rng.random() < 0.4 else None,
                                     np.array(1, np.int64)], attrs, opset=20, rtol=1e-4, atol=1e-4)
    for _ in range(8):
        shape = (1, int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(2, 9)))
        axis = int(rng.choice([-1, -2, 1]))
        scale = floats(rng, shape[axis % 4:], specials=0)
        yield Case("layout", "RMSNormalization", [floats(rng, shape, specials=0), scale], {"axis": axis}, opset=23,
                   rtol=1e-4, atol=1e-4)
