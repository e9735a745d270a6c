"""Tensor transforms through every front end that takes an assignment map.

v1 (eager and graph mode, partitions, Saver), the engine's apply_plan, keras.load_checkpoint
and CheckpointInit, checkpoint.restore, and migrate into a Keras model. Flavour-neutral:
``keras`` is ``tf.keras`` (Keras 3 on the tf221 leg, Keras 2 on the tf215 leg).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from support.bundles import write_checkpoint

tf = pytest.importorskip("tensorflow")

from tf1compat_init import (  # noqa: E402
    AssignmentMapError,
    CheckpointMismatchError,
    open_checkpoint,
    plan_restore,
)
from tf1compat_init import transforms as tt  # noqa: E402
from tf1compat_init.apply import apply_plan  # noqa: E402
from tf1compat_init.checkpoint import restore  # noqa: E402
from tf1compat_init.variables import collect_targets, target_specs  # noqa: E402

keras = tf.keras
v1 = tf.compat.v1

RNG = np.random.default_rng(1)
TENSORS = {
    "bert/q/kernel": RNG.standard_normal((6, 6)).astype(np.float32),
    "bert/q/bias": RNG.standard_normal((6,)).astype(np.float32),
    "pt/dense/weight": RNG.standard_normal((4, 6)).astype(np.float32),  # [out, in]
    "pt/dense/bias": RNG.standard_normal((4,)).astype(np.float32),
    "fused/qkv": RNG.standard_normal((6, 12)).astype(np.float32),
    "bert/q/kernel/adam_m": np.zeros((6, 6), np.float32),
    "global_step": np.array(3, np.int64),
}
Q = TENSORS["bert/q/kernel"]
QKV = TENSORS["fused/qkv"]

MAP = {
    "bert/q/kernel": "q/kernel | reshape()",
    "bert/q/bias": tt.to("q/bias", tt.reshape(2, 3)),
    "pt/dense/weight": "dense/kernel | transpose(1, 0)",
    "pt/dense/bias": "dense/bias",
    "fused/qkv": tt.to(["a/kernel", "b/kernel"], tt.split(-1), tt.cast("float16")),
}


def _want() -> dict[str, np.ndarray]:
    return {
        "q/kernel": Q.reshape(6, 2, 3),
        "q/bias": TENSORS["bert/q/bias"].reshape(2, 3),
        "dense/kernel": TENSORS["pt/dense/weight"].T,
        "dense/bias": TENSORS["pt/dense/bias"],
        "a/kernel": QKV[:, :6].astype(np.float16),
        "b/kernel": QKV[:, 6:].astype(np.float16),
    }


SHAPES = {
    "q/kernel": ((6, 2, 3), tf.float32),
    "q/bias": ((2, 3), tf.float32),
    "dense/kernel": ((6, 4), tf.float32),
    "dense/bias": ((4,), tf.float32),
    "a/kernel": ((6, 6), tf.float16),
    "b/kernel": ((6, 6), tf.float16),
}


@pytest.fixture
def ckpt(tmp_path: Path) -> str:
    return write_checkpoint(tmp_path / "pretrained" / "model.ckpt", dict(sorted(TENSORS.items())))


def _eager_vars(fill: float = -1.0) -> dict[str, tf.Variable]:
    return {
        n: tf.Variable(tf.fill(s, tf.cast(fill, d)), name=n.replace("/", "_"))
        for n, (s, d) in SHAPES.items()
    }


# -- engine: apply_plan -------------------------------------------------------------------


def test_apply_plan_assigns_transformed_values(ckpt):
    variables = _eager_vars()
    targets = collect_targets(list(variables.values()), name_of=lambda v: _name(variables, v))
    plan = plan_restore(ckpt, target_specs(targets), MAP)
    report = apply_plan(plan, targets)
    assert report.applied and report.transforms["b/kernel"] == "split(-1)[1] | cast(float16)"
    for name, want in _want().items():
        np.testing.assert_array_equal(variables[name].numpy(), want, err_msg=name)


def _name(variables: dict, v: tf.Variable) -> str:
    return next(n for n, x in variables.items() if x is v)


def test_apply_plan_checks_transformed_shape_against_the_variable(ckpt):
    variables = _eager_vars()
    targets = collect_targets(list(variables.values()), name_of=lambda v: _name(variables, v))
    plan = plan_restore(ckpt, target_specs(targets), MAP)
    # The variable changed shape after planning: nothing may be assigned.
    other = tf.Variable(tf.fill((3, 12), -1.0), name="other")
    targets = collect_targets(
        [other if n == "q/kernel" else v for n, v in variables.items()],
        name_of=lambda v: "q/kernel" if v is other else _name(variables, v),
    )
    with pytest.raises(Exception, match=r"q/kernel.*reshape\(\).*nothing was assigned"):
        apply_plan(plan, targets)
    assert all(np.all(v.numpy() == -1) for v in variables.values())
    assert np.all(other.numpy() == -1)


# -- v1 -----------------------------------------------------------------------------------


def test_v1_eager(ckpt):
    from tf1compat_init import v1 as tv1

    variables = _eager_vars()
    by_name = {v.name.split(":")[0]: n for n, v in variables.items()}
    amap = {k: _rename(v, by_name) for k, v in MAP.items()}
    report = tv1.init_from_checkpoint(ckpt, amap, var_list=list(variables.values()))
    assert report.applied
    for name, want in _want().items():
        np.testing.assert_array_equal(variables[name].numpy(), want, err_msg=name)


def _rename(value, by_name):
    """MAP with the eager variables' names (``q_kernel``) as targets."""
    inverse = {n: k for k, n in by_name.items()}
    if isinstance(value, tt.To):
        return tt.to([inverse[t] for t in value.targets], *value.steps)
    head, sep, rest = value.partition(" | ")
    return inverse[head] + (sep + rest if sep else "")


def _graph_model(graph, partitioned: bool = False):
    with graph.as_default():
        out = {}
        for name, (shape, dtype) in SHAPES.items():
            partitioner = (
                v1.fixed_size_partitioner(2) if partitioned and name == "q/kernel" else None
            )
            out[name] = v1.get_variable(
                name, shape, dtype, initializer=v1.constant_initializer(-1), partitioner=partitioner
            )
        return out


@pytest.mark.parametrize("partitioned", [False, True])
def test_v1_graph_mode_applies_transforms_when_the_initializer_runs(ckpt, partitioned):
    from tf1compat_init import v1 as tv1

    graph = tf.Graph()
    variables = _graph_model(graph, partitioned)
    with graph.as_default():
        report = tv1.init_from_checkpoint(ckpt, MAP)
        assert not report.applied and report.transforms["q/kernel"] == "reshape()"
        # TF1 semantics: values are read when the initializer runs, not now.
        ours = [op for op in graph.get_operations() if op.name.startswith("checkpoint_initializer")]
        assert any(op.type == "RestoreV2" for op in ours)
        assert {op.get_attr("dtype") for op in ours if op.type == "Const"} <= {tf.string, tf.int32}
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            got = sess.run({n: tf.convert_to_tensor(v) for n, v in variables.items()})
    for name, want in _want().items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_v1_graph_mode_rejects_fn_before_the_graph_changes(ckpt):
    from tf1compat_init import v1 as tv1

    graph = tf.Graph()
    variables = _graph_model(graph)
    flip = {"bert/q/kernel": tt.to("q/kernel", tt.fn(lambda a: a.reshape(6, 2, 3), name="r"))}
    with graph.as_default():
        before = len(graph.get_operations())
        initializer = variables["q/kernel"].initializer
        with pytest.raises(AssignmentMapError, match=r"fn\(r\) runs Python.*nothing was changed"):
            tv1.init_from_checkpoint(ckpt, flip)
        assert len(graph.get_operations()) == before
        assert variables["q/kernel"].initializer is initializer


def test_v1_restore_saver_refuses_transforms(ckpt):
    from tf1compat_init import v1 as tv1

    graph = tf.Graph()
    _graph_model(graph)
    with graph.as_default(), pytest.raises(AssignmentMapError, match="a Saver cannot do"):
        tv1.restore_saver(ckpt, MAP)


def test_v1_recipe_keyword_and_wrong_checkpoint(ckpt, tmp_path):
    from tf1compat_init import v1 as tv1

    recipe = tt.Recipe("v1-test", MAP, drop=[r"adam_m$", "^global_step$"], requires=["^bert/"])
    variables = _eager_vars()
    by_name = {v.name.split(":")[0]: n for n, v in variables.items()}
    eager_recipe = tt.Recipe(
        "v1-test-eager",
        {k: _rename(v, by_name) for k, v in MAP.items()},
        drop=recipe.drop,
        requires=recipe.requires,
    )
    report = tv1.init_from_checkpoint(ckpt, var_list=list(variables.values()), recipe=eager_recipe)
    assert sorted(report.dropped) == ["bert/q/kernel/adam_m", "global_step"]
    other = tmp_path / "other" / "model.ckpt"
    write_checkpoint(other, {"resnet/conv1/weights": np.zeros((6, 6), np.float32)})
    fresh = _eager_vars()
    with pytest.raises(CheckpointMismatchError, match=r"recipe 'v1-test-eager'.*'\^bert/'"):
        tv1.init_from_checkpoint(str(other), var_list=list(fresh.values()), recipe=eager_recipe)
    assert all(np.all(v.numpy() == -1) for v in fresh.values())


# -- keras ---------------------------------------------------------------------------------


def _keras_model():
    inputs = keras.Input((6,))
    q = keras.layers.EinsumDense("ab,bcd->acd", output_shape=(2, 3), bias_axes="cd", name="q")
    a = keras.layers.Dense(6, use_bias=False, dtype="float16", name="a")
    b = keras.layers.Dense(6, use_bias=False, dtype="float16", name="b")
    dense = keras.layers.Dense(4, name="dense")
    x = q(inputs)
    y = dense(inputs)
    z = a(inputs)
    w = b(inputs)
    return keras.Model(inputs, [x, y, z, w])


def _keras_weights(model) -> dict[str, np.ndarray]:
    from tf1compat_init.keras import weight_names

    return {n: np.asarray(v.numpy()) for n, v in weight_names(model).items()}


def test_keras_load_checkpoint_with_a_recipe(ckpt):
    from tf1compat_init.keras import load_checkpoint

    model = _keras_model()
    recipe = tt.Recipe("keras-test", MAP, drop=[r"adam_m$", "^global_step$"], requires=["^bert/"])
    report = load_checkpoint(model, ckpt, recipe)
    assert report.dropped and not report.unused and not report.untouched
    got = _keras_weights(model)
    for name, want in _want().items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
    # By name, through recipe=, and through the CheckpointInit callback's policy check.
    tt.register(recipe, replace=True)
    try:
        fresh = _keras_model()
        load_checkpoint(fresh, ckpt, recipe="keras-test")
        np.testing.assert_array_equal(_keras_weights(fresh)["q/kernel"], Q.reshape(6, 2, 3))
        from tf1compat_init.keras import CheckpointInit

        with pytest.raises(AssignmentMapError, match="no recipe named 'nope'"):
            CheckpointInit(ckpt, recipe="nope")
        CheckpointInit(ckpt, recipe="keras-test")
    finally:
        tt.unregister("keras-test")


def test_keras_bad_transform_changes_nothing(ckpt):
    from tf1compat_init.keras import load_checkpoint

    model = _keras_model()
    before = _keras_weights(model)
    bad = dict(MAP)
    bad["bert/q/kernel"] = "q/kernel | reshape(6, 3, 2)"
    with pytest.raises(CheckpointMismatchError) as info:
        load_checkpoint(model, ckpt, bad)
    message = str(info.value)
    assert "'q/kernel | reshape(6, 3, 2)'" in message
    assert "bert/q/kernel" in message and "[6, 3, 2]" in message and "[6, 2, 3]" in message
    bad = dict(MAP)
    bad["bert/q/kernel"] = "q/kernel | split(-1, n=4)"
    with pytest.raises(AssignmentMapError, match=r"split\(-1, n=4\) does not divide.*\[6, 6\]"):
        load_checkpoint(model, ckpt, bad)
    after = _keras_weights(model)
    assert all(np.array_equal(before[n], after[n]) for n in before)


# -- checkpoint.restore ---------------------------------------------------------------------


class _Module(tf.Module):
    def __init__(self):
        super().__init__()
        self.q = tf.Variable(tf.fill((6, 2, 3), -1.0))
        self.a = tf.Variable(tf.fill((6, 6), tf.constant(-1, tf.float16)))
        self.b = tf.Variable(tf.fill((6, 6), tf.constant(-1, tf.float16)))


def test_checkpoint_restore_with_transforms_and_recipe(ckpt):
    root = tf.train.Checkpoint(model=_Module())
    amap = {
        "bert/q/kernel": "model/q | reshape()",
        "fused/qkv": "model/a, model/b | split(-1) | cast(float16)",
    }
    report = restore(root, ckpt, amap)
    assert report.transforms == {
        "model/a": "split(-1)[0] | cast(float16)",
        "model/b": "split(-1)[1] | cast(float16)",
        "model/q": "reshape()",
    }
    np.testing.assert_array_equal(root.model.q.numpy(), Q.reshape(6, 2, 3))
    np.testing.assert_array_equal(root.model.b.numpy(), QKV[:, 6:].astype(np.float16))
    fresh = tf.train.Checkpoint(model=_Module())
    restore(fresh, ckpt, recipe=tt.Recipe("restore-test", amap))
    np.testing.assert_array_equal(fresh.model.a.numpy(), QKV[:, :6].astype(np.float16))


def test_checkpoint_restore_from_an_object_based_checkpoint(tmp_path):
    """Transforms read object-based checkpoints through their readable names too."""
    src = tf.train.Checkpoint(w=tf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4)))
    path = src.write(str(tmp_path / "tf2" / "ckpt"))

    class M(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(tf.zeros((4, 3)))

    root = M()
    restore(root, path, {"w": "w | transpose(1, 0)"})
    np.testing.assert_array_equal(root.w.numpy(), np.arange(12, dtype=np.float32).reshape(3, 4).T)


# -- migrate into a model --------------------------------------------------------------------


def test_migrate_keras_takes_reshape_shapes_from_the_model(ckpt, tmp_path):
    from tf1compat_init.migrate import migrate

    calls = []

    def factory():
        calls.append(1)
        return _keras_model()

    recipe = tt.Recipe("migrate-test", MAP, drop=[r"adam_m$", "^global_step$"])
    dst = tmp_path / "out" / "model.weights.h5"
    result = migrate(ckpt, dst, recipe=recipe, format="keras", model=factory)
    assert len(calls) == 1  # the model it shapes is the one written and verified
    assert result.transforms["q/kernel"] == "reshape()"
    assert result.report.ok and not result.report.untouched
    fresh = _keras_model()
    fresh.load_weights(str(dst))
    got = _keras_weights(fresh)
    for name, want in _want().items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


def test_migrate_keras_bad_shape_writes_nothing(ckpt, tmp_path):
    from tf1compat_init.migrate import migrate

    dst = tmp_path / "out" / "model.weights.h5"
    bad = dict(MAP)
    bad["bert/q/kernel"] = "q/kernel | reshape(3, 12)"
    with pytest.raises(CheckpointMismatchError, match=re.escape("reshape(3, 12)")):
        migrate(ckpt, dst, bad, format="keras", model=_keras_model)
    assert not dst.exists() and not [p for p in os.listdir(dst.parent) if "tf1compat" in p]
    assert open_checkpoint(ckpt).variables  # the source is intact
