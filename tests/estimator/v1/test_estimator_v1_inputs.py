"""``estimator.v1.inputs.numpy_input_fn`` / ``pandas_input_fn``: TF 2.15's queue-fed inputs.

Batches are read as an Estimator reads them: a ``MonitoredSession`` starts the queue
runners, and the input ends with ``OutOfRangeError`` after ``num_epochs``. On the TF 2.15
leg the real ``tf.compat.v1.estimator.inputs`` run beside ours and must give the same
batches: in order without ``shuffle``; with ``shuffle``, the same order too when both get
the same graph seed and the same start row (TF draws the start row from Python's
``random`` after ``random.seed(None)``, so the test pins that seed for both).
"""

import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support.queue_inputs import HAS_REAL, read_batches  # noqa: E402

from tf1compat_init.estimator import Estimator, EstimatorSpec, ModeKeys  # noqa: E402
from tf1compat_init.estimator.v1 import inputs  # noqa: E402


def rows(batches, key="a"):
    return [b[0][key].tolist() if isinstance(b, tuple) else b[key].tolist() for b in batches]


X = {"a": np.arange(10), "b": np.arange(10) * 2.0}
Y = -np.arange(10)


def test_numpy_batches_in_order_across_epochs():
    fn = inputs.numpy_input_fn(X, Y, batch_size=4, num_epochs=2, shuffle=False)
    batches = read_batches(fn)
    assert rows(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    for features, target in batches:
        np.testing.assert_array_equal(features["b"], features["a"] * 2.0)
        np.testing.assert_array_equal(target, -features["a"])
    # one epoch: the last batch is short
    fn = inputs.numpy_input_fn(X, Y, batch_size=4, num_epochs=1, shuffle=False)
    assert rows(read_batches(fn)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_numpy_array_x_dict_y_and_no_y():
    fn = inputs.numpy_input_fn(
        np.arange(6.0), {"t": np.arange(6), "u": np.ones(6)}, batch_size=4, shuffle=False
    )
    (f1, t1), (f2, t2) = read_batches(fn)
    assert f1.tolist() == [0, 1, 2, 3] and f2.tolist() == [4, 5]
    assert sorted(t1) == ["t", "u"] and t2["t"].tolist() == [4, 5]
    fn = inputs.numpy_input_fn({"a": np.arange(3)}, batch_size=2, shuffle=False)
    assert [b["a"].tolist() for b in read_batches(fn)] == [[0, 1], [2]]


def test_numpy_forever_gives_full_batches():
    fn = inputs.numpy_input_fn(X, Y, batch_size=4, num_epochs=None, shuffle=False)
    with tf.Graph().as_default():
        features, _ = fn()
        assert features["a"].shape.as_list() == [4]  # dequeue_many: a static batch size
    assert rows(read_batches(fn, limit=4)) == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 0, 1],
        [2, 3, 4, 5],
    ]


def test_numpy_shuffle_covers_every_row_once_per_epoch():
    fn = inputs.numpy_input_fn(X, Y, batch_size=3, num_epochs=2, shuffle=True)
    seen = sorted(r for batch in rows(read_batches(fn)) for r in batch)
    assert seen == sorted(list(range(10)) * 2)


NUMPY_ERRORS = [
    ({"x": X, "shuffle": None}, ValueError, "shuffle must be provided and explicitly set"),
    ({"x": {}, "shuffle": False}, ValueError, "x cannot be an empty dict"),
    ({"x": np.array([]), "shuffle": False}, ValueError, "x cannot be an empty array"),
    ({"x": [1, 2], "shuffle": False}, TypeError, "x must be a dict or array; got list"),
    ({"x": X, "y": {}, "shuffle": False}, ValueError, "y cannot be empty dict"),
    ({"x": X, "y": {"a": Y}, "shuffle": False}, ValueError, "1 duplicate keys are found"),
    ({"x": X, "y": Y[:3], "shuffle": False}, ValueError, "Length of tensors in x and y"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), NUMPY_ERRORS)
def test_numpy_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        read_batches(inputs.numpy_input_fn(**kwargs))


def test_numpy_input_fn_feeds_an_estimator_until_it_ends(tmp_path):
    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        pred = w * tf.cast(features["a"], tf.float32)
        if mode == ModeKeys.PREDICT:
            return EstimatorSpec(mode, predictions={"p": pred})
        loss = tf.reduce_mean(tf.square(pred - tf.cast(labels, tf.float32)))
        step = tf.compat.v1.train.get_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(loss, step)
        return EstimatorSpec(mode, loss=loss, train_op=train_op, predictions={"p": pred})

    est = Estimator(model_fn, model_dir=str(tmp_path))
    est.train(inputs.numpy_input_fn(X, Y, batch_size=4, num_epochs=2, shuffle=True))
    assert est.get_variable_value("global_step") == 5  # 2 epochs of 10 rows in batches of 4
    assert est.get_variable_value("w") < 0
    metrics = est.evaluate(inputs.numpy_input_fn(X, Y, batch_size=3, shuffle=False))
    assert metrics["global_step"] == 5
    preds = est.predict(inputs.numpy_input_fn({"a": X["a"]}, batch_size=3, shuffle=False))
    assert len(list(preds)) == 10


# -- TF 2.15 leg: the real tf.compat.v1.estimator.inputs beside ours -----------------------


def _real_and_ours_batches(monkeypatch, make, graph_seed=None):
    """Batches of ``make(real_inputs)`` and ``make(our_inputs)``, same Python start row."""
    seed = random.seed
    monkeypatch.setattr(random, "seed", lambda a=None, version=2: seed(1234))
    real = read_batches(make(tf.compat.v1.estimator.inputs), graph_seed=graph_seed)
    ours = read_batches(make(inputs), graph_seed=graph_seed)
    return real, ours


def _assert_same_batches(real, ours):
    assert len(real) == len(ours) > 0
    for r, o in zip(real, ours, strict=True):
        tf.nest.map_structure(np.testing.assert_array_equal, r, o)


NUMPY_CASES = {
    "in_order": dict(x=X, y=Y, batch_size=4, num_epochs=2, shuffle=False),
    # All 20 rows fit under min_after_dequeue (250), so the shuffle queue is full and
    # closed before the first dequeue: the order depends on the seeds only. (With a queue
    # smaller than the data it also depends on thread timing, in TF 2.15 as here.)
    "shuffled": dict(x=X, y=Y, batch_size=3, num_epochs=2, shuffle=True),
    "array_forever": dict(x=np.arange(7.0), batch_size=3, num_epochs=None, shuffle=False),
    "dict_y": dict(x=X, y={"t": Y, "u": Y * 2}, batch_size=4, shuffle=False),
}


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
@pytest.mark.parametrize("case", NUMPY_CASES)
def test_numpy_input_fn_equals_tf215s(monkeypatch, case):
    kwargs = NUMPY_CASES[case]
    real, ours = _real_and_ours_batches(
        monkeypatch, lambda lib: lib.numpy_input_fn(**kwargs), graph_seed=7
    )
    if kwargs.get("num_epochs", 1) is None:
        real, ours = real[:5], ours[:5]
    _assert_same_batches(real, ours)


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
@pytest.mark.parametrize(("kwargs", "error", "match"), NUMPY_ERRORS)
def test_numpy_errors_are_tf215s(kwargs, error, match):
    messages = []
    for lib in (tf.compat.v1.estimator.inputs, inputs):
        with pytest.raises(error) as info:
            read_batches(lib.numpy_input_fn(**kwargs))
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_pandas_input_fn_without_pandas(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(TypeError, match="pandas_input_fn should not be called without pandas"):
        inputs.pandas_input_fn(object(), shuffle=False)
