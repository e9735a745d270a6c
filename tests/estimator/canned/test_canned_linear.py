"""Linear and baseline canned estimators against TF 2.15's (tensorflow-estimator 2.15.0).

How the legs meet (the house pattern of tests/estimator/bert/test_bert_finetune.py): on the TF 2.15 leg
the real ``tf.estimator`` and ours run the scenarios of tests/support/linear_estimators.py in
one process and must agree (``rtol=1e-6``; measured: identical bits), each resumes the
other's step-3 ``model_dir``, and the real one must reproduce the committed golden files
(written by ``python tests/support/linear_estimators.py --golden`` / ``--golden-model`` on TF
2.15), so they are not stale. On the TF 2.21 leg ours must match the golden files
(``rtol=1e-4``) and resume the model_dirs TF 2.15 wrote (tests/golden/linear_tf215/).

Time: each scenario trains twice, evaluates, predicts (and a few export and serve), a few
seconds each; the default legs run two scenarios, the ``slow`` marker the other six.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support import linear_estimators as L  # noqa: E402

HAS_REAL = hasattr(tf, "estimator")
RTOL_SAME_PROCESS = 1e-6
RTOL_GOLDEN = 1e-4
FAST = ("linear_binary", "baseline_multi")
SLOW = tuple(s for s in L.SCENARIOS if s not in FAST)


def assert_close(mine, ref, rtol: float, path: str = "") -> None:
    """Same structure, keys and strings; floats within ``rtol`` (ints exactly)."""
    if isinstance(ref, dict):
        assert isinstance(mine, dict), path
        assert sorted(mine) == sorted(ref), f"{path}: {sorted(set(mine) ^ set(ref))}"
        for key in ref:
            assert_close(mine[key], ref[key], rtol, f"{path}/{key}")
    elif isinstance(ref, list):
        assert isinstance(mine, list) and len(mine) == len(ref), path
        for i, (a, b) in enumerate(zip(mine, ref, strict=True)):
            assert_close(a, b, rtol, f"{path}[{i}]")
    elif isinstance(ref, float) or isinstance(mine, float):
        np.testing.assert_allclose(mine, ref, rtol=rtol, atol=1e-7, err_msg=path)
    else:
        assert mine == ref, path


def golden() -> dict:
    return json.loads(L.GOLDEN.read_text())


def model_golden() -> dict:
    return json.loads(L.MODEL_GOLDEN.read_text())


# ---------------------------------------------------------------- the linear model alone


def test_linear_model_matches_tf215_golden():
    """Names, shapes (plain and partitioned) and logits for sum / mean / sqrtn."""
    assert_close(L.model_logits("ours"), model_golden(), RTOL_SAME_PROCESS)


@pytest.mark.tf215
def test_real_linear_model_reproduces_golden():
    assert_close(L.model_logits("real"), model_golden(), RTOL_SAME_PROCESS)


def test_default_optimizer_learning_rate():
    """``optimizer=None``: Ftrl at min(0.2, 1/sqrt(n)); a name gets 0.2."""
    from tf1compat_init.estimator.canned._linear import default_optimizer_v2

    cols = [tf.feature_column.numeric_column(f"f{i}") for i in range(30)]
    assert math.isclose(default_optimizer_v2(cols).get_config()["learning_rate"], 30**-0.5)
    assert default_optimizer_v2(cols[:4]).get_config()["learning_rate"] == 0.2


# ---------------------------------------------------------------- parse example specs


def _spec_cases(est) -> list:
    cols = L.columns("xbchi")
    return [
        lambda: est.classifier_parse_example_spec(cols, label_key="y"),
        lambda: est.classifier_parse_example_spec(
            cols, "y", label_dtype=tf.string, label_default="lo", weight_column="w"
        ),
        lambda: est.regressor_parse_example_spec(
            cols, "y", label_dimension=2, weight_column=tf.feature_column.numeric_column("w")
        ),
        lambda: est.classifier_parse_example_spec(cols, label_key="x"),
        lambda: est.regressor_parse_example_spec(cols, "y", weight_column="b"),
        lambda: est.classifier_parse_example_spec(cols, "y", weight_column=cols[2]),
    ]


def _outcome(fn):
    try:
        return ("ok", repr(sorted(fn().items())))
    except Exception as err:  # noqa: BLE001 - the exception is the outcome compared
        return (type(err).__name__, str(err))


def test_parse_example_specs():
    from tf1compat_init import estimator as est

    spec = est.regressor_parse_example_spec(
        L.columns("xc"), "y", label_dimension=2, label_default=[0.0, 0.0], weight_column="w"
    )
    assert spec == {
        "x": tf.io.FixedLenFeature((2,), tf.float32),
        "c": tf.io.VarLenFeature(tf.string),
        "y": tf.io.FixedLenFeature((2,), tf.float32, [0.0, 0.0]),
        "w": tf.io.FixedLenFeature((1,), tf.float32),
    }
    outcomes = [_outcome(fn) for fn in _spec_cases(est)]
    assert outcomes[3][0] == "ValueError"
    assert outcomes[3][1].startswith("label should not be used as feature. label_key: x, features:")
    assert outcomes[4][1].startswith(
        "weight_column should not be used as feature. weight_column: b, features: dict_keys(["
    )
    assert outcomes[5][1].startswith(
        "weight_column should be an instance of tf.feature_column.numeric_column. Given type: "
    )


@pytest.mark.tf215
def test_parse_example_specs_as_tf215():
    from tf1compat_init import estimator as est

    ours = [_outcome(fn) for fn in _spec_cases(est)]
    real = [_outcome(fn) for fn in _spec_cases(tf.estimator)]
    assert ours == real


# ---------------------------------------------------------------- errors


def _tiny_input_fn(with_weight: bool = True):
    def fn():
        features = {"x": [[1.0, 2.0], [0.5, 0.0]], "c": [["a"], ["b"]], "id": ["1", "2"]}
        if with_weight:
            features["w"] = [[1.0], [2.0]]
        return tf.data.Dataset.from_tensors((features, [[1], [0]])).repeat()

    return fn


def _error_cases(est, keras) -> dict:
    """name -> a call that fails, in TF 2.15 as in ours."""
    fc = tf.feature_column
    x = fc.numeric_column("x", shape=(2,))
    c = fc.categorical_column_with_vocabulary_list("c", ["a", "b"])

    def train(**kw):
        def call(model_dir):
            cols = kw.pop("cols", [x, c])
            with_weight = kw.pop("with_weight", True)
            e = est.LinearClassifier(cols, model_dir=model_dir, **kw)
            e.train(_tiny_input_fn(with_weight), steps=1)

        return call

    def instance_twice(model_dir):
        e = est.LinearClassifier(
            [x, c], model_dir=model_dir, optimizer=keras.optimizers.legacy.SGD()
        )
        e.train(_tiny_input_fn(), steps=1)
        e.train(_tiny_input_fn(), steps=1)

    def sdca(**kw):
        return est.experimental.LinearSDCA("id", **kw)

    return {
        "sdca_combiner": lambda d: est.LinearClassifier(
            [x], d, optimizer=sdca(), sparse_combiner="mean"
        ),
        "sdca_classes": lambda d: est.LinearClassifier([x], d, n_classes=3, optimizer=sdca()),
        "sdca_dimension": lambda d: est.LinearRegressor(
            [x], d, label_dimension=2, optimizer=sdca()
        ),
        "sdca_l2": train(optimizer=sdca(symmetric_l2_regularization=0.0)),
        "n_classes": lambda d: est.LinearClassifier([x], model_dir=d, n_classes=1),
        "partitioner": lambda d: est.LinearClassifier([x], model_dir=d, partitioner=None),
        "vocabulary_type": lambda d: est.LinearClassifier([x], model_dir=d, label_vocabulary="ab"),
        "optimizer_name": train(optimizer="Foo"),
        "sparse_combiner": train(sparse_combiner="foo"),
        "sequence_column": train(cols=[fc.sequence_numeric_column("s")]),
        "no_columns": train(cols=[]),
        "duplicate_columns": train(cols=[x, fc.numeric_column("x", shape=(2,))]),
        "missing_weight": train(weight_column="w", with_weight=False),
        "optimizer_instance_twice": instance_twice,
    }


#: Ours, word for word (the real one wraps some in Keras's "in user code" traceback).
EXPECTED = {
    "sdca_combiner": (
        "ValueError",
        'sparse_combiner must be "sum" when optimizer is a LinearSDCA object.',
    ),
    "sdca_classes": ("ValueError", "LinearSDCA cannot be used in a multi-class setting."),
    "sdca_dimension": ("ValueError", "LinearSDCA can only be used with one-dimensional label."),
    "sdca_l2": ("ValueError", "symmetric_l2_regularization should be positive."),
    "n_classes": ("ValueError", "n_classes must be > 2: 1."),
    "partitioner": ("TypeError", "got an unexpected keyword argument 'partitioner'"),
    "optimizer_name": (
        "ValueError",
        "Unsupported optimizer name: Foo. Supported names are: "
        "('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD')",
    ),
    "sparse_combiner": ("ValueError", "combiner must be one of 'mean', 'sqrtn' or 'sum', got foo"),
    "sequence_column": (
        "ValueError",
        "Items of feature_columns must be either a DenseColumn or CategoricalColumn. Given: "
        "SequenceNumericColumn(key='s'",
    ),
    "no_columns": ("ValueError", "feature_columns must not be empty."),
    "duplicate_columns": ("ValueError", "Duplicate feature column name found for columns: "),
    "optimizer_instance_twice": (
        "RuntimeError",
        "Cannot set `iterations` to a new Variable after the Optimizer weights have been created.",
    ),
}


def _raise(call, model_dir):
    with pytest.raises(Exception) as info:  # noqa: PT011 - compared below
        call(model_dir)
    return type(info.value).__name__, str(info.value)


def test_errors(tmp_path):
    from tf1compat_init import estimator as est
    from tf1compat_init.estimator._keras2 import keras2

    for name, call in _error_cases(est, keras2()).items():
        kind, message = _raise(call, str(tmp_path / name))
        if name in EXPECTED:
            assert kind == EXPECTED[name][0], (name, message)
            assert EXPECTED[name][1] in message, (name, message)


@pytest.mark.tf215
def test_errors_as_tf215(tmp_path):
    from tf1compat_init import estimator as est
    from tf1compat_init.estimator._keras2 import keras2

    ours = _error_cases(est, keras2())
    real = _error_cases(tf.estimator, tf.keras)
    for name in ours:
        kind, message = _raise(ours[name], str(tmp_path / f"ours_{name}"))
        real_kind, real_message = _raise(real[name], str(tmp_path / f"real_{name}"))
        assert kind == real_kind, (name, message, real_message)
        # The real message may carry Keras's autograph frame ("in user code: ...").
        assert message.split("\ntf1compat_init:")[0] in real_message, name


# ---------------------------------------------------------------- estimators, TF 2.15 leg


@pytest.fixture(scope="module")
def differential(tmp_path_factory):
    """``{scenario: (real, ours, workdir)}``, computed once per scenario."""
    cache: dict = {}

    def get(scenario: str):
        if scenario not in cache:
            workdir = str(tmp_path_factory.mktemp(scenario))
            cache[scenario] = (
                L.run("real", scenario, workdir),
                L.run("ours", scenario, workdir),
                workdir,
            )
        return cache[scenario]

    return get


def _differential_checks(differential, scenario: str) -> None:
    real, ours, workdir = differential(scenario)
    assert_close(ours, real, RTOL_SAME_PROCESS)
    ref = golden()[scenario]
    assert_close(
        {k: v for k, v in real.items() if k != "tf_version"},
        {k: v for k, v in ref.items() if k != "tf_version"},
        RTOL_SAME_PROCESS,
    )
    # Each resumes the other's model_dir at step 3: every variable, slot and global_step.
    for lib, other in (("ours", "real"), ("real", "ours")):
        step3 = os.path.join(workdir, f"{scenario}_{other}_step3")
        resumed = L.run(lib, scenario, os.path.join(workdir, f"resume_{lib}"), resume_dir=step3)
        assert_close(resumed["losses"], ref["losses"][1:], RTOL_SAME_PROCESS)
        assert_close(resumed["variables"], ref["variables"], RTOL_SAME_PROCESS)


@pytest.mark.tf215
@pytest.mark.parametrize("scenario", FAST)
def test_same_as_tf215(differential, scenario):
    _differential_checks(differential, scenario)


@pytest.mark.tf215
@pytest.mark.slow
@pytest.mark.parametrize("scenario", SLOW)
def test_same_as_tf215_slow(differential, scenario):
    _differential_checks(differential, scenario)


# ---------------------------------------------------------------- estimators, TF 2.21 leg


def _golden_checks(tmp_path, scenario: str) -> None:
    ours = L.run("ours", scenario, str(tmp_path))
    ref = golden()[scenario]
    assert_close(
        {k: v for k, v in ours.items() if k != "tf_version"},
        {k: v for k, v in ref.items() if k != "tf_version"},
        RTOL_GOLDEN,
    )


@pytest.mark.tf221
@pytest.mark.parametrize("scenario", FAST)
def test_matches_tf215_golden(tmp_path, scenario):
    _golden_checks(tmp_path, scenario)


@pytest.mark.tf221
@pytest.mark.slow
@pytest.mark.parametrize("scenario", SLOW)
def test_matches_tf215_golden_slow(tmp_path, scenario):
    _golden_checks(tmp_path, scenario)


@pytest.mark.tf221
@pytest.mark.parametrize("scenario", L.GOLDEN_DIR_SCENARIOS)
def test_resumes_tf215_model_dir(tmp_path, scenario):
    """A model_dir TF 2.15 wrote at step 3 trains on in ours as it did in TF 2.15."""
    ref = golden()[scenario]
    resumed = L.run("ours", scenario, str(tmp_path), resume_dir=str(L.MODEL_DIRS / scenario))
    assert_close(resumed["losses"], ref["losses"][1:], RTOL_GOLDEN)
    assert_close(resumed["variables"], ref["variables"], RTOL_GOLDEN)


# ---------------------------------------------------------------- LinearSDCA

RTOL_SDCA = 1e-4  # measured: real and ours converge to within 7e-7 of each other


def sdca_golden() -> dict:
    return json.loads(L.SDCA_GOLDEN.read_text())


def _assert_same_optimum(mine: dict, ref: dict) -> None:
    mine = L.sdca_golden_view(mine)
    if "model_dir" in ref:
        ref = L.sdca_golden_view(ref)
    assert sorted(mine["variables"]) == sorted(ref["variables"])
    for name, value in ref["variables"].items():
        if value is not None:
            np.testing.assert_allclose(
                mine["variables"][name], value, rtol=RTOL_SDCA, atol=1e-5, err_msg=name
            )
    assert [s for s, _ in mine["last_losses"]] == [s for s, _ in ref["last_losses"]]
    np.testing.assert_allclose(
        [v for _, v in mine["last_losses"]][-1], [v for _, v in ref["last_losses"]][-1], RTOL_SDCA
    )
    assert_close(mine["metrics"], ref["metrics"], RTOL_SDCA)


@pytest.mark.tf215
@pytest.mark.parametrize("kind", L.SDCA_KINDS)
def test_sdca_as_tf215(tmp_path, kind):
    """Same checkpoint keys and optimum as TF 2.15's; each resumes the other's model_dir."""
    real = L.sdca_run("real", kind, str(tmp_path))
    ours = L.sdca_run("ours", kind, str(tmp_path))
    _assert_same_optimum(ours, real)
    _assert_same_optimum(real, sdca_golden()[kind])
    # The example-state table and the unshrunk weights resume too: one more step stays
    # at the optimum (a fresh table would move the weights).
    converged = real["last_losses"][-1][1]
    for lib, other in (("ours", real), ("real", ours)):
        more = L.sdca_run(lib, kind, str(tmp_path / f"more_{lib}"), resume_dir=other["model_dir"])
        np.testing.assert_allclose(more["loss"], converged, rtol=RTOL_SDCA)


@pytest.mark.tf221
@pytest.mark.parametrize("kind", L.SDCA_KINDS)
def test_sdca_matches_tf215_golden(tmp_path, kind):
    _assert_same_optimum(L.sdca_run("ours", kind, str(tmp_path)), sdca_golden()[kind])
