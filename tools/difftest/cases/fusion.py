"""Small graphs that the load-time passes rewrite."""

import numpy as np
from onnx import helper

from .common import Case, F32, floats, rand_shape


def fusion(rng):
    """Small graphs that the load-time passes rewrite: Conv/MatMul/Gemm with constant weights and what they
    absorb, NHWC groups of convolutions, spelled-out LayerNormalization, GELU and attention."""
    act_nodes = [("Relu", {}), ("LeakyRelu", {"alpha": 0.2}), ("Sigmoid", {}), ("Tanh", {}), ("HardSwish", {}),
                 ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("Gelu", {})]

    def act(name, src, dst):
        if name == "Clip":
            return [helper.make_node("Clip", [src, "lo", "hi"], [dst])]
        op, attrs = next(a for a in act_nodes if a[0] == name)
        return [helper.make_node(op, [src], [dst], **attrs)]

    for _ in range(40):  # Conv [+ BN] [+ residual Add] [+ activation]
        c, oc = int(rng.integers(1, 9)), int(rng.integers(1, 17))
        big = rng.random() < 0.4
        if big:
            c, oc = int(rng.choice([16, 32, 24])), int(rng.choice([16, 32, 40]))
        k = int(rng.choice([1, 3, 3, 5]))
        h, w = int(rng.integers(k, 20)), int(rng.integers(k, 20))
        group = int(rng.choice([g for g in (1, 1, 2, c) if c % g == 0 and oc % g == 0] or [1]))
        attrs = {"pads": [k // 2] * 4} if rng.random() < 0.7 else {}
        if rng.random() < 0.3:
            attrs["strides"] = [2, 2]
        x = floats(rng, (1, c, h, w), specials=0, scale=1.0)
        wt = floats(rng, (oc, c // group, k, k), specials=0, scale=0.3)
        bias = floats(rng, (oc,), specials=0)
        use_bn, use_add = rng.random() < 0.4, rng.random() < 0.4
        activation = str(rng.choice([a[0] for a in act_nodes] + ["Clip", "none"]))
        oh = (h + 2 * attrs.get("pads", [0])[0] - k) // attrs.get("strides", [1])[0] + 1
        ow = (w + 2 * attrs.get("pads", [0])[0] - k) // attrs.get("strides", [1])[0] + 1
        residual = floats(rng, (1, oc, oh, ow) if rng.random() < 0.7 else (oc, 1, 1), specials=0)
        bn = [floats(rng, (oc,), specials=0), floats(rng, (oc,), specials=0), floats(rng, (oc,), specials=0),
              np.abs(floats(rng, (oc,), specials=0)) + F32(0.1)]
        lo, hi = np.array(-0.5, F32), np.array(float(rng.choice([0.5, 6.0])), F32)

        def nodes(i, o, attrs=attrs, group=group, use_bn=use_bn, use_add=use_add, activation=activation):
            ns = [helper.make_node("Conv", [i[0], i[1], i[2]], ["c"], group=group, **attrs)]
            cur = "c"
            if use_bn:
                ns.append(helper.make_node("BatchNormalization", [cur, i[4], i[5], i[6], i[7]], ["bn"]))
                cur = "bn"
            if use_add:
                ns.append(helper.make_node("Add", [i[3], cur] if rng.random() < 0.5 else [cur, i[3]], ["add"]))
                cur = "add"
            if activation == "none":
                ns.append(helper.make_node("Identity", [cur], o))
            else:
                ns += [n for n in act(activation, cur, o[0])]
                if activation == "Clip":
                    ns[-1].input[1:] = [i[8], i[9]]
            return ns
        yield Case("fusion", "Conv+", [x, wt, bias, residual] + bn + [lo, hi], out_types=[F32], opset=20,
                   consts=(1, 2, 4, 5, 6, 7, 8, 9), nodes=nodes, rtol=1e-4, atol=1e-4)
    for _ in range(25):  # chains of convolutions for the NHWC pass: pointwise -> depthwise -> pointwise
        c, e = int(rng.choice([8, 16, 24])), int(rng.choice([32, 48, 64]))
        h = int(rng.choice([14, 28, 33]))
        x = floats(rng, (1, c, h, h), specials=0, scale=1.0)
        w1 = floats(rng, (e, c, 1, 1), specials=0, scale=0.3)
        w2 = floats(rng, (e, 1, 3, 3), specials=0, scale=0.3)
        w3 = floats(rng, (c, e, 1, 1), specials=0, scale=0.3)
        w4 = floats(rng, (c, c, 3, 3), specials=0, scale=0.3)
        b1, b2, b3 = (floats(rng, (n,), specials=0) for n in (e, e, c))
        stride = int(rng.choice([1, 2]))
        residual = rng.random() < 0.5 and stride == 1
        pool = str(rng.choice(["none", "GlobalAveragePool", "MaxPool"]))

        def nodes(i, o, stride=stride, residual=residual, pool=pool):
            ns = [helper.make_node("Conv", [i[0], i[1], i[2]], ["p1"]), helper.make_node("Relu", ["p1"], ["a1"]),
                  helper.make_node("Conv", ["a1", i[3], i[4]], ["d"], group=e, pads=[1, 1, 1, 1],
                                   strides=[stride, stride]),
                  helper.make_node("Clip", ["d", i[9], i[10]], ["a2"]),
                  helper.make_node("Conv", ["a2", i[5], i[6]], ["p2"])]
            cur = "p2"
            if residual:
                ns.append(helper.make_node("Add", ["p2", i[0]], ["r"]))
                cur = "r"
            ns.append(helper.make_node("Conv", [cur, i[7]], ["q"], pads=[1, 1, 1, 1]))
            cur = "q"
            if pool == "GlobalAveragePool":
                ns.append(helper.make_node("GlobalAveragePool", [cur], ["g"]))
                cur = "g"
            elif pool == "MaxPool":
                ns.append(helper.make_node("MaxPool", [cur], ["g"], kernel_shape=[2, 2], strides=[2, 2]))
                cur = "g"
            ns.append(helper.make_node("Identity", [cur], o))
            return ns
        yield Case("fusion", "NhwcChain", [x, w1, b1, w2, b2, w3, b3, w4, None, np.array(0, F32), np.array(6, F32)],
                   out_types=[F32], opset=13, consts=(1, 2, 3, 4, 5, 6, 7, 9, 10), nodes=nodes, rtol=1e-4, atol=1e-3)
    for _ in range(40):  # MatMul / Gemm with constant weights, bias Add, activation
        m, k, n = int(rng.integers(1, 40)), int(rng.integers(1, 70)), int(rng.integers(1, 70))
        lead = rand_shape(rng, int(rng.integers(0, 3)), max_dim=3, zero=0)
        x = floats(rng, lead + (m, k), specials=0, scale=1.0)
        wt = floats(rng, (k, n), specials=0, scale=0.3)
        bshape = [(n,), (1, n), (m, n), (m, 1), (), (1,)][int(rng.integers(0, 6))]
        bias = floats(rng, bshape, specials=0)
        activation = str(rng.choice([a[0] for a in act_nodes] + ["none"]))
        use_gemm = not lead and rng.random() < 0.4
        trans_b = use_gemm and rng.random() < 0.5
        if trans_b:
            wt = np.ascontiguousarray(wt.T)

        def nodes(i, o, activation=activation, use_gemm=use_gemm, trans_b=trans_b):
            if use_gemm:
                ns = [helper.make_node("Gemm", [i[0], i[1]], ["mm"], transB=int(trans_b))]
            else:
                ns = [helper.make_node("MatMul", [i[0], i[1]], ["mm"])]
            ns.append(helper.make_node("Add", ["mm", i[2]] if rng.random() < 0.5 else [i[2], "mm"], ["add"]))
            ns += act(activation, "add", o[0]) if activation != "none" else [helper.make_node("Identity", ["add"], o)]
            return ns
        yield Case("fusion", "MatMul+", [x, wt, bias], out_types=[F32], opset=20, consts=(1, 2), nodes=nodes,
                   rtol=1e-4, atol=1e-4)
    for _ in range(20):  # spelled-out LayerNormalization and GELU
        shape = (2, int(rng.integers(1, 5)), int(rng.integers(1, 9)))
        axes = [-1] if rng.random() < 0.6 else ([-2, -1] if rng.random() < 0.5 else [1])
        gamma = floats(rng, shape[-1:], specials=0)
        beta = floats(rng, shape[-1:], specials=0)

        def nodes(i, o, axes=axes):
            return [helper.make_node("ReduceMean", [i[0]], ["m"], axes=axes),
                    helper.make_node("Sub", [i[0], "m"], ["d"]),
                    helper.make_node("Pow", ["d", i[3]], ["p"]),
                    helper.make_node("ReduceMean", ["p"], ["v"], axes=axes),
                    helper.make_node("Add", ["v", i[4]], ["ve"]),
                    helper.make_node("Sqrt", ["ve"], ["s"]),
                    helper.make_node("Div", ["d", "s"], ["n"]),
                    helper.make_node("Mul", ["n", i[1]], ["g"]),
                    helper.make_node("Add", ["g", i[2]], o)]
        yield Case("fusion", "LayerNormPrims", [floats(rng, shape, specials=0), gamma, beta, np.array(2.0, F32),
                                                np.array(1e-5, F32)], out_types=[F32], opset=13, consts=(1, 2, 3, 4),
                   nodes=nodes, rtol=1e-4, atol=1e-4)

        def gelu(i, o):
            return [helper.make_node("Div", [i[0], i[1]], ["q"]), helper.make_node("Erf", ["q"], ["e"]),
                    helper.make_node("Add", ["e", i[2]], ["e1"]), helper.make_node("Mul", [i[0], "e1"], ["xm"]),
                    helper.make_node("Mul", ["xm", i[3]], o)]
        yield Case("fusion", "GeluPrims", [floats(rng, shape, specials=0.05), np.array(1.4142135, F32),
                                           np.array(1.0, F32), np.array(0.5, F32)], out_types=[F32], opset=13,
                   consts=(1, 2, 3), nodes=gelu, rtol=1e-4, atol=1e-5)
    for _ in range(25):  # attention
        b, heads, s, t, d = 1, int(rng.integers(1, 4)), int(rng.integers(1, 9)), int(rng.integers(1, 9)), \
            int(rng.choice([4, 8, 16]))
        q, kt, v = floats(rng, (b, heads, s, d), specials=0), floats(rng, (b, heads, d, t), specials=0), \
            floats(rng, (b, heads, t, d), specials=0)
        mshape = [(b, heads, s, t), (1, 1, s, t), (t,), (1, 1, 1, t), (b, 1, s, t)][int(rng.integers(0, 5))]
        mask = np.where(rng.random(mshape) < 0.2, -1e4, floats(rng, mshape, specials=0)).astype(F32)
        scale_op = str(rng.choice(["Mul", "Div", "none"]))
        use_mask = rng.random() < 0.6

        def attn(i, o, scale_op=scale_op, use_mask=use_mask):
            ns = [helper.make_node("MatMul", [i[0], i[1]], ["qk"])]
            cur = "qk"
            if scale_op != "none":
                ns.append(helper.make_node(scale_op, [cur, i[4]], ["sc"]))
                cur = "sc"
            if use_mask:
                ns.append(helper.make_node("Add", [cur, i[3]], ["mk"]))
                cur = "mk"
            ns += [helper.make_node("Softmax", [cur], ["sm"], axis=-1), helper.make_node("MatMul", ["sm", i[2]], o)]
            return ns
        yield Case("fusion", "Attention", [q, kt, v, mask, np.array(float(rng.choice([0.125, 0.35])), F32)],
                   out_types=[F32], opset=13, consts=(4,), nodes=attn, rtol=1e-4, atol=1e-5)
