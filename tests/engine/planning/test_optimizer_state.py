"""One optimizer-state list, proven against the names real optimizers give their state.

Each checkpoint here is written by the real optimizer: every ``tf.compat.v1.train``
optimizer, every Keras 2 legacy optimizer (``tf_keras`` on TF >= 2.16, ``tf.keras`` on
2.15) and bert-tensorflow's ``AdamWeightDecayOptimizer`` (BERT, ALBERT, ELECTRA
fine-tunes). :data:`~tf1compat_init.policy.OPTIMIZER_STATE` must name every key but the
model's weights, and the three users of the list (the default ``optional`` policy,
migrate's ``drop_optimizer`` and the recipes' ``TRAINING_STATE``) must agree.
"""

from __future__ import annotations

import re

import pytest

tf = pytest.importorskip("tensorflow")

from tf1compat_init import open_checkpoint, plan_restore  # noqa: E402
from tf1compat_init.migrate import OPTIMIZER_PATTERNS, migrate  # noqa: E402
from tf1compat_init.policy import DEFAULT_OPTIONAL, OPTIMIZER_STATE  # noqa: E402
from tf1compat_init.recipes import TRAINING_STATE  # noqa: E402

V1 = tf.compat.v1
WEIGHTS = {"model/dense/kernel", "model/dense/bias"}


def _is_state(key: str, patterns=OPTIMIZER_STATE) -> bool:
    return any(re.search(p, key) for p in patterns)


def _save(tmp_path, build) -> str:
    """A TF1 graph with two weights, ``build(loss, variables)`` adds the optimizer; saved."""
    with tf.Graph().as_default():
        with V1.variable_scope("model/dense"):
            w = V1.get_variable("kernel", [3, 2])
            b = V1.get_variable("bias", [2])
        loss = tf.reduce_sum(tf.square(w)) + tf.reduce_sum(tf.square(b))
        build(loss, [w, b])
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return V1.train.Saver().save(sess, str(tmp_path / "model.ckpt"))


def _step():
    return V1.train.get_or_create_global_step()


TF1_OPTIMIZERS = {
    "GradientDescent": lambda: V1.train.GradientDescentOptimizer(0.1),
    "Momentum": lambda: V1.train.MomentumOptimizer(0.1, 0.9),
    "Adam": lambda: V1.train.AdamOptimizer(),
    "RMSProp": lambda: V1.train.RMSPropOptimizer(0.1, momentum=0.9),
    "RMSProp-centered": lambda: V1.train.RMSPropOptimizer(0.1, centered=True),
    "Adagrad": lambda: V1.train.AdagradOptimizer(0.1),
    "AdagradDA": lambda: V1.train.AdagradDAOptimizer(0.1, _step()),
    "Adadelta": lambda: V1.train.AdadeltaOptimizer(),
    "Ftrl": lambda: V1.train.FtrlOptimizer(0.1),
    "Ftrl-shrinkage": lambda: V1.train.FtrlOptimizer(0.1, l2_shrinkage_regularization_strength=0.1),
    "ProximalAdagrad": lambda: V1.train.ProximalAdagradOptimizer(0.1),
    "two-Adams": "two",
}


def _tf1(name):
    def build(loss, variables):
        if name == "two-Adams":  # a second instance: Adam_2, Adam_3, beta1_power_1
            V1.train.AdamOptimizer().minimize(loss, global_step=_step())
            V1.train.AdamOptimizer().minimize(loss)
            return
        TF1_OPTIMIZERS[name]().minimize(loss, global_step=_step())

    return build


def _keras2():
    try:
        import tf_keras as k2
    except ImportError:
        if not tf.__version__.startswith("2.15"):
            pytest.skip("Keras 2 (tf_keras) is not installed")
        k2 = tf.keras
    return k2


KERAS2 = ["Adam", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl"]


def _keras2_build(name):
    def build(loss, variables):
        cls = getattr(_keras2().optimizers.legacy, name)
        opt = cls(momentum=0.9) if name in ("SGD", "RMSprop") else cls()
        opt.get_updates(loss, variables)

    return build


def _bert_build(loss, variables):
    # bert-tensorflow's optimizer, as run_classifier.py builds it (warmup, decay, clipping).
    from bert import optimization

    optimization.create_optimizer(loss, 1e-3, 10, 2, False)


def _check(prefix: str, tmp_path) -> None:
    keys = set(open_checkpoint(prefix).variables)
    state = {k for k in keys if k not in WEIGHTS}
    assert state, keys
    # The list names every key of the optimizer and none of the model's.
    assert {k for k in keys if _is_state(k)} == state
    for patterns in (DEFAULT_OPTIONAL, OPTIMIZER_PATTERNS, TRAINING_STATE):
        assert {k for k in keys if _is_state(k, patterns)} == state
    # migrate --drop-optimizer keeps exactly the weights.
    out = migrate(prefix, tmp_path / "out" / "w.ckpt", drop_optimizer=True)
    assert set(out.tensors) == WEIGHTS
    assert set(out.excluded) == state
    # A fine-tuning graph with the same optimizer warm-starts from the weights alone:
    # its state is optional under the default policy, missing under TF's strictness.
    specs = {k: None for k in keys}
    plan = plan_restore(str(tmp_path / "out" / "w.ckpt"), specs, {"model/": "model/"})
    assert set(plan.report.loaded) == WEIGHTS
    assert set(plan.report.optional) | set(plan.report.untouched) == state
    assert not plan.report.missing_required


@pytest.mark.parametrize("name", sorted(TF1_OPTIMIZERS))
def test_tf_compat_v1_train_optimizers(name, tmp_path):
    if name == "GradientDescent":  # no slots: only global_step
        prefix = _save(tmp_path, _tf1(name))
        assert set(open_checkpoint(prefix).variables) == WEIGHTS | {"global_step"}
    _check(_save(tmp_path, _tf1(name)), tmp_path)


@pytest.mark.parametrize("name", KERAS2)
def test_keras2_legacy_optimizers(name, tmp_path):
    _check(_save(tmp_path, _keras2_build(name)), tmp_path)


def test_keras2_compiled_in_a_tf1_graph_is_under_training(tmp_path):
    # model.compile/fit in graph mode puts the optimizer under ``training/``.
    assert _is_state("training/Adam/dense/kernel/m")
    assert _is_state("training_1/SGD/iter")
    assert not _is_state("training/dense/kernel")  # a model scope named training


def test_bert_adam_weight_decay_optimizer(tmp_path):
    prefix = _save(tmp_path, _bert_build)
    keys = set(open_checkpoint(prefix).variables)
    assert {"model/dense/kernel/adam_m", "model/dense/kernel/adam_v", "global_step"} <= keys
    _check(prefix, tmp_path)


def test_bert_fine_tune_slots_are_optional_with_a_scope_map(tmp_path):
    # The failure: a fine-tuning graph (adam_m/adam_v slots for every weight)
    # loading a pretrained BERT checkpoint (weights only) through {"bert/": "bert/"}.
    pretrained = _save(tmp_path, lambda loss, v: None)
    targets = {k: None for k in WEIGHTS}
    targets.update({f"{k}/adam_{s}": None for k in WEIGHTS for s in "mv"})
    plan = plan_restore(pretrained, targets, {"model/": "model/"})
    assert set(plan.report.loaded) == WEIGHTS
    assert len(plan.report.optional) == 4 and plan.report.ok


@pytest.mark.parametrize(
    "key",
    [
        "w/adafactor_vr",
        "w/adafactor_vc",
        "w/adafactor_v",
        "encoder/block_000/layer_000/SelfAttention/q_slot_vr",
        "w/lamb_m",
        "w/lamb_v",
        "w/LAMB_1",
        "w/AdamW",
        "w/AdamW_1",
        "beta2_power_3",
    ],
)
def test_other_optimizer_families_by_name(key):
    # Adafactor (tensor2tensor, Mesh TF), LAMB and contrib's AdamW are not installed
    # here; these are the names their code gives.
    assert _is_state(key)


@pytest.mark.parametrize(
    "key",
    [
        "bert/embeddings/word_embeddings",
        "bert/encoder/layer_0/attention/self/query/kernel",
        "model/adam/kernel",
        "Adamant/kernel",
        "model/momentum",
        "global_step_size",
        "slot_vr/kernel",
    ],
)
def test_model_weights_are_not_state(key):
    assert not _is_state(key)
