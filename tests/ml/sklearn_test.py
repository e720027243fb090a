#!/usr/bin/python3
"""scikit-learn models run through `onnxserve run`, compared with scikit-learn itself.

Each case trains a small model on one of scikit-learn's bundled datasets (iris, wine, breast_cancer,
diabetes), converts it BY HAND into an ai.onnx.ml graph with onnx.helper (no converter package exists in
Debian), runs the graph with the onnxserve CLI on input_K.pb files, and compares: labels exactly, and
scores, probabilities and transformed features with predict_proba / decision_function / transform / predict
within RTOL relative (probabilities that ZipMap turns into a sequence of maps, one per row, too) (plus ATOL_SCALE times the largest expected magnitude of the output, so that values that
cancel to nearly zero are judged against the output's scale, not their own).

The converters follow the layouts the ai.onnx.ml spec and ONNX Runtime use: libsvm's one-vs-one
coefficients for SVC, one-column binary scores, per-class tree votes. Exits 77 (skipped) when numpy, onnx or
scikit-learn is missing.

Usage: sklearn_test.py --onnxserve build/cli/onnxserve [--keep DIR] [-k SUBSTRING]
"""
import argparse
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    import sklearn
    from sklearn import datasets, ensemble, feature_extraction, linear_model, preprocessing, svm, tree
    from sklearn.impute import SimpleImputer
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: {e.name} is not installed (Debian: python3-numpy python3-onnx python3-sklearn)")
    sys.exit(77)

RTOL = 1e-5
ATOL_SCALE = 1e-6
ML_OPSET = 3
SEED = 0


# ---------------------------------------------------------------------------------------------- data


def dataset(name):
    loader = {"iris": datasets.load_iris, "wine": datasets.load_wine,
              "breast_cancer": datasets.load_breast_cancer, "diabetes": datasets.load_diabetes}[name]
    x, y = loader(return_X_y=True)
    return x.astype(np.float64), y


def standardized(name):
    x, y = dataset(name)
    return preprocessing.StandardScaler().fit_transform(x), y


# ---------------------------------------------------------------------------------------------- graphs

ELEM = {np.dtype(np.float64): TensorProto.DOUBLE, np.dtype(np.float32): TensorProto.FLOAT,
        np.dtype(np.int64): TensorProto.INT64, np.dtype(object): TensorProto.STRING}


def input_info(name, value):
    """A graph input for a numpy array, or for a dict (a map of its key type to double)."""
    if isinstance(value, dict):
        return helper.make_value_info(name, map_type(next(iter(value)), TensorProto.DOUBLE))
    return helper.make_tensor_value_info(name, ELEM[value.dtype], [None] * value.ndim)


def map_type(key, value_elem_type):
    """The TypeProto map(key's type, tensor(value_elem_type)), for a sample key (str or int)."""
    t = onnx.TypeProto()
    t.map_type.key_type = TensorProto.STRING if isinstance(key, str) else TensorProto.INT64
    t.map_type.value_type.tensor_type.elem_type = value_elem_type
    return t


def graph_model(nodes, inputs, outputs, initializers=(), ml_opset=ML_OPSET, onnx_opset=13):
    """A model of `nodes`; inputs are (name, numpy array or dict) pairs, outputs (name, elem type, rank)
    triples."""
    graph = helper.make_graph(
        nodes, "sklearn",
        [input_info(n, a) for n, a in inputs],
        [helper.make_tensor_value_info(n, t, [None] * rank) for n, t, rank in outputs],
        initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", onnx_opset),
                                                   helper.make_opsetid("ai.onnx.ml", ml_opset)])


def ml_node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, domain="ai.onnx.ml", **attrs)


def floats(values):
    return [float(v) for v in np.ravel(values)]


def ints(values):
    return [int(v) for v in np.ravel(values)]


def double_tensor(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.float64).ravel(), name)


def label_attrs(classes, ints_name="classlabels_ints"):
    if classes.dtype.kind in "OUS":
        return {"classlabels_strings": [str(c) for c in classes]}
    return {ints_name: ints(classes)}


def label_type(classes):
    return TensorProto.STRING if classes.dtype.kind in "OUS" else TensorProto.INT64


def classifier_model(op, x, classes, attrs, ints_name="classlabels_ints", ml_opset=ML_OPSET):
    node = ml_node(op, ["X"], ["label", "scores"], **label_attrs(classes, ints_name), **attrs)
    return graph_model([node], [("X", x)], [("label", label_type(classes), 1), ("scores", TensorProto.FLOAT, 2)],
                       ml_opset=ml_opset)


# ---------------------------------------------------------------------------------------------- linear


def linear_classifier(model, x, transform, binary_one_row=True):
    coef, intercept = model.coef_, model.intercept_
    if coef.shape[0] == 1 and not binary_one_row:  # the same binary model as two rows: (-w, w)
        coef, intercept = np.vstack([-coef, coef]), np.concatenate([-intercept, intercept])
    return classifier_model("LinearClassifier", x, model.classes_,
                            {"coefficients": floats(coef), "intercepts": floats(intercept),
                             "post_transform": transform})


def linear_regressor(model, x_name="X", y_name="Y"):
    coef = np.atleast_2d(model.coef_)
    return ml_node("LinearRegressor", [x_name], [y_name], coefficients=floats(coef),
                   intercepts=floats(np.atleast_1d(model.intercept_)), targets=coef.shape[0])


def with_zipmap(model, classes):
    """A classifier model (outputs label, scores) plus ZipMap: its scores as one map {class: score} per row,
    graph output "probabilities" of type seq(map(label type, float))."""
    model.graph.node.append(ml_node("ZipMap", ["scores"], ["probabilities"],
                                    **label_attrs(classes, "classlabels_int64s")))
    sequence = onnx.TypeProto()
    key = str(classes[0]) if classes.dtype.kind in "OUS" else int(classes[0])
    sequence.sequence_type.elem_type.CopyFrom(map_type(key, TensorProto.FLOAT))
    model.graph.output.append(helper.make_value_info("probabilities", sequence))
    return model


def zipmap_cases(r):
    """LogisticRegression -> ZipMap, as converters end classifier pipelines: predict_proba as maps."""
    x, y = dataset("iris")
    names = datasets.load_iris().target_names
    mn = linear_model.LogisticRegression(max_iter=5000).fit(x, names[y])
    r.check("LogisticRegression multinomial -> ZipMap, string labels",
            with_zipmap(linear_classifier(mn, x, "SOFTMAX"), mn.classes_), [x],
            [("labels", mn.predict(x)), None, ("maps", (mn.classes_, mn.predict_proba(x)))])
    x, y = standardized("breast_cancer")
    lr = linear_model.LogisticRegression(max_iter=5000).fit(x, y)
    r.check("LogisticRegression binary -> ZipMap, int labels",
            with_zipmap(linear_classifier(lr, x, "LOGISTIC"), lr.classes_), [x],
            [("labels", lr.predict(x)), None, ("maps", (lr.classes_, lr.predict_proba(x)))])


# ---------------------------------------------------------------------------------------------- svm


def svm_attrs(model):
    """libsvm's own layout and signs: _dual_coef_ and _intercept_ (scikit-learn flips the public ones of a
    binary model), so that a positive decision value votes for the first class of each pair."""
    attrs = {"kernel_type": model.kernel.upper(),
             "kernel_params": [float(model._gamma), float(model.coef0), float(model.degree)],
             "support_vectors": floats(model.support_vectors_),
             "coefficients": floats(model._dual_coef_), "rho": floats(model._intercept_)}
    return attrs


def svm_classifier(model, x):
    attrs = svm_attrs(model)
    attrs["vectors_per_class"] = ints(model.n_support_)
    if model.probability:
        attrs["prob_a"], attrs["prob_b"] = floats(model.probA_), floats(model.probB_)
    return classifier_model("SVMClassifier", x, model.classes_, attrs)


def svm_regressor(model, x, one_class=False):
    attrs = svm_attrs(model)
    attrs["n_supports"] = int(model.support_vectors_.shape[0])
    attrs["one_class"] = int(one_class)
    node = ml_node("SVMRegressor", ["X"], ["Y"], **attrs)
    return graph_model([node], [("X", x)], [("Y", TensorProto.FLOAT, 2)])


# ---------------------------------------------------------------------------------------------- trees


def legacy_tree_attrs(trees, leaf_votes, prefix):
    """The opset 1/3 encoding of scikit-learn trees; leaf_votes(tree_index, tree, node) gives the (target,
    weight) pairs of a leaf. Thresholds go in as doubles (nodes_values_as_tensor): scikit-learn compares
    float32 features with float64 thresholds, and a float threshold could flip a comparison."""
    a = {k: [] for k in ["nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes",
                         "nodes_truenodeids", "nodes_falsenodeids", f"{prefix}_treeids", f"{prefix}_nodeids",
                         f"{prefix}_ids"]}
    values, weights = [], []
    for t, estimator in enumerate(trees):
        tr = estimator.tree_
        for n in range(tr.node_count):
            leaf = tr.children_left[n] == -1
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(n)
            a["nodes_featureids"].append(0 if leaf else int(tr.feature[n]))
            a["nodes_modes"].append("LEAF" if leaf else "BRANCH_LEQ")
            a["nodes_truenodeids"].append(0 if leaf else int(tr.children_left[n]))
            a["nodes_falsenodeids"].append(0 if leaf else int(tr.children_right[n]))
            values.append(0.0 if leaf else float(tr.threshold[n]))
            if leaf:
                for target, weight in leaf_votes(t, tr, n):
                    a[f"{prefix}_treeids"].append(t)
                    a[f"{prefix}_nodeids"].append(n)
                    a[f"{prefix}_ids"].append(int(target))
                    weights.append(float(weight))
    a["nodes_values_as_tensor"] = double_tensor("nodes_values", values)
    a[f"{prefix}_weights_as_tensor"] = double_tensor("weights", weights)
    return a


def class_probability_votes(n_trees, one_column):
    """Forest classifiers: each leaf votes its class frequencies divided by the tree count; a binary model in
    one column (class id 0 holds P(second class)), as converters write it."""
    def votes(_, tr, n):
        p = tr.value[n][0] / tr.value[n][0].sum() / n_trees
        return [(0, p[1])] if one_column else list(enumerate(p))
    return votes


def boosting_votes(model):
    """Gradient boosting: stage s, class k is tree s * K + k; its leaves vote learning_rate * value for k."""
    k_trees = model.estimators_.shape[1]
    def votes(t, tr, n):
        return [(t % k_trees, model.learning_rate * tr.value[n][0][0])]
    return votes


def boosting_init(model, x):
    return model._raw_predict_init(x[:1])[0]


def tree_classifier(trees, classes, x, votes, base_values=None, transform="NONE"):
    attrs = legacy_tree_attrs(trees, votes, "class")
    attrs["post_transform"] = transform
    if base_values is not None:
        attrs["base_values_as_tensor"] = double_tensor("base_values", base_values)
    return classifier_model("TreeEnsembleClassifier", x, classes, attrs, ints_name="classlabels_int64s")


def tree_regressor(trees, x, votes, aggregate, base_values=None):
    attrs = legacy_tree_attrs(trees, votes, "target")
    attrs["aggregate_function"] = aggregate
    attrs["n_targets"] = 1
    if base_values is not None:
        attrs["base_values_as_tensor"] = double_tensor("base_values", base_values)
    node = ml_node("TreeEnsembleRegressor", ["X"], ["Y"], **attrs)
    return graph_model([node], [("X", x)], [("Y", TensorProto.FLOAT, 2)])


def tree_ensemble5(trees, x, leaf_weight, aggregate, base_value=0.0):
    """The same trees in TreeEnsemble-5's encoding (nodes by position, one weight per leaf; aggregate 0
    AVERAGE, 1 SUM); an ai.onnx Add supplies the base value, which TreeEnsemble has no attribute for."""
    features, modes, splits, true_ids, true_leafs, false_ids, false_leafs = [], [], [], [], [], [], []
    roots, leaf_weights = [], []
    for t, estimator in enumerate(trees):
        tr = estimator.tree_
        branch_of, leaf_of = {}, {}
        for n in range(tr.node_count):
            if tr.children_left[n] == -1:
                leaf_of[n] = len(leaf_weights)
                leaf_weights.append(leaf_weight(t, tr, n))
            else:
                branch_of[n] = len(features) + len(branch_of)
        for n in range(tr.node_count):
            if n not in branch_of:
                continue
            features.append(int(tr.feature[n]))
            modes.append(0)  # BRANCH_LEQ
            splits.append(float(tr.threshold[n]))
            for child, ids, leafs in ((tr.children_left[n], true_ids, true_leafs),
                                      (tr.children_right[n], false_ids, false_leafs)):
                ids.append(leaf_of[child] if child in leaf_of else branch_of[child])
                leafs.append(int(child in leaf_of))
        roots.append(branch_of[0] if 0 in branch_of else leaf_of[0])
    node = ml_node("TreeEnsemble", ["X"], ["raw"], n_targets=1, aggregate_function=aggregate,
                   nodes_featureids=features,
                   nodes_modes=numpy_helper.from_array(np.array(modes, dtype=np.uint8), "modes"),
                   nodes_splits=double_tensor("splits", splits),
                   nodes_truenodeids=true_ids, nodes_trueleafs=true_leafs,
                   nodes_falsenodeids=false_ids, nodes_falseleafs=false_leafs,
                   tree_roots=roots, leaf_targetids=[0] * len(leaf_weights),
                   leaf_weights=double_tensor("leaf_weights", leaf_weights))
    add = helper.make_node("Add", ["raw", "base"], ["Y"])
    base = numpy_helper.from_array(np.array([base_value], dtype=np.float64), "base")
    return graph_model([node, add], [("X", x)], [("Y", TensorProto.DOUBLE, 2)], [base], ml_opset=5)


# ---------------------------------------------------------------------------------------------- running


class Runner:
    def __init__(self, onnxserve, folder):
        self.onnxserve = onnxserve
        self.folder = folder  # one subfolder per case
        self.failures = []
        self.passed = 0

    def run(self, name, model, inputs):
        """Writes the model and input_K.pb files, runs `onnxserve run`, returns the outputs as arrays."""
        folder = os.path.join(self.folder, "".join(c if c.isalnum() else "_" for c in name))
        os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
        path = os.path.join(folder, "model.onnx")
        onnx.save(model, path)
        for k, value in enumerate(inputs):
            proto = map_proto(value) if isinstance(value, dict) else numpy_helper.from_array(value)
            with open(os.path.join(folder, "inputs", f"input_{k}.pb"), "wb") as f:
                f.write(proto.SerializeToString())
        outputs = os.path.join(folder, "outputs")
        result = subprocess.run([self.onnxserve, "run", path, "--inputs-dir", os.path.join(folder, "inputs"),
                                 "--outputs-dir", outputs], capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"onnxserve run failed ({result.returncode}): {result.stderr.strip()}")
        values = []
        for k, declared in enumerate(model.graph.output):
            with open(os.path.join(outputs, f"output_{k}.pb"), "rb") as f:
                data = f.read()
            if declared.type.HasField("sequence_type"):
                sequence = onnx.SequenceProto()
                sequence.ParseFromString(data)
                values.append([map_items(m) for m in sequence.map_values])
            else:
                tensor = TensorProto()
                tensor.ParseFromString(data)
                values.append(numpy_helper.to_array(tensor))
        return values

    def check(self, name, model, inputs, expected, atol_scale=ATOL_SCALE):
        """expected: one entry per graph output, ("labels", array) or ("close", array) or None (unchecked), or
        ("maps", (labels, probabilities)) for a sequence of maps {label: probability}, one per row."""
        worst = 0.0  # the largest error / tolerance of the "close" outputs
        try:
            actual = self.run(name, model, inputs)
            problems = []
            for k, spec in enumerate(expected):
                if spec is not None:
                    want = spec[1] if spec[0] == "maps" else np.asarray(spec[1])
                    problem, ratio = compare(spec[0], want, actual[k], atol_scale)
                    worst = max(worst, ratio)
                    if problem:
                        problems.append(f"output {k} ({model.graph.output[k].name}): {problem}")
        except Exception as e:  # a failed run is one failed case, the others still run
            problems = [str(e)]
        if problems:
            self.failures.append(name)
            print(f"FAIL {name}: " + "; ".join(problems))
        else:
            self.passed += 1
            print(f"ok   {name} (worst error {worst:.2f} of the tolerance)")


def map_proto(d):
    """A MapProto of a dict of str or int keys to float64 values, each value a 0-D tensor (as
    numpy_helper.from_dict writes them; onnx 1.12's from_dict cannot take str keys)."""
    proto = onnx.MapProto()
    keys = list(d)
    if isinstance(keys[0], str):
        proto.key_type = TensorProto.STRING
        proto.string_keys.extend(k.encode() for k in keys)
    else:
        proto.key_type = TensorProto.INT64
        proto.keys.extend(int(k) for k in keys)
    proto.values.elem_type = onnx.SequenceProto.TENSOR
    proto.values.tensor_values.extend(numpy_helper.from_array(np.array(d[k], dtype=np.float64)) for k in keys)
    return proto


def map_items(proto):
    """A MapProto as a list of (key, value) pairs in its order."""
    keys = ([k.decode() for k in proto.string_keys] if proto.key_type == TensorProto.STRING else list(proto.keys))
    values = [numpy_helper.to_array(t) for t in proto.values.tensor_values]
    if any(v.shape != () for v in values):
        raise ValueError(f"map values must be 0-D tensors, got shapes {[v.shape for v in values]}")
    return list(zip(keys, [float(v) for v in values]))


def compare(kind, expected, actual, atol_scale):
    """(a problem or None, the largest error / tolerance)."""
    if kind == "maps":  # expected (labels, probabilities [N, C]); actual one list of (key, value) per row
        labels, expected = expected
        want = [str(c) if labels.dtype.kind in "OUS" else int(c) for c in labels]
        for i, row in enumerate(actual):
            if [k for k, _ in row] != want:
                return f"map {i} has keys {[k for k, _ in row]}, expected {want}", 0.0
        actual = np.array([[v for _, v in row] for row in actual]).reshape(len(actual), len(want))
        kind = "close"
    if expected.shape != actual.shape:
        return f"shape {actual.shape}, expected {expected.shape}", 0.0
    if kind == "labels":
        expected = np.array([str(v) for v in expected.ravel()]) if expected.dtype.kind in "OUS" else expected
        wrong = np.flatnonzero(expected.ravel() != actual.ravel())
        if wrong.size:
            i = wrong[0]
            return (f"{wrong.size} labels differ, first at {i}: {actual.ravel()[i]!r}, "
                    f"expected {expected.ravel()[i]!r}"), 0.0
        return None, 0.0
    expected = expected.astype(np.float64)
    actual = actual.astype(np.float64)
    tolerance = RTOL * np.abs(expected) + atol_scale * max(np.max(np.abs(expected), initial=0), 1e-30)
    error = np.abs(actual - expected)
    ratio = float(np.max(error / tolerance, initial=0))
    if np.all(error <= tolerance):
        return None, ratio
    i = int(np.argmax(error - tolerance))
    return (f"{int(np.sum(error > tolerance))} values differ, worst at {np.unravel_index(i, expected.shape)}: "
            f"{actual.ravel()[i]!r}, expected {expected.ravel()[i]!r}"), ratio


# ---------------------------------------------------------------------------------------------- cases


def linear_cases(r):
    x, y = standardized("breast_cancer")
    lr = linear_model.LogisticRegression(max_iter=5000).fit(x, y)
    r.check("LogisticRegression binary, one row, LOGISTIC", linear_classifier(lr, x, "LOGISTIC"), [x],
            [("labels", lr.predict(x)), ("close", lr.predict_proba(x))])
    r.check("LogisticRegression binary, two rows (-w, w), NONE",
            linear_classifier(lr, x, "NONE", binary_one_row=False), [x],
            [("labels", lr.predict(x)), ("close", np.stack([-lr.decision_function(x), lr.decision_function(x)], 1))])

    x, y = dataset("iris")
    names = datasets.load_iris().target_names
    mn = linear_model.LogisticRegression(max_iter=5000).fit(x, names[y])  # multinomial, string labels
    r.check("LogisticRegression multinomial, string labels, SOFTMAX", linear_classifier(mn, x, "SOFTMAX"), [x],
            [("labels", mn.predict(x)), ("close", mn.predict_proba(x))])

    x, y = standardized("wine")
    ovr = linear_model.LogisticRegression(multi_class="ovr", max_iter=5000).fit(x, y)
    model = linear_classifier(ovr, x, "LOGISTIC")  # OvR: logistic per class, then rows normalized (L1)
    model.graph.node.append(ml_node("Normalizer", ["scores"], ["proba"], norm="L1"))
    model.graph.output.append(helper.make_tensor_value_info("proba", TensorProto.FLOAT, [None, None]))
    r.check("LogisticRegression one-vs-rest + Normalizer L1", model, [x],
            [("labels", ovr.predict(x)), None, ("close", ovr.predict_proba(x))])

    zipmap_cases(r)

    x, y = dataset("iris")
    lsvc = svm.LinearSVC(max_iter=100000, random_state=SEED).fit(x, y)
    r.check("LinearSVC multiclass", linear_classifier(lsvc, x, "NONE"), [x],
            [("labels", lsvc.predict(x)), ("close", lsvc.decision_function(x))])
    x, y = standardized("breast_cancer")
    lsvc2 = svm.LinearSVC(max_iter=100000, random_state=SEED).fit(x, y)
    d = lsvc2.decision_function(x)
    r.check("LinearSVC binary, one row", linear_classifier(lsvc2, x, "NONE"), [x],
            [("labels", lsvc2.predict(x)), ("close", np.stack([-d, d], 1))])

    x, y = dataset("diabetes")
    ols = linear_model.LinearRegression().fit(x, y)
    r.check("LinearRegression", graph_model([linear_regressor(ols)], [("X", x)], [("Y", TensorProto.FLOAT, 2)]),
            [x], [("close", ols.predict(x)[:, None])])
    targets = np.stack([y, np.sqrt(y)], 1)
    ridge = linear_model.Ridge(alpha=0.5).fit(x, targets)
    r.check("Ridge, two targets", graph_model([linear_regressor(ridge)], [("X", x)], [("Y", TensorProto.FLOAT, 2)]),
            [x], [("close", ridge.predict(x))])
    pick = np.array([2, 8], dtype=np.int64)  # ArrayFeatureExtractor: a model of two of the ten features
    small = linear_model.LinearRegression().fit(x[:, pick], y)
    model = graph_model([ml_node("ArrayFeatureExtractor", ["X", "pick"], ["picked"]),
                         linear_regressor(small, "picked")], [("X", x)], [("Y", TensorProto.FLOAT, 2)],
                        [numpy_helper.from_array(pick, "pick")])
    r.check("ArrayFeatureExtractor + LinearRegression", model, [x], [("close", small.predict(x[:, pick])[:, None])])


def svm_cases(r):
    x, y = dataset("iris")
    names = datasets.load_iris().target_names
    for kernel, params in [("linear", {}), ("rbf", {"gamma": "scale"}), ("poly", {"degree": 3, "coef0": 1.0}),
                           ("sigmoid", {"gamma": 0.01, "coef0": 0.5})]:
        model = svm.SVC(kernel=kernel, decision_function_shape="ovo", **params).fit(x, y)
        # The attributes are float32. A cubic kernel of unscaled features sums terms of ~450 times the largest
        # decision value, so their rounding alone moves the decision values by up to 2.6e-5 (same formula in
        # numpy with the rounded attributes: onnxserve agrees with that to float32 precision).
        r.check(f"SVC {kernel}, one-vs-one decision values", svm_classifier(model, x), [x],
                [("labels", model.predict(x)), ("close", model.decision_function(x))],
                atol_scale=1e-5 if kernel == "poly" else ATOL_SCALE)
    for kernel in ["linear", "rbf", "poly"]:
        model = svm.SVC(kernel=kernel, probability=True, random_state=SEED).fit(x, names[y])
        r.check(f"SVC {kernel}, probability, string labels", svm_classifier(model, x), [x],
                [("labels", model.predict(x)), ("close", model.predict_proba(x))])

    x, y = standardized("breast_cancer")
    binary = svm.SVC(kernel="rbf").fit(x, y)
    d = binary.decision_function(x)  # scikit-learn's sign: positive for the second class; Z = [d, -d]
    r.check("SVC rbf binary, decision value", svm_classifier(binary, x), [x],
            [("labels", binary.predict(x)), ("close", np.stack([d, -d], 1))])
    binary_p = svm.SVC(kernel="rbf", probability=True, random_state=SEED).fit(x, y)
    r.check("SVC rbf binary, probability", svm_classifier(binary_p, x), [x],
            [("labels", binary_p.predict(x)), ("close", binary_p.predict_proba(x))])

    x, y = dataset("diabetes")
    svr = svm.SVR(kernel="rbf", C=100.0, gamma="scale").fit(x, y)
    r.check("SVR rbf", svm_regressor(svr, x), [x], [("close", svr.predict(x)[:, None])])
    svr_lin = svm.SVR(kernel="linear", C=100.0).fit(x, y)
    r.check("SVR linear", svm_regressor(svr_lin, x), [x], [("close", svr_lin.predict(x)[:, None])])
    x, _ = standardized("iris")
    ocs = svm.OneClassSVM(nu=0.1, gamma="scale").fit(x)
    r.check("OneClassSVM", svm_regressor(ocs, x, one_class=True), [x], [("close", ocs.predict(x)[:, None])])
    r.check("OneClassSVM decision value", svm_regressor(ocs, x), [x], [("close", ocs.decision_function(x)[:, None])])


def tree_cases(r):
    def probabilities(one_column):
        def encode(model, _):
            trees = getattr(model, "estimators_", [model])
            return trees, class_probability_votes(len(trees), one_column), None, "NONE"
        return encode

    def boosting(transform):
        return lambda model, x: (model.estimators_.ravel(), boosting_votes(model), boosting_init(model, x), transform)

    for data, name, model, encode in [
            ("iris", "DecisionTreeClassifier", tree.DecisionTreeClassifier(random_state=SEED), probabilities(False)),
            ("iris", "GradientBoostingClassifier multiclass, SOFTMAX",
             ensemble.GradientBoostingClassifier(n_estimators=30, max_depth=2, random_state=SEED), boosting("SOFTMAX")),
            ("wine", "RandomForestClassifier multiclass",
             ensemble.RandomForestClassifier(n_estimators=10, random_state=SEED), probabilities(False)),
            ("breast_cancer", "RandomForestClassifier binary, one probability column",
             ensemble.RandomForestClassifier(n_estimators=10, random_state=SEED), probabilities(True)),
            ("breast_cancer", "GradientBoostingClassifier binary, one margin column, LOGISTIC",
             ensemble.GradientBoostingClassifier(n_estimators=40, max_depth=3, random_state=SEED),
             boosting("LOGISTIC"))]:
        x, y = dataset(data)
        x = x.astype(np.float32).astype(np.float64)  # scikit-learn's trees see float32 features
        model.fit(x, y)
        trees, votes, base_values, transform = encode(model, x)
        r.check(name, tree_classifier(trees, model.classes_, x, votes, base_values, transform), [x],
                [("labels", model.predict(x)), ("close", model.predict_proba(x))])

    x, y = dataset("diabetes")
    x = x.astype(np.float32).astype(np.float64)
    value = lambda _, tr, n: tr.value[n][0][0]
    dtr = tree.DecisionTreeRegressor(max_depth=6, random_state=SEED).fit(x, y)
    rfr = ensemble.RandomForestRegressor(n_estimators=10, max_depth=6, random_state=SEED).fit(x, y)
    gbr = ensemble.GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=SEED).fit(x, y)
    gb_init = float(boosting_init(gbr, x)[0])
    gb_leaf = lambda t, tr, n: gbr.learning_rate * tr.value[n][0][0]
    for name, trees, weight, aggregate, base in [
            ("DecisionTreeRegressor", [dtr], value, "SUM", 0.0),
            ("RandomForestRegressor", rfr.estimators_, value, "AVERAGE", 0.0),
            ("GradientBoostingRegressor", gbr.estimators_.ravel(), gb_leaf, "SUM", gb_init)]:
        expected = [("close", {"DecisionTreeRegressor": dtr, "RandomForestRegressor": rfr,
                               "GradientBoostingRegressor": gbr}[name].predict(x)[:, None])]
        votes = lambda t, tr, n, weight=weight: [(0, weight(t, tr, n))]
        r.check(f"{name} as TreeEnsembleRegressor-3",
                tree_regressor(trees, x, votes, aggregate, [base] if base else None), [x], expected)
        r.check(f"{name} as TreeEnsemble-5",
                tree_ensemble5(trees, x, weight, {"AVERAGE": 0, "SUM": 1}[aggregate], base), [x], expected)


def preprocessing_cases(r):
    x, _ = dataset("wine")
    scaler = preprocessing.StandardScaler().fit(x)
    node = ml_node("Scaler", ["X"], ["Y"], offset=floats(scaler.mean_), scale=floats(1 / scaler.scale_))
    r.check("StandardScaler", graph_model([node], [("X", x)], [("Y", TensorProto.FLOAT, 2)]), [x],
            [("close", scaler.transform(x))])

    x, _ = dataset("iris")  # all positive, where scikit-learn's max |x| and the spec's max x agree
    for norm in ["l1", "l2", "max"]:
        node = ml_node("Normalizer", ["X"], ["Y"], norm=norm.upper())
        r.check(f"Normalizer {norm}", graph_model([node], [("X", x)], [("Y", TensorProto.FLOAT, 2)]), [x],
                [("close", preprocessing.Normalizer(norm=norm).fit_transform(x))])
    x, _ = standardized("wine")  # signs matter for L1 and L2
    for norm in ["l1", "l2"]:
        node = ml_node("Normalizer", ["X"], ["Y"], norm=norm.upper())
        r.check(f"Normalizer {norm}, signed", graph_model([node], [("X", x)], [("Y", TensorProto.FLOAT, 2)]), [x],
                [("close", preprocessing.Normalizer(norm=norm).fit_transform(x))])
    binarizer = preprocessing.Binarizer(threshold=0.25).fit(x)
    node = ml_node("Binarizer", ["X"], ["Y"], threshold=0.25)
    r.check("Binarizer", graph_model([node], [("X", x)], [("Y", TensorProto.DOUBLE, 2)]), [x],
            [("close", binarizer.transform(x))])

    x, _ = dataset("diabetes")
    holes = x.copy()
    holes[np.random.default_rng(SEED).random(holes.shape) < 0.1] = np.nan
    for strategy in ["mean", "median"]:
        imputer = SimpleImputer(strategy=strategy).fit(holes)
        node = ml_node("Imputer", ["X"], ["Y"], imputed_value_floats=floats(imputer.statistics_),
                       replaced_value_float=float("nan"))
        r.check(f"SimpleImputer {strategy}", graph_model([node], [("X", holes)], [("Y", TensorProto.DOUBLE, 2)]),
                [holes], [("close", imputer.transform(holes))])

    one_hot_cases(r)
    dict_vectorizer_cases(r)


def one_hot_cases(r):
    """A string column and an integer column one-hot encoded and put side by side, unknown values as zeros:
    OneHotEncoder per column, Reshape to [N, categories], FeatureVectorizer."""
    x, y = dataset("iris")
    species = datasets.load_iris().target_names[y].astype(object)
    sizes = np.digitize(x[:, 0], [5.0, 5.5, 6.0, 6.5, 7.0]).astype(np.int64)
    train = np.arange(len(y)) % 7 != 0
    sizes_train = np.where(sizes[train] == 5, 4, sizes[train])  # category 5 exists only outside training
    encoder = preprocessing.OneHotEncoder(handle_unknown="ignore").fit(
        np.stack([species[train], sizes_train.astype(object)], 1))
    strings = species[:, None]
    numbers = sizes[:, None]
    cats_s = [str(c) for c in encoder.categories_[0]]
    cats_i = ints(encoder.categories_[1])
    nodes = [ml_node("OneHotEncoder", ["S"], ["s3"], cats_strings=cats_s, zeros=1),
             ml_node("OneHotEncoder", ["I"], ["i3"], cats_int64s=cats_i, zeros=1),
             helper.make_node("Reshape", ["s3", "shape_s"], ["s2"]),
             helper.make_node("Reshape", ["i3", "shape_i"], ["i2"]),
             ml_node("FeatureVectorizer", ["s2", "i2"], ["Y"], inputdimensions=[len(cats_s), len(cats_i)])]
    shapes = [numpy_helper.from_array(np.array([-1, len(cats_s)], dtype=np.int64), "shape_s"),
              numpy_helper.from_array(np.array([-1, len(cats_i)], dtype=np.int64), "shape_i")]
    model = graph_model(nodes, [("S", strings), ("I", numbers)], [("Y", TensorProto.FLOAT, 2)], shapes)
    expected = encoder.transform(np.stack([species, sizes.astype(object)], 1)).toarray()
    r.check("OneHotEncoder two columns + FeatureVectorizer", model, [strings, numbers], [("close", expected)])

    labels = preprocessing.LabelEncoder().fit(species)
    node = ml_node("CategoryMapper", ["S"], ["Y"], cats_strings=[str(c) for c in labels.classes_],
                   cats_int64s=list(range(len(labels.classes_))), default_int64=-1)
    r.check("LabelEncoder as CategoryMapper",
            graph_model([node], [("S", species)], [("Y", TensorProto.INT64, 1)]), [species],
            [("labels", labels.transform(species))])


def dict_vectorizer_cases(r):
    """scikit-learn's DictVectorizer on dicts of iris measurements, each dict leaving out the measurements
    under 1.0 (so rows have different keys) and the test dicts holding a key never fitted (dropped): one
    DictVectorizer node per dict (its input is one map), the [1, V] rows concatenated."""
    x, _ = dataset("iris")
    names = [str(n) for n in datasets.load_iris().feature_names] + ["never fitted"]
    for key_kind, key_of in [("string", lambda j: names[j]), ("int64", lambda j: 10 * j + 3)]:
        dicts = [{key_of(j): float(v) for j, v in enumerate(row) if v >= 1.0} for row in x]
        dv = feature_extraction.DictVectorizer(sparse=False).fit(dicts)
        vocabulary = {"string_vocabulary": [str(f) for f in dv.feature_names_]} if key_kind == "string" else \
            {"int64_vocabulary": [int(f) for f in dv.feature_names_]}
        tests = [dict(d) for d in dicts[::25]]
        for d in tests:
            d[key_of(len(names) - 1)] = 123.0  # a feature the vectorizer never saw
        inputs = [(f"D{k}", d) for k, d in enumerate(tests)]
        nodes = [ml_node("DictVectorizer", [n], [f"row{k}"], **vocabulary) for k, (n, _) in enumerate(inputs)]
        nodes.append(helper.make_node("Concat", [f"row{k}" for k in range(len(tests))], ["Y"], axis=0))
        model = graph_model(nodes, inputs, [("Y", TensorProto.DOUBLE, 2)])
        r.check(f"DictVectorizer, {key_kind} keys", model, tests, [("close", dv.transform(tests))])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxserve", required=True)
    parser.add_argument("--keep", help="keep each case's model, inputs and outputs under this folder")
    parser.add_argument("-k", default="", help="run only the cases whose name contains this")
    args = parser.parse_args()
    print(f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, onnx {onnx.__version__}")
    with tempfile.TemporaryDirectory(prefix="sklearn_test_") as scratch:
        runner = Runner(os.path.abspath(args.onnxserve), args.keep or scratch)
        if args.k:
            original = runner.check
            runner.check = lambda name, *rest, **kw: original(name, *rest, **kw) if args.k in name else None
        for cases in [linear_cases, svm_cases, tree_cases, preprocessing_cases]:
            cases(runner)
    print(f"{runner.passed} passed, {len(runner.failures)} failed")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
