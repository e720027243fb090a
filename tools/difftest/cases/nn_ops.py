"""Convolutions, pools, Resize, normalizations, recurrent nets, detection, attention, large sizes."""
import itertools

import numpy as np

from .common import Case, F32, F64, axis_of, floats, ints, rand_shape


def conv_geometry(rng, nd):
    """A kernel shape and random strides, dilations and pads or auto_pad for an nd-dimensional window."""
    attrs = {}
    kernel = [int(rng.integers(1, 4)) for _ in range(nd)]
    if rng.random() < 0.4:
        attrs["strides"] = [int(rng.integers(1, 4)) for _ in range(nd)]
    if rng.random() < 0.4:
        attrs["dilations"] = [int(rng.integers(1, 3)) for _ in range(nd)]
    r = rng.random()
    if r < 0.25:
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    elif r < 0.7:
        attrs["pads"] = [int(rng.integers(0, 3)) for _ in range(2 * nd)]
    if rng.random() < 0.3:
        attrs["kernel_shape"] = kernel
    return kernel, attrs


def weights_and_bias(rng, x, w_shape, out_channels):
    """A convolution's inputs after X: weights, half the time a bias; each a constant half the time."""
    inputs = [x, floats(rng, w_shape, specials=0)]
    if rng.random() < 0.5:
        inputs.append(floats(rng, (out_channels,), specials=0))
    return inputs, [i for i in (1, 2) if i < len(inputs) and rng.random() < 0.5]


def conv(rng):
    for _ in range(90):
        nd = int(rng.choice([1, 2, 2, 2, 3]))
        kernel, attrs = conv_geometry(rng, nd)
        group = int(rng.choice([1, 1, 2, 3]))
        cin_g, cout_g = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        if rng.random() < 0.2:  # depthwise
            cin_g, cout_g = 1, int(rng.integers(1, 3))
            group = int(rng.integers(2, 6))
        if group > 1:
            attrs["group"] = group
        n = int(rng.integers(1, 3))
        dil = attrs.get("dilations", [1] * nd)
        pads = attrs.get("pads", [0] * 2 * nd)
        spatial = []
        for d in range(nd):
            need = dil[d] * (kernel[d] - 1) + 1 - pads[d] - pads[d + nd]
            spatial.append(max(need, 1) + int(rng.integers(0, 6)))
        x = floats(rng, (n, cin_g * group, *spatial), specials=0)
        inputs, consts = weights_and_bias(rng, x, (cout_g * group, cin_g, *kernel), cout_g * group)
        yield Case("conv", "Conv", inputs, attrs, opset=11, consts=consts, rtol=1e-4, atol=1e-4)


def conv_transpose(rng):
    for _ in range(70):
        nd = int(rng.choice([1, 2, 2, 3]))
        kernel, attrs = conv_geometry(rng, nd)
        group = int(rng.choice([1, 1, 2]))
        cin_g, cout_g = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        if group > 1:
            attrs["group"] = group
        strides = attrs.get("strides", [1] * nd)
        dil = attrs.get("dilations", [1] * nd)
        spatial = [int(rng.integers(1, 6)) for _ in range(nd)]
        r = rng.random()
        if r < 0.3:
            attrs["output_padding"] = [int(rng.integers(0, max(strides[d], dil[d]))) for d in range(nd)]
        elif r < 0.5:
            attrs.pop("pads", None)
            base = [strides[d] * (spatial[d] - 1) + dil[d] * (kernel[d] - 1) + 1 for d in range(nd)]
            attrs["output_shape"] = [b + int(rng.integers(0, strides[d])) for d, b in enumerate(base)]
            if rng.random() < 0.3:
                attrs["output_shape"] = [1, 1] + attrs["output_shape"]
        if attrs.get("auto_pad") == "VALID" and "output_shape" in attrs:
            attrs.pop("output_shape")
        x = floats(rng, (int(rng.integers(1, 3)), cin_g * group, *spatial), specials=0)
        inputs, consts = weights_and_bias(rng, x, (cin_g * group, cout_g, *kernel), cout_g * group)
        yield Case("conv_transpose", "ConvTranspose", inputs, attrs, opset=11, consts=consts, rtol=1e-4, atol=1e-4)


def pool(rng):
    for op, _ in itertools.product(["MaxPool", "AveragePool", "LpPool"], range(30)):
        nd = int(rng.choice([1, 2, 2, 3]))
        kernel, attrs = conv_geometry(rng, nd)
        attrs["kernel_shape"] = kernel
        if op != "MaxPool":
            attrs.pop("dilations", None)  # AveragePool-19 has dilations, ORT's older support varies
        pads = attrs.get("pads", [0] * 2 * nd)
        attrs["pads"] = [min(p, kernel[i % nd] - 1) for i, p in enumerate(pads)] if "pads" in attrs else None
        if attrs["pads"] is None:
            attrs.pop("pads")
        opset = 12 if op == "MaxPool" else 11
        if op != "LpPool" and rng.random() < 0.5:
            attrs["ceil_mode"] = 1
        if op == "AveragePool" and rng.random() < 0.5:
            attrs["count_include_pad"] = 1
        if op == "LpPool" and rng.random() < 0.5:
            attrs["p"] = int(rng.choice([1, 2, 3]))
        dil = attrs.get("dilations", [1] * nd)
        spatial = [dil[d] * (kernel[d] - 1) + 1 + int(rng.integers(0, 5)) for d in range(nd)]
        dtype = F32 if op != "MaxPool" else rng.choice([F32, F64, np.int8, np.uint8])
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
        x = ints(rng, shape, dtype) if np.issubdtype(dtype, np.integer) else floats(rng, shape, dtype, specials=0.02)
        if op == "LpPool":
            x = floats(rng, shape, dtype, specials=0)
        outs = [dtype]
        if op == "MaxPool" and rng.random() < 0.3 and dtype in (F32, F64):
            outs.append(np.int64)
            if rng.random() < 0.5:
                attrs["storage_order"] = 1
        yield Case("pool", op, [x], attrs, out_types=outs, opset=opset, rtol=1e-5, atol=1e-5)
    for op in ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"]:
        for _ in range(4):
            shape = (1, 2, *rand_shape(rng, rng.integers(1, 4), zero=0))
            yield Case("pool", op, [floats(rng, shape, specials=0)], opset=2 if op == "GlobalLpPool" else 1,
                       rtol=1e-5, atol=1e-5)


def resize(rng):
    transforms = ["half_pixel", "asymmetric", "pytorch_half_pixel", "align_corners", "tf_crop_and_resize",
                  "half_pixel_symmetric"]
    for _ in range(160):
        rank = int(rng.choice([2, 3, 4, 4, 4]))
        shape = (1, int(rng.integers(1, 3))) + tuple(int(rng.integers(1, 7)) for _ in range(rank - 2)) if rank > 2 \
            else tuple(int(rng.integers(1, 7)) for _ in range(rank))
        mode = str(rng.choice(["nearest", "linear", "cubic"]))
        opset = int(rng.choice([13, 18, 19]))
        attrs = {"mode": mode}
        ct = str(rng.choice(transforms[:5] + (transforms[5:] if opset >= 19 else [])))
        attrs["coordinate_transformation_mode"] = ct
        if mode == "nearest":
            attrs["nearest_mode"] = str(rng.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
        if mode == "cubic":
            if rng.random() < 0.5:
                attrs["cubic_coeff_a"] = float(rng.choice([-0.5, -0.75]))
            if rng.random() < 0.5:
                attrs["exclude_outside"] = 1
        spatial = list(range(rank)) if mode == "nearest" or rank <= 2 else list(range(2, rank))
        if mode != "nearest" and rank > 2 and rank - 2 > 3:
            continue
        roi = None
        if ct == "tf_crop_and_resize":
            lo = [0.0] * rank
            hi = [1.0] * rank
            for d in spatial:
                lo[d] = float(rng.choice([0.0, 0.1, 0.25, -0.2]))
                hi[d] = float(rng.choice([1.0, 0.8, 0.6, 1.2]))
            roi = np.array(lo + hi, dtype=F32)
            if rng.random() < 0.5:
                attrs["extrapolation_value"] = float(rng.choice([0.0, -1.0, 5.0]))
        use_sizes = rng.random() < 0.5
        scales = sizes = None
        if use_sizes:
            sizes = np.array([shape[d] if d not in spatial else int(rng.integers(1, 10)) for d in range(rank)],
                             dtype=np.int64)
            if opset >= 18 and rng.random() < 0.3:
                attrs["keep_aspect_ratio_policy"] = str(rng.choice(["not_larger", "not_smaller"]))
        else:
            scales = np.array([1.0 if d not in spatial else float(rng.choice([0.5, 0.6, 1.0, 1.5, 2.0, 3.0, 0.34, 2.5]))
                               for d in range(rank)], dtype=F32)
        if opset >= 18 and mode != "nearest" and rng.random() < 0.25:
            attrs["antialias"] = 1
        if opset >= 18 and rng.random() < 0.2 and rank == 4:
            axes = [2, 3] if rng.random() < 0.5 else [-2, -1]
            attrs["axes"] = axes
            if sizes is not None:
                sizes = sizes[2:]
            else:
                scales = scales[2:]
            if roi is not None:
                roi = np.concatenate([roi[2:4], roi[6:8]])
        x = floats(rng, shape, specials=0)
        if ct == "tf_crop_and_resize" and roi is None:
            continue
        if opset >= 18 and roi is None and rng.random() < 0.5:
            inputs = [x, None, scales, sizes]
        else:
            inputs = [x, roi if roi is not None else np.zeros(0, F32),
                      scales if scales is not None else np.zeros(0, F32)] + ([sizes] if sizes is not None else [])
        if opset == 13 and "keep_aspect_ratio_policy" in attrs:
            continue
        while inputs and inputs[-1] is None:
            inputs.pop()
        consts = [i for i in range(1, len(inputs)) if inputs[i] is not None]
        yield Case("resize", "Resize", inputs, attrs, opset=opset, consts=consts, rtol=1e-4, atol=1e-5)


def normalization(rng):
    for _ in range(30):
        rank = int(rng.integers(1, 5))
        shape = rand_shape(rng, rank, zero=0.02)
        axis = axis_of(rng, rank) if rng.random() < 0.7 else -1
        norm_shape = shape[axis % rank:]
        if rng.random() < 0.3:
            norm_shape = tuple(1 if rng.random() < 0.5 else d for d in norm_shape)
        inputs = [floats(rng, shape, specials=0), floats(rng, norm_shape, specials=0)]
        if rng.random() < 0.5:
            inputs.append(floats(rng, norm_shape, specials=0))
        attrs = {"axis": axis}
        if rng.random() < 0.4:
            attrs["epsilon"] = float(rng.choice([1e-3, 0.1]))
        outs = [F32] + ([F32, F32][:int(rng.integers(0, 3))] if rng.random() < 0.3 else [])
        yield Case("layernorm", "LayerNormalization", inputs, attrs, out_types=outs, opset=17, rtol=1e-4, atol=1e-4,
                   consts=[i for i in (1, 2) if i < len(inputs) and rng.random() < 0.5])
    for _ in range(15):
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + rand_shape(rng, int(rng.integers(1, 3)), zero=0)
        c = shape[1]
        yield Case("instancenorm", "InstanceNormalization",
                   [floats(rng, shape, specials=0), floats(rng, (c,), specials=0), floats(rng, (c,), specials=0)],
                   {"epsilon": float(rng.choice([1e-5, 0.1]))}, opset=6, rtol=1e-4, atol=1e-4)
        yield Case("batchnorm", "BatchNormalization",
                   [floats(rng, shape, specials=0), floats(rng, (c,), specials=0), floats(rng, (c,), specials=0),
                    floats(rng, (c,), specials=0), np.abs(floats(rng, (c,), specials=0))],
                   {"epsilon": 1e-3}, opset=15, rtol=1e-4, atol=1e-4, consts=(1, 2, 3, 4))
        groups = int(rng.choice([g for g in (1, 2, 3) if c % g == 0]))
        yield Case("groupnorm", "GroupNormalization",
                   [floats(rng, shape, specials=0), floats(rng, (c,), specials=0), floats(rng, (c,), specials=0)],
                   {"num_groups": groups}, opset=21, rtol=1e-4, atol=1e-4)
        yield Case("lrn", "LRN", [floats(rng, (1, c + 2, 3, 2), specials=0)],
                   {"size": int(rng.choice([1, 3, 5])), "alpha": 1e-2, "beta": 0.75, "bias": 1.0}, opset=13,
                   rtol=1e-4, atol=1e-5)
        yield Case("mvn", "MeanVarianceNormalization", [floats(rng, (2, 3, 2, 4), specials=0)], opset=13,
                   rtol=1e-4, atol=1e-4)
        yield Case("lpnorm", "LpNormalization", [floats(rng, shape, specials=0)],
                   {"axis": axis_of(rng, len(shape)), "p": int(rng.choice([1, 2]))}, opset=1, rtol=1e-5, atol=1e-6)


def rnn(rng):
    for op, _ in itertools.product(["LSTM", "GRU", "RNN"], range(20)):
        seq, batch, inp, hidden = (int(rng.integers(1, 4)) for _ in range(4))
        direction = str(rng.choice(["forward", "reverse", "bidirectional"]))
        dirs = 2 if direction == "bidirectional" else 1
        gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
        layout = 0  # ORT has no batch-major layout
        attrs = {"hidden_size": hidden, "direction": direction}
        if layout:
            attrs["layout"] = 1
        x = floats(rng, (batch, seq, inp) if layout else (seq, batch, inp), specials=0, scale=1.0)
        w = floats(rng, (dirs, gates * hidden, inp), specials=0, scale=0.5)
        r = floats(rng, (dirs, gates * hidden, hidden), specials=0, scale=0.5)
        b = floats(rng, (dirs, 2 * gates * hidden), specials=0, scale=0.5) if rng.random() < 0.7 else None
        lens = rng.integers(1, seq + 1, batch).astype(np.int32) if rng.random() < 0.4 else None
        hshape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
        h0 = floats(rng, hshape, specials=0) if rng.random() < 0.5 else None
        inputs = [x, w, r, b, lens, h0]
        if op == "LSTM":
            inputs.append(floats(rng, hshape, specials=0) if rng.random() < 0.5 else None)
            if rng.random() < 0.3:
                inputs.append(floats(rng, (dirs, 3 * hidden), specials=0))
            if rng.random() < 0.3:
                attrs["input_forget"] = 1
        if op == "GRU" and rng.random() < 0.5:
            attrs["linear_before_reset"] = 1
        if rng.random() < 0.3:
            attrs["clip"] = float(rng.choice([0.5, 2.0]))
        if rng.random() < 0.3:
            acts = {"LSTM": 3, "GRU": 2, "RNN": 1}[op] * dirs
            choice = ["Sigmoid", "Tanh", "Relu", "HardSigmoid", "LeakyRelu", "ScaledTanh", "Elu", "Softsign",
                      "Softplus", "ThresholdedRelu", "Affine"]
            attrs["activations"] = [str(rng.choice(choice[:3])) for _ in range(acts)]
        while inputs[-1] is None:
            inputs.pop()
        n_out = int(rng.integers(1, 4 if op == "LSTM" else 3))
        consts = [i for i in (1, 2, 3) if i < len(inputs) and inputs[i] is not None and rng.random() < 0.5]
        yield Case("rnn", op, inputs, attrs, out_types=[F32] * n_out, opset=14, consts=consts, rtol=1e-4, atol=1e-5)


def detection(rng):
    for _ in range(25):
        batches, classes, boxes = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(0, 8))
        corners = rng.uniform(0, 10, (batches, boxes, 4)).astype(F32)
        center = int(rng.integers(0, 2))
        if rng.random() < 0.3:
            corners[..., :] = np.round(corners)
        scores = np.round(rng.uniform(0, 1, (batches, classes, boxes)), 1).astype(F32)  # ties
        inputs = [corners, scores]
        if rng.random() < 0.8:
            inputs.append(np.array([int(rng.integers(0, 5))], np.int64))
            if rng.random() < 0.8:
                inputs.append(np.array([float(rng.choice([0.0, 0.3, 0.5, 1.0]))], F32))
                if rng.random() < 0.6:
                    inputs.append(np.array([float(rng.choice([0.0, 0.2, 0.5]))], F32))
        yield Case("nms", "NonMaxSuppression", inputs, {"center_point_box": center}, out_types=[np.int64], opset=11,
                   consts=[i for i in range(2, len(inputs))])
    for _ in range(25):
        n, c, h, w = 1, int(rng.integers(1, 3)), int(rng.integers(2, 8)), int(rng.integers(2, 8))
        r = int(rng.integers(1, 4))
        x1, y1 = rng.uniform(-1, w, r), rng.uniform(-1, h, r)
        rois = np.stack([x1, y1, x1 + rng.uniform(0, 5, r), y1 + rng.uniform(0, 5, r)], 1).astype(F32)
        attrs = {"mode": str(rng.choice(["avg", "max"])), "output_height": int(rng.integers(1, 4)),
                 "output_width": int(rng.integers(1, 4)), "sampling_ratio": int(rng.choice([0, 1, 2])),
                 "spatial_scale": float(rng.choice([1.0, 0.5]))}
        opset = 16 if rng.random() < 0.7 else 10
        if opset == 16:
            attrs["coordinate_transformation_mode"] = str(rng.choice(["half_pixel", "output_half_pixel"]))
        yield Case("roialign", "RoiAlign", [floats(rng, (n, c, h, w), specials=0), rois, np.zeros(r, np.int64)], attrs,
                   opset=opset, rtol=1e-4, atol=1e-5)
    for _ in range(30):
        nd = 2 if rng.random() < 0.8 else 3
        n, c = 1, int(rng.integers(1, 3))
        spatial = tuple(int(rng.integers(1, 6)) for _ in range(nd))
        out_spatial = tuple(int(rng.integers(1, 5)) for _ in range(nd))
        grid = rng.uniform(-1.3, 1.3, (n, *out_spatial, nd)).astype(F32)
        mode = str(rng.choice(["linear", "nearest", "cubic"] if nd == 2 else ["linear", "nearest"]))
        attrs = {"mode": mode, "padding_mode": str(rng.choice(["zeros", "border", "reflection"])),
                 "align_corners": int(rng.integers(0, 2))}
        yield Case("gridsample", "GridSample", [floats(rng, (n, c, *spatial), specials=0), grid], attrs, opset=20,
                   rtol=1e-4, atol=1e-5)


def big(rng):
    """Sizes that reach the packed GEMM's and the convolutions' vector kernels, tails and tiling: odd channel
    counts, 3x3 stride 1 (Winograd, oneDNN), 1x1, depthwise, K and N past a tile."""
    for _ in range(40):
        c, oc = int(rng.choice([3, 8, 17, 32, 48, 64])), int(rng.choice([5, 16, 31, 64, 96]))
        k = int(rng.choice([1, 3, 3, 3, 5, 7]))
        group = 1
        if rng.random() < 0.25:
            group, oc = c, c * int(rng.choice([1, 2]))
        h, w = int(rng.integers(k, 40)), int(rng.integers(k, 40))
        attrs = {"pads": [k // 2] * 4} if rng.random() < 0.7 else {}
        if rng.random() < 0.3:
            attrs["strides"] = [int(rng.choice([1, 2])), int(rng.choice([1, 2]))]
        if rng.random() < 0.15:
            attrs["dilations"] = [2, 2]
        if group > 1:
            attrs["group"] = group
        x = floats(rng, (int(rng.choice([1, 1, 2])), c, h, w), specials=0, scale=1.0)
        wt = floats(rng, (oc, c // group, k, k), specials=0, scale=0.2)
        inputs = [x, wt] + ([floats(rng, (oc,), specials=0)] if rng.random() < 0.7 else [])
        consts = (1, 2) if rng.random() < 0.8 else ()
        yield Case("big", "Conv", inputs, attrs, opset=11, consts=consts, rtol=1e-4, atol=2e-4)
    for _ in range(30):
        m, k, n = (int(rng.choice([1, 7, 16, 33, 64, 100, 257])) for _ in range(3))
        lead = rand_shape(rng, int(rng.integers(0, 2)), max_dim=3, zero=0)
        a = floats(rng, lead + (m, k), specials=0, scale=1.0)
        b = floats(rng, (k, n), specials=0, scale=0.2)
        yield Case("big", "MatMul", [a, b], opset=13, consts=(1,) if rng.random() < 0.7 else (), rtol=1e-4, atol=2e-4)
        trans_b = int(rng.integers(0, 2))
        if not lead:
            c = floats(rng, [(n,), (m, n), (1, n), (m, 1)][int(rng.integers(0, 4))], specials=0)
            yield Case("big", "Gemm", [a, np.ascontiguousarray(b.T) if trans_b else b, c],
                       {"transB": trans_b, "alpha": float(rng.choice([1.0, 0.5]))}, opset=13,
                       consts=(1, 2) if rng.random() < 0.7 else (), rtol=1e-4, atol=2e-4)
    for _ in range(15):
        c, oc = int(rng.choice([4, 16, 33])), int(rng.choice([8, 16, 24]))
        k, s = int(rng.choice([2, 3, 4])), int(rng.choice([1, 2]))
        x = floats(rng, (1, c, int(rng.integers(3, 20)), int(rng.integers(3, 20))), specials=0, scale=1.0)
        wt = floats(rng, (c, oc, k, k), specials=0, scale=0.2)
        attrs = {"strides": [s, s], "pads": [k // 2] * 4 if rng.random() < 0.5 else [0] * 4}
        yield Case("big", "ConvTranspose", [x, wt], attrs, opset=11, consts=(1,), rtol=1e-4, atol=2e-4)
    for _ in range(15):
        shape = (1, int(rng.choice([8, 17, 64])), int(rng.integers(5, 30)), int(rng.integers(5, 30)))
        op = str(rng.choice(["MaxPool", "AveragePool"]))
        k = int(rng.choice([2, 3]))
        attrs = {"kernel_shape": [k, k], "strides": [int(rng.choice([1, 2]))] * 2,
                 "pads": [int(rng.integers(0, k))] * 4}
        if rng.random() < 0.4:
            attrs["ceil_mode"] = 1
        if op == "AveragePool" and rng.random() < 0.5:
            attrs["count_include_pad"] = 1
        yield Case("big", op, [floats(rng, shape, specials=0)], attrs, opset=12 if op == "MaxPool" else 11)
        yield Case("big", "Softmax", [floats(rng, shape[1:], specials=0, scale=5)], {"axis": -1}, opset=13)
        yield Case("big", "LayerNormalization", [floats(rng, shape[1:], specials=0), floats(rng, shape[-1:]),
                                                 floats(rng, shape[-1:])], {"axis": -1}, opset=17, consts=(1, 2),
                   rtol=1e-4, atol=1e-4)


def attention(rng):
    """Attention-23 (grouped heads, 3-D and 4-D layouts, masks, causal, past keys, softcap, scale) and
    RotaryEmbedding-23."""
    for _ in range(60):
        b, s, head = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.choice([2, 4, 8]))
        kv_heads = int(rng.choice([1, 2]))
        q_heads = kv_heads * int(rng.choice([1, 2, 3]))
        past = int(rng.integers(0, 4)) if rng.random() < 0.4 else 0
        kv_len = s if rng.random() < 0.6 else int(rng.integers(1, 6))
        v_head = head if rng.random() < 0.8 else int(rng.choice([3, 5]))
        three_d = rng.random() < 0.3
        attrs = {}
        if three_d:
            q = floats(rng, (b, s, q_heads * head), specials=0)
            k = floats(rng, (b, kv_len, kv_heads * head), specials=0)
            v = floats(rng, (b, kv_len, kv_heads * v_head), specials=0)
            attrs.update(q_num_heads=q_heads, kv_num_heads=kv_heads)
        else:
            q = floats(rng, (b, q_heads, s, head), specials=0)
            k = floats(rng, (b, kv_heads, kv_len, head), specials=0)
            v = floats(rng, (b, kv_heads, kv_len, v_head), specials=0)
        total = past + kv_len
        mask = None
        r = rng.random()
        if r < 0.3:
            mshape = [(s, total), (1, 1, s, total), (b, q_heads, s, total), (b, 1, s, total)][int(rng.integers(0, 4))]
            mask = floats(rng, mshape, specials=0)
            mask = np.where(rng.random(mshape) < 0.2, -np.inf, mask).astype(F32)
        elif r < 0.5:
            mask = rng.random((s, total)) < 0.7
            mask[:, 0] = True
        if rng.random() < 0.3:
            attrs["is_causal"] = 1
        if rng.random() < 0.3:
            attrs["scale"] = float(rng.choice([0.1, 1.0]))
        if rng.random() < 0.2:
            attrs["softcap"] = float(rng.choice([1.0, 5.0]))
        inputs = [q, k, v, mask]
        outs = [F32]
        if past:
            inputs += [floats(rng, (b, kv_heads, past, head), specials=0), floats(rng, (b, kv_heads, past, v_head),
                                                                                   specials=0)]
            outs += [F32, F32]
        while inputs[-1] is None:
            inputs.pop()
        yield Case("attention", "Attention", inputs, attrs, out_types=outs, opset=23, rtol=1e-4, atol=1e-5)
    for _ in range(40):
        b, s, heads, head = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 4)), \
            int(rng.choice([4, 8, 6]))
        rot = head if rng.random() < 0.6 else int(rng.choice([d for d in (2, 4) if d <= head]))
        attrs = {}
        if rot != head:
            attrs["rotary_embedding_dim"] = rot
        if rng.random() < 0.5:
            attrs["interleaved"] = 1
        four_d = rng.random() < 0.5
        x = floats(rng, (b, heads, s, head) if four_d else (b, s, heads * head), specials=0)
        if not four_d:
            attrs["num_heads"] = heads
        max_pos = s + int(rng.integers(0, 5))
        use_ids = rng.random() < 0.6
        if use_ids:
            cos, sin = floats(rng, (max_pos, rot // 2), specials=0), floats(rng, (max_pos, rot // 2), specials=0)
            ids = rng.integers(0, max_pos, (b, s)).astype(np.int64)
            inputs = [x, cos, sin, ids]
        else:
            inputs = [x, floats(rng, (b, s, rot // 2), specials=0), floats(rng, (b, s, rot // 2), specials=0)]
        yield Case("attention", "RotaryEmbedding", inputs, attrs, opset=23, rtol=1e-5, atol=1e-5)


def other_nn(rng):
    """Losses, AffineGrid, DeformConv, signal windows, STFT, MaxUnpool, MaxRoiPool and Upsample."""
    for op, _ in itertools.product(["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"], range(10)):
        n, c = int(rng.integers(1, 4)), int(rng.integers(2, 5))
        extra = rand_shape(rng, int(rng.integers(0, 3)), max_dim=3, zero=0)
        scores = floats(rng, (n, c) + extra, specials=0)
        labels = rng.integers(0, c, (n,) + extra).astype(np.int64)
        attrs = {"reduction": str(rng.choice(["none", "sum", "mean"]))}
        if rng.random() < 0.4:
            attrs["ignore_index"] = int(rng.integers(0, c))
        inputs = [scores, labels] + ([np.abs(floats(rng, (c,), specials=0))] if rng.random() < 0.5 else [])
        outs = [F32] + ([F32] if op == "SoftmaxCrossEntropyLoss" and rng.random() < 0.5 else [])
        yield Case("other_nn", op, inputs, attrs, out_types=outs, opset=13, rtol=1e-4, atol=1e-5)
    for _ in range(8):
        nd = int(rng.choice([2, 3]))
        theta = floats(rng, (2, nd, nd + 1), specials=0, scale=1.0)
        size = np.array([2, 1] + [int(rng.integers(1, 5)) for _ in range(nd)], np.int64)
        yield Case("other_nn", "AffineGrid", [theta, size], {"align_corners": int(rng.integers(0, 2))}, opset=20,
                   consts=(1,), rtol=1e-5, atol=1e-6)
    for _ in range(10):
        c, oc, kh, kw = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 3)), \
            int(rng.integers(1, 3))
        h, w = int(rng.integers(kh, 6)), int(rng.integers(kw, 6))
        oh, ow = h - kh + 1, w - kw + 1
        inputs = [floats(rng, (1, c, h, w), specials=0), floats(rng, (oc, c, kh, kw), specials=0),
                  floats(rng, (1, 2 * kh * kw, oh, ow), specials=0, scale=1.0)]
        if rng.random() < 0.5:
            inputs.append(floats(rng, (oc,), specials=0))
            if rng.random() < 0.5:
                inputs.append(rng.uniform(0, 1, (1, kh * kw, oh, ow)).astype(F32))
        yield Case("other_nn", "DeformConv", inputs, opset=19, rtol=1e-4, atol=1e-5)
    for op in ["HannWindow", "HammingWindow", "BlackmanWindow"]:
        for size in (1, 2, 5, 8):
            yield Case("other_nn", op, [np.array(size, np.int64)], {"periodic": int(rng.integers(0, 2))},
                       out_types=[F32], opset=17, rtol=1e-5, atol=1e-6)
    for _ in range(8):
        length, frame = int(rng.integers(8, 20)), int(rng.choice([4, 8]))
        step = int(rng.integers(1, frame + 1))
        inputs = [floats(rng, (1, length, 1), specials=0), np.array(step, np.int64),
                  np.hanning(frame).astype(F32) if rng.random() < 0.5 else None, np.array(frame, np.int64)]
        yield Case("other_nn", "STFT", inputs, {"onesided": int(rng.integers(0, 2))}, opset=17, consts=(1, 3),
                   rtol=1e-4, atol=1e-4)
    for _ in range(8):
        x = floats(rng, (1, 2, 2, 2), specials=0)
        idx = np.stack([rng.permutation(16)[:4] for _ in range(2)]).reshape(1, 2, 2, 2).astype(np.int64)
        idx = idx + np.arange(2).reshape(1, 2, 1, 1) * 16
        attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
        inputs = [x, idx] + ([np.array([1, 2, 5, 4], np.int64)] if rng.random() < 0.5 else [])
        yield Case("other_nn", "MaxUnpool", inputs, attrs, opset=11)
        rois = np.array([[0, 0, 0, 3, 3], [0, 1, 1, 4, 2]], F32)
        yield Case("other_nn", "MaxRoiPool", [floats(rng, (1, 2, 5, 6), specials=0), rois],
                   {"pooled_shape": [int(rng.integers(1, 3)), int(rng.integers(1, 3))],
                    "spatial_scale": float(rng.choice([1.0, 0.5]))}, opset=1)
        yield Case("other_nn", "Upsample", [floats(rng, (1, 1, 2, 3), specials=0),
                                            np.array([1, 1, float(rng.choice([1.5, 2, 3])), 2], F32)],
                   {"mode": str(rng.choice(["nearest", "linear"]))}, opset=9, consts=(1,), rtol=1e-5, atol=1e-6)
