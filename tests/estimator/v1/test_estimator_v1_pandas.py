"""``estimator.v1.inputs.pandas_input_fn``: a DataFrame fed through a queue, as TF 2.15.

Needs pandas (in requirements/*.txt). On the TF 2.15 leg the real
``tf.compat.v1.estimator.inputs.pandas_input_fn`` runs beside ours: same batches, same
errors word for word.
"""

import random

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pd = pytest.importorskip("pandas", reason="pandas is a test requirement (requirements/*.txt)")

from support.queue_inputs import HAS_REAL, read_batches  # noqa: E402

from tf1compat_init.estimator.v1 import inputs  # noqa: E402


def frame() -> "pd.DataFrame":
    return pd.DataFrame(
        {"a": np.arange(6, dtype=np.int64), "b": np.arange(6, dtype=np.float32) * 0.5},
        index=np.arange(10, 16),
    )


def target() -> "pd.Series":
    return pd.Series(np.arange(6, dtype=np.int64) * -1, index=np.arange(10, 16))


def test_pandas_batches_in_order():
    fn = inputs.pandas_input_fn(frame(), target(), batch_size=4, num_epochs=2, shuffle=False)
    batches = read_batches(fn)
    assert [f["a"].tolist() for f, _ in batches] == [[0, 1, 2, 3], [4, 5, 0, 1], [2, 3, 4, 5]]
    for features, t in batches:
        assert sorted(features) == ["a", "b"]
        np.testing.assert_array_equal(t, -features["a"])
        np.testing.assert_array_equal(features["b"], features["a"] * 0.5)


def test_pandas_dataframe_target_is_a_dict_and_x_is_not_changed():
    x = frame()
    y = pd.DataFrame({"a": np.arange(6) * 10, "t": np.arange(6) + 1}, index=x.index)
    fn = inputs.pandas_input_fn(x, y, batch_size=6, shuffle=False)
    ((features, t),) = read_batches(fn)
    assert sorted(features) == ["a", "b"] and sorted(t) == ["a", "t"]
    assert t["a"].tolist() == [0, 10, 20, 30, 40, 50] and features["a"].tolist() == list(range(6))
    assert list(x.columns) == ["a", "b"]


def test_pandas_shuffle_covers_every_row():
    fn = inputs.pandas_input_fn(frame(), batch_size=4, num_epochs=3, shuffle=True)
    seen = sorted(v for f in read_batches(fn) for v in f["a"].tolist())
    assert seen == sorted(list(range(6)) * 3)


def _errors(lib) -> dict:
    x, y = frame(), target()
    cases = {
        "shuffle": lambda: lib.pandas_input_fn(x, y),
        "target_type": lambda: lib.pandas_input_fn(x, y, shuffle=False, target_column=1),
        "clash": lambda: lib.pandas_input_fn(x, y, shuffle=False, target_column="a"),
        "index": lambda: lib.pandas_input_fn(x, y.reset_index(drop=True), shuffle=False),
    }
    out = {}
    for name, fn in cases.items():
        with pytest.raises((TypeError, ValueError)) as info:
            fn()
        out[name] = (type(info.value).__name__, str(info.value))
    return out


def test_pandas_errors():
    errors = _errors(inputs)
    assert errors["shuffle"][0] == "ValueError" and errors["target_type"][0] == "TypeError"
    assert errors["clash"][1].startswith("Cannot use name a for target column")
    assert errors["index"][1].startswith("Index for x and y are mismatched.")


@pytest.mark.tf215
@pytest.mark.skipif(not HAS_REAL, reason="needs the real tf.compat.v1.estimator")
def test_pandas_input_fn_equals_tf215s(monkeypatch):
    real_lib = tf.compat.v1.estimator.inputs
    assert _errors(inputs) == _errors(real_lib)
    seed = random.seed
    monkeypatch.setattr(random, "seed", lambda a=None, version=2: seed(99))
    for kwargs in (
        dict(batch_size=4, num_epochs=2, shuffle=False),
        # min_after_dequeue 25 > 12 rows: the whole input is queued before the first
        # dequeue, so the order depends on the seeds only, not on thread timing.
        dict(batch_size=4, num_epochs=2, shuffle=True, queue_capacity=100),
        dict(batch_size=5, num_epochs=None, shuffle=False, queue_capacity=None),
    ):
        got = [
            read_batches(lib.pandas_input_fn(frame(), target(), **kwargs), limit=6, graph_seed=3)
            for lib in (real_lib, inputs)
        ]
        assert len(got[0]) == len(got[1]) > 0
        tf.nest.map_structure(np.testing.assert_array_equal, got[0], got[1])


@pytest.mark.parametrize("dtype", ["string", object, None])
def test_pandas_string_columns_feed_as_tf_string(dtype):
    """pandas 3 stores strings as ``StringDtype`` (its default): fed as TF 2.15 fed ``object``.

    Before the fix, ``StringDtype`` raised ``TypeError: Cannot convert ... to a TensorFlow
    DType``; ``dtype=None`` is pandas' own default (``str`` on pandas 3, ``object`` before).
    """
    words = ["a", "bb", "ccc", "dddd", "e", "ff"]
    x = frame().assign(w=pd.Series(words, index=frame().index, dtype=dtype))
    if dtype == "string":
        assert isinstance(x["w"].dtype, pd.StringDtype)
    fn = inputs.pandas_input_fn(x, target(), batch_size=3, shuffle=False)
    batches = read_batches(fn)
    assert [f["w"].tolist() for f, _ in batches] == [[b"a", b"bb", b"ccc"], [b"dddd", b"e", b"ff"]]
    assert [f["a"].tolist() for f, _ in batches] == [[0, 1, 2], [3, 4, 5]]
