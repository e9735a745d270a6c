"""checkpoint.restore / restore_or_initialize: TF1 and TF2 checkpoints into tf.train.Checkpoint roots."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
h = pytest.importorskip("support.migrate_helpers")

from tf1compat_init import (  # noqa: E402
    AssignmentMapError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
)
from tf1compat_init.checkpoint import (  # noqa: E402
    InitResult,
    restore,
    restore_or_initialize,
    target_variables,
)


class Dense(tf.Module):
    def __init__(self, n_in: int, n_out: int, fill: float = -1.0):
        super().__init__()
        self.kernel = tf.Variable(tf.fill([n_in, n_out], fill))
        self.bias = tf.Variable(tf.fill([n_out], fill))


class SubModel(tf.Module):
    def __init__(self, fc1_out: int = 3):
        super().__init__()
        self.fc1 = Dense(4, fc1_out)
        self.fc2 = Dense(fc1_out, 2)


def _values(module: tf.Module) -> dict[str, np.ndarray]:
    return {v.name + str(i): v.numpy() for i, v in enumerate(module.trainable_variables)}


@pytest.fixture(scope="module")
def sub_models(tmp_path_factory):
    prefixes = h.write_sub_models(tmp_path_factory.mktemp("sub"))
    return prefixes, [h.tf_values(p) for p in prefixes]


def test_target_names_are_object_paths():
    m = SubModel()
    m.extra = [tf.Variable(1.0)]
    assert sorted(target_variables(m)) == [
        "extra/0",
        "fc1/bias",
        "fc1/kernel",
        "fc2/bias",
        "fc2/kernel",
    ]
    names = sorted(target_variables(tf.train.Checkpoint(model=m)))
    assert names[0] == "model/extra/0" and "model/fc2/kernel" in names
    with pytest.raises(ValueError, match="has no variables to restore"):
        target_variables(tf.Module())


def test_restore_module_from_tf1_with_map(sub_models):
    (_, prefix_2), (_, values_2) = sub_models
    m = SubModel()
    report = restore(m, prefix_2, {"model/": "/"})
    assert report.applied and report.ok
    assert report.loaded == {
        "fc1/bias": "model/fc1/bias",
        "fc1/kernel": "model/fc1/kernel",
        "fc2/bias": "model/fc2/bias",
        "fc2/kernel": "model/fc2/kernel",
    }
    assert "global_step" in report.unused and "model/fc1/kernel/Adam" in report.unused
    assert h.same_bits(m.fc1.kernel.numpy(), values_2["model/fc1/kernel"])
    assert h.same_bits(m.fc2.bias.numpy(), values_2["model/fc2/bias"])


def test_checkpoint_root_names_model_scope(sub_models):
    """A TF1 checkpoint under model/ fits tf.train.Checkpoint(model=m) with no map."""
    (_, prefix_2), (_, values_2) = sub_models
    m = SubModel()
    report = restore(tf.train.Checkpoint(model=m), prefix_2)
    assert report.loaded["model/fc1/kernel"] == "model/fc1/kernel"
    assert h.same_bits(m.fc1.bias.numpy(), values_2["model/fc1/bias"])


def test_variable_objects_as_map_values(sub_models):
    (prefix_1, _), (values_1, _) = sub_models
    m = SubModel()
    report = restore(m, prefix_1, {"fc1/kernel": m.fc1.kernel})
    assert report.loaded == {"fc1/kernel": "fc1/kernel"}
    assert h.same_bits(m.fc1.kernel.numpy(), values_1["fc1/kernel"])
    assert float(m.fc2.kernel.numpy()[0, 0]) == -1.0  # untouched


def test_mismatch_changes_nothing(sub_models):
    (prefix_1, _), _ = sub_models
    m = SubModel(fc1_out=5)
    before = _values(m)
    with pytest.raises(CheckpointMismatchError, match=r"fc1/kernel <- fc1/kernel: shape \[4, 5\]"):
        restore(m, prefix_1)
    after = _values(m)
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_bad_map_and_missing_checkpoint(sub_models, tmp_path):
    (prefix_1, prefix_2), _ = sub_models
    with pytest.raises(AssignmentMapError, match="looks reversed"):
        restore(SubModel(), prefix_2, {"/": "model/"})
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint in directory"):
        restore(SubModel(), tmp_path)
    with pytest.raises(CheckpointMismatchError, match="not in the checkpoint"):
        restore(SubModel(), prefix_2)  # keys are under model/: nothing matches by name
    report = restore(SubModel(), prefix_2, on_missing="ignore")
    assert len(report.missing) == 4 and not report.loaded


def test_restore_from_object_based_checkpoint(tmp_path):
    src = SubModel()
    for v in src.trainable_variables:
        v.assign(tf.random.normal(v.shape))
    path = tf.train.Checkpoint(model=src).write(str(tmp_path / "obj" / "ckpt"))
    into_ckpt = SubModel()
    report = restore(tf.train.Checkpoint(model=into_ckpt), path)
    assert report.loaded["model/fc1/kernel"] == "model/fc1/kernel"
    into_module = SubModel()
    restore(into_module, path, {"model/": "/"})
    for a, b, c in zip(
        src.trainable_variables,
        into_ckpt.trainable_variables,
        into_module.trainable_variables,
        strict=True,
    ):
        assert h.same_bits(a.numpy(), b.numpy()) and h.same_bits(a.numpy(), c.numpy())


def _keras_model():
    layers = tf.keras.layers
    return tf.keras.Sequential(
        [tf.keras.Input((4,)), layers.Dense(3, name="fc1"), layers.Dense(2, name="fc2")]
    )


def test_keras_root_uses_the_keras_front_end_names(sub_models):
    (prefix_1, prefix_2), (values_1, values_2) = sub_models
    model = _keras_model()
    report = restore(model, prefix_1)
    assert sorted(report.loaded) == ["fc1/bias", "fc1/kernel", "fc2/bias", "fc2/kernel"]
    assert h.same_bits(model.get_layer("fc1").kernel.numpy(), values_1["fc1/kernel"])
    # Inside a tf.train.Checkpoint, the Keras names sit under the attribute path.
    model = _keras_model()
    report = restore(tf.train.Checkpoint(model=model), prefix_2)
    assert "model/fc2/kernel" in report.loaded
    assert h.same_bits(model.get_layer("fc2").kernel.numpy(), values_2["model/fc2/kernel"])


def test_restore_or_initialize_three_ways(sub_models, tmp_path):
    (_, prefix_2), (_, values_2) = sub_models

    def manager_for(m):
        ckpt = tf.train.Checkpoint(model=m)
        return tf.train.CheckpointManager(ckpt, str(tmp_path / "run"), max_to_keep=2)

    # 1. No run checkpoint, no warm start: initial values stay.
    m = SubModel()
    result = restore_or_initialize(manager_for(m))
    assert result == InitResult("initialized") and str(result) == "initialized"
    assert float(m.fc1.kernel.numpy()[0, 0]) == -1.0

    # 2. No run checkpoint, a warm start: loaded once, with a report.
    m = SubModel()
    manager = manager_for(m)
    result = restore_or_initialize(manager, prefix_2)
    assert result.outcome == "warm_started" and result.report.ok
    assert result.checkpoint == prefix_2
    assert h.same_bits(m.fc1.kernel.numpy(), values_2["model/fc1/kernel"])

    # Training moves on and saves; a restarted job resumes and skips the warm start.
    m.fc1.kernel.assign_add(tf.ones_like(m.fc1.kernel))
    saved = manager.save()
    trained = m.fc1.kernel.numpy()
    m2 = SubModel()
    result = restore_or_initialize(manager_for(m2), prefix_2)
    assert result.outcome == "resumed" and result.checkpoint == saved and result.report is None
    result.status.assert_existing_objects_matched()
    assert h.same_bits(m2.fc1.kernel.numpy(), trained)

    with pytest.raises(TypeError, match="unexpected keyword argument .on_missin."):
        restore_or_initialize(manager_for(SubModel()), prefix_2, on_missin="ignore")


def test_warm_start_error_assigns_nothing(sub_models, tmp_path):
    (prefix_1, _), _ = sub_models
    m = SubModel()
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=m), str(tmp_path), 1)
    with pytest.raises(CheckpointMismatchError):
        restore_or_initialize(manager, prefix_1)  # keys at the root, targets under model/
    assert float(m.fc1.kernel.numpy()[0, 0]) == -1.0
    result = restore_or_initialize(manager, prefix_1, {"/": "model/"})
    assert result.outcome == "warm_started" and len(result.report.loaded) == 4
