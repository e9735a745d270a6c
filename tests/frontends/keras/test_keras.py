"""The Keras front end: names, load_checkpoint, CheckpointInit and the TF1 hooks as callbacks.

Flavour-neutral: ``keras`` is ``tf.keras``, so the tf221 leg runs these against Keras 3,
the tf215 leg against Keras 2, and tests/frontends/keras/test_keras_legacy.py runs this same file under
``TF_USE_LEGACY_KERAS=1`` against tf_keras.
"""

import logging
import os
import shutil

import numpy as np
import pytest

pytest.importorskip("tensorflow")

import tensorflow as tf  # noqa: E402
from support.keras_helpers import (  # noqa: E402
    TF1_MLP,
    flavour,
    keras,
    mlp,
    reference_models,
    values_of,
    write_tf1_checkpoint,
)

from tf1compat_init import (  # noqa: E402
    AssignmentMapError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
)
from tf1compat_init.keras import (  # noqa: E402
    CheckpointInit,
    CheckpointSaver,
    KerasModelError,
    LoggingTensor,
    StopAtStep,
    load_checkpoint,
    plan_checkpoint,
    weight_names,
)
from tf1compat_init.keras import _callbacks as _keras_callbacks  # noqa: E402

FLAVOUR = flavour()
X = np.linspace(-1, 1, 64, dtype=np.float32).reshape(16, 4)
Y = np.linspace(0, 1, 32, dtype=np.float32).reshape(16, 2)
FC_MAP = {"model/dense/": "fc1/", "model/dense_1/": "fc2/"}
ROOT_MLP = {k.removeprefix("model/"): v for k, v in TF1_MLP.items()}


@pytest.fixture(scope="module")
def tf1(tmp_path_factory):
    """TF1 checkpoints: the MLP under ``model/`` and at the root."""
    d = tmp_path_factory.mktemp("tf1")
    return {
        "model": write_tf1_checkpoint(str(d / "model" / "model.ckpt"), TF1_MLP),
        "root": write_tf1_checkpoint(str(d / "root" / "model.ckpt"), ROOT_MLP, global_step=None),
    }


def expected(model):
    """The TF1 checkpoint's values, in the weight order of a two-Dense ``model``."""
    assert len(model.weights) == 4
    return [TF1_MLP[f"model/{d}/{w}"] for d in ("dense", "dense_1") for w in ("kernel", "bias")]


def assert_values(model, values):
    got = values_of(model)
    assert len(got) == len(values)
    for g, v in zip(got, values, strict=True):
        np.testing.assert_array_equal(g, v)


def compiled(model, lr=0.01):
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse")
    return model


# -- names -------------------------------------------------------------------------------------


def test_names_are_model_relative_for_sequential_functional_and_nested():
    seq = mlp()
    assert list(weight_names(seq)) == ["fc1/kernel", "fc1/bias", "fc2/kernel", "fc2/bias"]

    encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="fc")], name="enc")
    inp = keras.Input((4,))
    out = keras.layers.Dense(2, name="head")(encoder(inp))
    functional = keras.Model(inp, out, name="outer")
    assert list(weight_names(functional)) == [
        "enc/fc/kernel",
        "enc/fc/bias",
        "head/kernel",
        "head/bias",
    ]
    # A sub-model alone has the names it has inside its parent, minus its own name.
    assert list(weight_names(functional.get_layer("enc"))) == ["fc/kernel", "fc/bias"]


def test_names_in_subclassed_models_go_down_to_the_owning_layer():
    net = reference_models()["net"]
    assert sorted(weight_names(net)) == [
        "block/fc/bias",
        "block/fc/kernel",
        "block/scale",
        "rnn/lstm_cell/bias",
        "rnn/lstm_cell/kernel",
        "rnn/lstm_cell/recurrent_kernel",
    ]


class _TwoSameNames(keras.layers.Layer):
    def build(self, input_shape):
        self.a = self.add_weight(name="w", shape=(2,))
        self.b = self.add_weight(name="w", shape=(2,))
        super().build(input_shape)

    def call(self, x):
        return x


def test_duplicate_names_are_an_error_that_says_how_to_rename():
    layer = _TwoSameNames(name="twin")
    model = keras.Sequential([keras.Input((2,)), layer])
    with pytest.raises(KerasModelError) as e:
        weight_names(model)
    assert "'twin/w'" in str(e.value)
    assert "add_weight(..., name=" in str(e.value)


class _SiblingsWithOneName(keras.Model):
    def __init__(self):
        super().__init__(name="siblings")
        self.a = keras.layers.Dense(2, name="fc")
        self.b = keras.layers.Dense(2, name="fc")

    def call(self, x):
        return self.b(self.a(x))


def test_sibling_layers_with_one_name_are_an_error():
    model = _SiblingsWithOneName()
    model(tf.zeros((1, 2)))
    with pytest.raises(KerasModelError, match="'fc/kernel': 2 different layers are named 'fc'"):
        weight_names(model)


def test_unbuilt_model_error_shows_how_to_build(tf1):
    model = mlp(built=False)
    with pytest.raises(KerasModelError, match=r"not built.*model\.build\(\(None, 784\)\)"):
        load_checkpoint(model, tf1["model"], {"model/": "/"})
    assert "input_shape=" in str(pytest.raises(KerasModelError, weight_names, model).value)


def test_model_without_weights_is_a_clear_error(tf1):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Flatten()])
    with pytest.raises(KerasModelError, match="has no weights"):
        load_checkpoint(model, tf1["root"])


def test_not_a_keras_model():
    with pytest.raises(TypeError, match="expected a Keras model or layer"):
        weight_names(tf.Module())


# -- load_checkpoint -----------------------------------------------------------------------


def test_load_tf1_checkpoint_with_a_scope_map(tf1):
    model = mlp(names=("dense", "dense_1"))
    report = load_checkpoint(model, tf1["model"], {"model/": "/"})
    assert_values(model, expected(model))
    assert report.applied and report.ok
    assert report.loaded == {
        "dense/bias": "model/dense/bias",
        "dense/kernel": "model/dense/kernel",
        "dense_1/bias": "model/dense_1/bias",
        "dense_1/kernel": "model/dense_1/kernel",
    }
    assert report.unused == ["global_step"]


def test_identity_with_other_names_changes_nothing_and_suggests_auto(tf1):
    model = mlp()
    before = values_of(model)
    with pytest.raises(CheckpointMismatchError) as e:
        load_checkpoint(model, tf1["model"])
    assert "fc1/kernel <- fc1/kernel: not in the checkpoint" in str(e.value)
    assert "Nothing was changed" in str(e.value)
    assert "assignment_map='auto'" not in str(e.value)  # fc1 is not dense: auto cannot help
    assert_values(model, before)
    numbered = mlp(names=("dense", "dense_1"))
    with pytest.raises(CheckpointMismatchError) as e:
        load_checkpoint(numbered, tf1["model"])
    assert "assignment_map='auto' would load all 4 weights, with the map {'model/': '/'}" in str(
        e.value
    )


def test_auto_derives_numbering_and_prefix(tf1):
    mlp(names=None)  # take some numbers, so that this process' names really differ
    model = mlp(names=None)
    first, second = (layer.name for layer in model.layers)
    assert (first, second) != ("dense", "dense_1")
    report = load_checkpoint(model, tf1["model"], "auto")
    assert_values(model, expected(model))
    assert report.applied_map == {"model/dense/": f"{first}/", "model/dense_1/": f"{second}/"}
    # The derived map is a plain map: passing it again does the same.
    again = load_checkpoint(model, tf1["model"], report.applied_map)
    assert again.loaded == report.loaded


def test_auto_compact_prefix_map(tf1):
    model = mlp(names=("dense", "dense_1"))
    report = load_checkpoint(model, tf1["model"], "auto")
    assert report.applied_map == {"model/": "/"}
    assert_values(model, expected(model))


def test_auto_on_identical_names_is_identity(tf1):
    model = mlp(names=("dense", "dense_1"))
    report = load_checkpoint(model, tf1["root"], "auto")
    assert report.applied_map == {"/": "/"}
    assert_values(model, expected(model))


def test_auto_model_prefix_on_the_target_side(tf1):
    layers = [keras.layers.Dense(3, name="dense"), keras.layers.Dense(2, name="dense_1")]
    inner = keras.Sequential([keras.Input((4,)), *layers], name="inner")
    outer = keras.Sequential([keras.Input((4,)), inner])
    report = load_checkpoint(outer, tf1["root"], "auto")
    assert report.applied_map == {"/": "inner/"}
    assert_values(outer, expected(inner))


def test_auto_with_unmatched_weights_raises_or_warns(tf1, caplog):
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, name="dense"), keras.layers.Dense(2, name="out")]
    )
    before = values_of(model)
    # Identical names pair; the rest is missing, as with an identity map.
    with pytest.raises(CheckpointMismatchError, match="out/kernel <- out/kernel: not in the"):
        load_checkpoint(model, tf1["root"], "auto")
    assert_values(model, before)
    with caplog.at_level(logging.WARNING):
        report = load_checkpoint(model, tf1["root"], "auto", on_missing="warn")
    assert sorted(report.loaded) == ["dense/bias", "dense/kernel"]
    assert "out/kernel" in caplog.text
    np.testing.assert_array_equal(values_of(model)[2], before[2])


def test_auto_says_which_weights_it_could_not_pair(tf1, caplog):
    mlp(names=None)  # take some numbers
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(2)]
        + [keras.layers.Dense(2, name="extra")]
    )
    before = values_of(model)
    with pytest.raises(CheckpointMismatchError) as e:
        load_checkpoint(model, tf1["model"], "auto")
    assert "found no checkpoint value for 2 weight(s)" in str(e.value)
    assert "extra/kernel" in str(e.value) and "Nothing was changed" in str(e.value)
    assert_values(model, before)
    with caplog.at_level(logging.WARNING):
        report = load_checkpoint(model, tf1["model"], "auto", on_missing="warn")
    assert len(report.loaded) == 4 and report.untouched == ["extra/kernel", "extra/bias"]
    assert "extra/bias" in caplog.text


def test_auto_ambiguous_prefix_is_an_error(tmp_path):
    values = {"a/dense/kernel": np.ones((4, 3), np.float32)}
    values["b/dense/kernel"] = np.zeros((4, 3), np.float32)
    path = write_tf1_checkpoint(str(tmp_path / "m.ckpt"), values)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="dense")])
    with pytest.raises(AssignmentMapError, match=r"ambiguous.*\{'a/': '/'\}.*\{'b/': '/'\}"):
        load_checkpoint(model, path, "auto", exclude=["bias"])


def test_shape_mismatch_changes_nothing(tf1):
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(5, name="dense"), keras.layers.Dense(2)]
    )
    before = values_of(model)
    with pytest.raises(CheckpointMismatchError, match=r"dense/kernel <- dense/kernel: shape"):
        load_checkpoint(model, tf1["root"], {"dense/": "dense/"})
    assert_values(model, before)


def test_map_values_may_be_the_models_own_weights(tf1):
    model = mlp()
    kernel = model.get_layer("fc1").kernel
    report = load_checkpoint(model, tf1["model"], {"model/dense/kernel": kernel})
    assert report.loaded == {"fc1/kernel": "model/dense/kernel"}
    np.testing.assert_array_equal(kernel.numpy(), TF1_MLP["model/dense/kernel"])
    stranger = mlp(names=("x1", "x2"))
    with pytest.raises(AssignmentMapError, match="not a weight of the model"):
        load_checkpoint(model, tf1["model"], {"model/dense/kernel": stranger.weights[0]})


def test_policy_arguments_are_checked(tf1):
    model = mlp()
    with pytest.raises(TypeError, match="unexpected keyword argument 'on_missign'"):
        load_checkpoint(model, tf1["model"], on_missign="warn")
    with pytest.raises(ValueError, match="on_mismatch='skip'"):
        load_checkpoint(model, tf1["model"], on_mismatch="skip")
    with pytest.raises(AssignmentMapError, match="Did you mean"):
        load_checkpoint(model, tf1["model"], "model/")


def test_plan_checkpoint_changes_nothing(tf1):
    model = mlp(names=None)
    before = values_of(model)
    plan, targets = plan_checkpoint(model, tf1["model"], "auto")
    assert len(plan.report.loaded) == 4 and not plan.report.applied
    assert sorted(targets) == sorted(weight_names(model))
    assert_values(model, before)


# -- object-based checkpoints --------------------------------------------------------------


@pytest.fixture(scope="module")
def object_ckpt(tmp_path_factory):
    """A trained, compiled model saved with tf.train.Checkpoint, and its weights."""
    model = compiled(mlp(), lr=0.1)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path_factory.mktemp("obj") / "ckpt"))
    return path, values_of(model), model.name


def test_object_based_checkpoint_plans_against_saved_names(object_ckpt):
    path, values, src_name = object_ckpt
    model = mlp()
    report = load_checkpoint(model, path, "auto")
    assert_values(model, values)
    # Keras 3 saves Sequential weights as "<model>/fc1/kernel"; tf_keras and Keras 2 as "fc1/kernel".
    prefix = f"{src_name}/" if FLAVOUR == "keras3" else ""
    assert report.loaded["fc1/kernel"] == f"{prefix}fc1/kernel"
    assert not any(".ATTRIBUTES" in k for k in report.unused)


class _Pair(keras.Model):
    def __init__(self):
        super().__init__(name="pair")
        self.d = keras.layers.Dense(2, name="first")
        self.e = keras.layers.Dense(2, name="second")

    def call(self, x):
        return self.e(self.d(x))


def test_object_based_subclassed_model(tmp_path):
    src = _Pair()
    src(tf.zeros((1, 3)))
    path = tf.train.Checkpoint(model=src).save(str(tmp_path / "ckpt"))
    dst = _Pair()
    dst(tf.zeros((1, 3)))
    if FLAVOUR == "keras3":
        # Keras 3 saves both kernels as "pair/kernel": the object paths stand in for them.
        plan, _ = plan_checkpoint(dst, path, on_missing="ignore")
        assert {"model/d/_kernel", "model/e/_kernel"} <= set(plan.report.unused)
        amap = {"model/d/_kernel": "first/kernel", "model/e/_kernel": "second/kernel"}
        amap.update({"model/d/bias": "first/bias", "model/e/bias": "second/bias"})
    else:
        amap = "auto"  # saved as "pair/first/kernel", ...
    report = load_checkpoint(dst, path, amap)
    assert sorted(report.loaded) == ["first/bias", "first/kernel", "second/bias", "second/kernel"]
    assert_values(dst, values_of(src))


# -- CheckpointInit ------------------------------------------------------------------------


class _Probe(keras.callbacks.Callback):
    """Records the weights and the step each callback-visible moment sees."""

    def on_train_begin(self, logs=None):
        self.begin = values_of(self.model)
        self.begin_step = int(self.model.optimizer.iterations.numpy())


def test_checkpoint_init_builds_and_warm_starts_in_fit(tf1):
    model = compiled(mlp(built=False))
    init = CheckpointInit(tf1["model"], FC_MAP, input_shape=(None, 4))
    probe = _Probe()
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[init, probe])
    assert init.report is not None and init.report.ok and init.skipped is None
    assert_values_list(probe.begin, expected(model))


def assert_values_list(got, want):
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_checkpoint_init_runs_once_per_instance(tf1):
    model = compiled(mlp())
    init = CheckpointInit(tf1["model"], FC_MAP)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[init])
    trained = values_of(model)
    model.optimizer.iterations.assign(0)  # not even a zero step count brings it back
    model.fit(X, Y, batch_size=16, epochs=1, verbose=0, callbacks=[init, probe := _Probe()])
    assert init.skipped == "it already ran once for this callback"
    assert_values_list(probe.begin, trained)


def test_checkpoint_init_skips_when_the_optimizer_has_stepped(tf1):
    model = compiled(mlp())
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    init = CheckpointInit(tf1["model"], FC_MAP)
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[init])
    assert init.report is None and "optimizer.iterations is 2" in init.skipped


def test_checkpoint_init_allow_missing(tmp_path, caplog):
    with pytest.raises(CheckpointNotFoundError, match="allow_missing=True"):
        CheckpointInit(None)
    model = compiled(mlp())
    init = CheckpointInit(str(tmp_path / "nothing"), allow_missing=True)
    with caplog.at_level(logging.WARNING):
        model.fit(X, Y, batch_size=16, epochs=1, verbose=0, callbacks=[init])
    assert init.report is None and init.skipped.startswith("no checkpoint")
    assert "variables keep their initial values (allow_missing=True)" in caplog.text


def test_checkpoint_init_allow_missing_still_refuses_a_broken_checkpoint(tmp_path):
    # A state file pointing to a deleted checkpoint is broken, not absent: it must raise.
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-7"\n')
    model = compiled(mlp())
    init = CheckpointInit(str(tmp_path), allow_missing=True)
    with pytest.raises(CheckpointNotFoundError, match="was the checkpoint deleted"):
        model.fit(X, Y, batch_size=16, epochs=1, verbose=0, callbacks=[init])


def test_checkpoint_init_checks_its_arguments_at_construction():
    with pytest.raises(TypeError, match="unexpected keyword argument 'on_mising'"):
        CheckpointInit("x", on_mising="warn")
    with pytest.raises(AssignmentMapError):
        CheckpointInit("x", "model/")


def test_checkpoint_init_resume_dir_when_called_by_hand(tf1, tmp_path):
    run = tmp_path / "run"
    model = compiled(mlp())
    init = CheckpointInit(tf1["model"], FC_MAP, resume_dir=str(run))
    init.set_model(model)
    init.on_train_begin()  # no checkpoint in run/ yet: warm start
    assert init.report is not None
    tf.train.Checkpoint(model=model).save(str(run / "ckpt"))
    again = CheckpointInit(tf1["model"], FC_MAP, resume_dir=[str(tmp_path / "x"), str(run)])
    again.set_model(compiled(mlp()))
    again.on_train_begin()
    assert again.report is None and again.skipped.endswith(
        f"resume_dir directory {run} holds a checkpoint"
    )


def _export_into(run, prefix):
    """Copies the checkpoint at ``prefix`` to ``run/export/model.ckpt.*``: an export, not state."""
    export = run / "export"
    export.mkdir(parents=True)
    folder, base = os.path.split(prefix)
    for f in os.listdir(folder):
        if f.startswith(base + "."):
            shutil.copy(os.path.join(folder, f), export / ("model.ckpt" + f[len(base) :]))
    assert (export / "model.ckpt.index").is_file()


def test_checkpoint_init_ignores_an_export_below_resume_dir(tf1, tmp_path):
    run = tmp_path / "run"
    _export_into(run, tf1["model"])
    model = compiled(mlp())
    init = CheckpointInit(tf1["model"], FC_MAP, resume_dir=str(run))
    init.set_model(model)
    init.on_train_begin()
    assert init.skipped is None and init.report is not None and init.report.ok
    assert_values(model, expected(model))


@pytest.mark.parametrize("saver_first", [True, False], ids=["saver-before", "saver-after"])
def test_checkpoint_init_ignores_an_export_below_the_checkpoint_saver_dir(
    tf1, tmp_path, saver_first
):
    run = tmp_path / "run"
    _export_into(run, tf1["model"])
    model = compiled(mlp())
    init = CheckpointInit(tf1["model"], FC_MAP)
    saver = CheckpointSaver(str(run), save_steps=100)
    probe = _Probe()
    cbs = [saver, init, probe] if saver_first else [init, saver, probe]
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=cbs)
    assert saver.restored is None  # nothing of its own to restore...
    assert init.skipped is None and init.report is not None  # ...so the warm start ran
    assert probe.begin_step == 0
    assert_values_list(probe.begin, expected(model))


@pytest.mark.parametrize(
    ("files", "resumes"),
    [
        (["checkpoint"], True),  # CheckpointManager's state file
        (["ckpt-3.index"], True),
        (["training_metadata.json"], True),  # Keras 3 BackupAndRestore
        (["latest.weights.h5"], True),
        (["chief/checkpoint", "chief/ckpt-1.index"], True),  # tf_keras / Keras 2 backup
        (["export/model.ckpt.index"], False),
        (["export/checkpoint", "export/ckpt-1.index"], False),
        (["a/b/ckpt-1.index"], False),
        (["chief/notes.txt", "events.out.tfevents.1"], False),
    ],
)
def test_checkpoint_init_resume_dir_looks_only_at_its_own_state(tf1, tmp_path, files, resumes):
    run = tmp_path / "run"
    for f in files:
        (run / f).parent.mkdir(parents=True, exist_ok=True)
        (run / f).write_bytes(b"")
    init = CheckpointInit(tf1["model"], FC_MAP, resume_dir=str(run))
    init.set_model(compiled(mlp()))
    init.on_train_begin()
    if resumes:
        assert init.report is None
        assert init.skipped.endswith(f"resume_dir directory {run} holds a checkpoint")
    else:
        assert init.skipped is None and init.report is not None


class _Interrupt(keras.callbacks.Callback):
    def __init__(self, at_epoch):
        super().__init__()
        self.at_epoch = at_epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.at_epoch:
            raise RuntimeError("simulated preemption")


@pytest.fixture
def backup_dir(tmp_path, tf1):
    """A BackupAndRestore directory left by a run that was interrupted after one epoch."""
    d = str(tmp_path / "backup")
    model = compiled(mlp())
    cbs = [CheckpointInit(tf1["model"], FC_MAP), keras.callbacks.BackupAndRestore(d), _Interrupt(1)]
    with pytest.raises(RuntimeError, match="simulated preemption"):
        model.fit(X, Y, batch_size=8, epochs=3, verbose=0, callbacks=cbs)
    return d, values_of(model)


def test_checkpoint_init_resume_dir_sees_a_real_backup(tf1, backup_dir):
    # Keras 3 writes the backup in the directory itself, tf_keras and Keras 2 in chief/.
    d, _ = backup_dir
    init = CheckpointInit(tf1["model"], FC_MAP, resume_dir=d)
    init.set_model(compiled(mlp()))
    init.on_train_begin()
    assert init.report is None
    assert init.skipped.endswith(f"resume_dir directory {d} holds a checkpoint")


@pytest.mark.parametrize("init_first", [True, False], ids=["init-before", "init-after"])
def test_checkpoint_init_skipped_on_resume_either_side_of_backup_and_restore(
    tf1, backup_dir, init_first
):
    d, interrupted = backup_dir
    model = compiled(mlp())
    init = CheckpointInit(tf1["model"], FC_MAP)
    backup = keras.callbacks.BackupAndRestore(d)
    probe = _Probe()
    cbs = [init, backup, probe] if init_first else [backup, init, probe]
    model.fit(X, Y, batch_size=8, epochs=3, verbose=0, callbacks=cbs)
    assert init.report is None
    if init_first:
        assert "BackupAndRestore directory" in init.skipped
    else:
        assert "optimizer.iterations is 2" in init.skipped
    assert probe.begin_step == 2  # the backup's state, not a warm start
    assert_values_list(probe.begin, interrupted)


# -- StopAtStep ----------------------------------------------------------------------------


def test_stop_at_step_constructor_errors_are_tf1s():
    with pytest.raises(ValueError, match=r"^One of num_steps or last_step must be specified\.$"):
        StopAtStep()
    with pytest.raises(ValueError, match=r"^Only one of num_steps or last_step can be specified"):
        StopAtStep(num_steps=1, last_step=2)


def test_stop_at_step_num_steps_counts_from_the_start_of_each_run():
    model = compiled(mlp())
    stop = StopAtStep(num_steps=3)
    model.fit(X, Y, batch_size=2, epochs=5, verbose=0, callbacks=[stop])
    assert int(model.optimizer.iterations.numpy()) == 3
    model.fit(X, Y, batch_size=2, epochs=5, verbose=0, callbacks=[stop])
    assert int(model.optimizer.iterations.numpy()) == 6


def test_stop_at_step_last_step_and_tf1s_one_extra_step():
    model = compiled(mlp())
    model.fit(X, Y, batch_size=2, epochs=5, verbose=0, callbacks=[StopAtStep(last_step=5)])
    assert int(model.optimizer.iterations.numpy()) == 5
    # Already past last_step: like TF1's hook, one step still runs.
    model.fit(X, Y, batch_size=2, epochs=5, verbose=0, callbacks=[StopAtStep(last_step=2)])
    assert int(model.optimizer.iterations.numpy()) == 6


# -- LoggingTensor --------------------------------------------------------------------------


def test_logging_tensor_constructor_errors_are_tf1s():
    msg = r"^either at_end and/or exactly one of every_n_iter and every_n_secs must be provided\.$"
    with pytest.raises(ValueError, match=msg):
        LoggingTensor("loss")
    with pytest.raises(ValueError, match=msg):
        LoggingTensor("loss", every_n_iter=1, every_n_secs=1)
    with pytest.raises(ValueError, match=r"^invalid every_n_iter=0\.$"):
        LoggingTensor("loss", every_n_iter=0)
    LoggingTensor("loss", at_end=True)  # at_end alone is enough


def _logged(caplog):
    return [r.getMessage() for r in caplog.records if r.name == _keras_callbacks.__name__]


def test_logging_tensor_every_n_iter_on_the_global_step(caplog):
    model = compiled(mlp())
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse", metrics=["mae"])
    log = LoggingTensor({"l": "loss", "a": "mae"}, every_n_iter=3, at_end=True)
    with caplog.at_level(logging.INFO, logger=_keras_callbacks.__name__):
        model.fit(X, Y, batch_size=2, epochs=1, verbose=0, callbacks=[log])
    lines = _logged(caplog)
    # Steps 1, 4, 7 (8 steps in all), then at_end: tags in sorted order, as TF1.
    assert len(lines) == 4, lines
    assert all(line.startswith("a = ") and ", l = " in line for line in lines)
    assert "sec)" in lines[1]


def test_logging_tensor_every_n_secs_and_unknown_names(caplog, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(_keras_callbacks, "_clock", lambda: now[0])

    class Tick(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            now[0] += 4.0

    model = compiled(mlp())
    log = LoggingTensor(["loss"], every_n_secs=10)
    with caplog.at_level(logging.INFO, logger=_keras_callbacks.__name__):
        model.fit(X, Y, batch_size=2, epochs=1, verbose=0, callbacks=[log, Tick()])
    # Batch ends at t=0 (first), 12, 24 (the clock ticks 4 s per step after logging).
    assert [line.split(" (")[-1] for line in _logged(caplog)] == [
        "loss = " + _logged(caplog)[0].split(" = ")[1],
        "12.000 sec)",
        "12.000 sec)",
    ]
    with pytest.raises(KeyError, match=r"'acc' is not in the training logs; they hold 'loss'"):
        model.fit(X, Y, batch_size=8, verbose=0, callbacks=[LoggingTensor("acc", every_n_iter=1)])


def test_logging_tensor_metric_objects_at_end(caplog):
    metric = keras.metrics.Mean(name="seen")

    class Count(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            metric.update_state(batch + 1.0)

    model = compiled(mlp())
    log = LoggingTensor([metric], at_end=True)
    with caplog.at_level(logging.INFO, logger=_keras_callbacks.__name__):
        model.fit(X, Y, batch_size=4, epochs=1, verbose=0, callbacks=[Count(), log])
    assert _logged(caplog) == ["seen = 2.5"]  # only at the end: mean of 1, 2, 3, 4


# -- CheckpointSaver -----------------------------------------------------------------------


def test_checkpoint_saver_constructor_errors_are_tf1s(tmp_path):
    with pytest.raises(
        ValueError, match=r"^Either every_secs or every_steps should be provided\.$"
    ):
        CheckpointSaver(str(tmp_path))
    with pytest.raises(ValueError, match=r"^Can not provide both every_secs and every_steps\.$"):
        CheckpointSaver(str(tmp_path), save_steps=1, save_secs=1)
    with pytest.raises(ValueError, match="max_to_keep=0"):
        CheckpointSaver(str(tmp_path), save_steps=1, max_to_keep=0)


def test_checkpoint_saver_restore_false_starts_over(tmp_path):
    run = str(tmp_path / "run")
    model = compiled(mlp())
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[CheckpointSaver(run, 1)])
    fresh = compiled(mlp())
    saver = CheckpointSaver(run, save_steps=1, restore=False)
    fresh.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=[saver])
    assert saver.restored is None and saver.saved == [1, 2]
    assert int(fresh.optimizer.iterations.numpy()) == 2


def test_checkpoint_saver_saves_restores_and_marks_resume(tmp_path, tf1):
    run = str(tmp_path / "run")
    model = compiled(mlp())
    saver = CheckpointSaver(run, save_steps=3, max_to_keep=2)
    init = CheckpointInit(tf1["model"], FC_MAP)
    model.fit(X, Y, batch_size=2, epochs=1, verbose=0, callbacks=[saver, init, StopAtStep(7)])
    assert saver.saved == [3, 6, 7] and init.report is not None
    assert tf.train.latest_checkpoint(run).endswith("ckpt-7")
    assert sorted(f for f in os.listdir(run) if f.endswith(".index")) == [
        "ckpt-6.index",
        "ckpt-7.index",
    ]
    final = values_of(model)
    # Our own checkpoints load with load_checkpoint too (object-based, saved names).
    assert load_checkpoint(mlp(), run, "auto").ok

    # A second run in a fresh process would look like this: either order skips the warm start.
    for saver_first in (True, False):
        resumed = shutil.copytree(run, str(tmp_path / f"resumed_{saver_first}"))
        fresh = compiled(mlp())
        saver2 = CheckpointSaver(resumed, save_steps=100)
        init2 = CheckpointInit(tf1["model"], FC_MAP)
        probe = _Probe()
        cbs = [saver2, init2, probe] if saver_first else [init2, saver2, probe]
        fresh.fit(X, Y, batch_size=8, epochs=1, verbose=0, callbacks=cbs)
        assert init2.report is None and saver2.restored.endswith("ckpt-7")
        assert ("optimizer.iterations is 7" if saver_first else "CheckpointSaver") in init2.skipped
        assert probe.begin_step == 7
        assert_values_list(probe.begin, final)
        assert saver2.saved == [9]  # at the end of the run


# -- a custom loop through the callback protocol ---------------------------------------------


def test_custom_loop_through_the_callback_protocol(tmp_path, tf1):
    model = mlp()
    optimizer = keras.optimizers.SGD(0.01)
    model.compile(optimizer=optimizer, loss="mse")  # gives the callbacks the global step
    init = CheckpointInit(tf1["model"], FC_MAP)
    saver = CheckpointSaver(str(tmp_path / "run"), save_steps=2)
    stop = StopAtStep(num_steps=3)
    callbacks = keras.callbacks.CallbackList([init, saver, stop], model=model)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    model.stop_training = False
    callbacks.on_train_begin()
    assert_values(model, expected(model))
    steps = 0
    for step in range(10):
        callbacks.on_train_batch_begin(step)
        loss = train_step(X[:4], Y[:4])
        steps += 1
        callbacks.on_train_batch_end(step, {"loss": float(loss)})
        if model.stop_training:
            break
    callbacks.on_train_end()
    assert steps == 3 and init.report is not None
    assert saver.saved == [2, 3]


def test_runs_under_the_expected_keras():
    # test_keras_legacy.py runs this file under TF_USE_LEGACY_KERAS=1 and says what it expects.
    assert os.environ.get("TF1COMPAT_EXPECT_FLAVOUR", FLAVOUR) == FLAVOUR
