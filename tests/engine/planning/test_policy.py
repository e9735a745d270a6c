"""The policy: one frozen RestorePolicy, one check, one wording, on every front end.

Every front end rejects a bad value with :func:`tf1compat_init.plan.check_policy_value`'s
message, before it opens the checkpoint or touches a variable; every front end takes the
keywords or ``policy=RestorePolicy(...)``, and ``staging`` reaches the apply step from each
one that assigns eagerly. The pure part runs without TensorFlow; the front ends run on both
legs (Keras 3 on tf221, Keras 2 on tf215).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from support.bundles import write_checkpoint

from tf1compat_init import DEFAULT_OPTIONAL, AssignmentMap, RestorePolicy, plan_restore
from tf1compat_init.plan import POLICY_CHOICES, check_policy_value, check_policy_values
from tf1compat_init.policy import EAGER_KEYWORDS, POLICY_KEYWORDS, UNSET, resolve_policy

#: A Dense(3) -> Dense(2) MLP on 4 inputs, named as every front end below names it.
VALUES = {
    "fc1/kernel": np.arange(12, dtype=np.float32).reshape(4, 3) / 10,
    "fc1/bias": np.array([1.0, 2.0, 3.0], np.float32),
    "fc2/kernel": -np.arange(6, dtype=np.float32).reshape(3, 2) / 10,
    "fc2/bias": np.array([7.0, 8.0], np.float32),
}
SPECS = {k: (v.shape, "float32") for k, v in VALUES.items()}

#: Bad values, one per keyword, plus values that are not strings at all.
BAD = [
    ("on_missing", "skip"),
    ("on_mismatch", "loud"),
    ("on_conflict", "first"),
    ("on_conflict", "warn"),  # valid for the other two keywords, not for this one
    ("on_missing", None),
    ("on_mismatch", True),
]


def message(name, value):
    """The one wording, spelled out here so that a change to it is a visible change."""
    allowed = {
        "on_missing": "'error', 'warn', 'ignore'",
        "on_mismatch": "'error', 'warn', 'ignore'",
        "on_conflict": "'error', 'last'",
        "staging": "'stream', 'all'",
    }[name]
    return (
        f"Invalid value for argument {name}. Received: {name}={value!r}. Expected one of {allowed}."
    )


def exact(name, value):
    return "^" + re.escape(message(name, value)) + "$"


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    """A name-based checkpoint every front end below would load in full."""
    return write_checkpoint(tmp_path_factory.mktemp("policy") / "model.ckpt", VALUES, "float32")


# -- the check itself (no TensorFlow) ---------------------------------------------------------


@pytest.mark.pure
def test_choices():
    assert POLICY_CHOICES == {
        "on_missing": ("error", "warn", "ignore"),
        "on_mismatch": ("error", "warn", "ignore"),
        "on_conflict": ("error", "last"),
    }


@pytest.mark.pure
@pytest.mark.parametrize(("name", "value"), BAD)
def test_check_policy_value_names_argument_value_and_choices(name, value):
    with pytest.raises(ValueError, match=exact(name, value)):
        check_policy_value(name, value)


@pytest.mark.pure
def test_check_policy_value_accepts_every_choice():
    for name, choices in POLICY_CHOICES.items():
        for value in choices:
            check_policy_value(name, value)
    check_policy_values({"exclude": ["x"], "optional": (), "verify": True})  # not policies


@pytest.mark.pure
def test_check_policy_values_rejects_an_array_without_ambiguity():
    # ``array in tuple`` would raise numpy's "truth value is ambiguous" instead.
    with pytest.raises(ValueError, match=r"^Invalid value for argument on_missing\."):
        check_policy_values({"on_missing": np.array(["warn", "error"])})


# -- RestorePolicy -----------------------------------------------------------------------------


@pytest.mark.pure
def test_restore_policy_defaults_are_the_keywords_defaults():
    policy = RestorePolicy()
    assert dataclasses.asdict(policy) == {
        "on_missing": "error",
        "on_mismatch": "error",
        "on_conflict": "error",
        "optional": DEFAULT_OPTIONAL,
        "exclude": (),
        "staging": "stream",
        "verify": False,
    }
    assert POLICY_KEYWORDS == tuple(dataclasses.asdict(policy))
    assert "verify" not in EAGER_KEYWORDS and set(EAGER_KEYWORDS) | {"verify"} == set(
        POLICY_KEYWORDS
    )


@pytest.mark.pure
@pytest.mark.parametrize(("name", "value"), BAD)
def test_restore_policy_rejects_bad_values_in_the_same_words(name, value):
    with pytest.raises(ValueError, match=exact(name, value)):
        RestorePolicy(**{name: value})


@pytest.mark.pure
@pytest.mark.parametrize("value", ["lazy", None, ["all"]])
def test_restore_policy_rejects_bad_staging(value):
    with pytest.raises(ValueError, match=exact("staging", value)):
        RestorePolicy(staging=value)


@pytest.mark.pure
def test_restore_policy_rejects_a_verify_that_is_not_a_bool():
    with pytest.raises(
        TypeError, match=r"^Invalid value for argument verify\. Received: verify=1\."
    ):
        RestorePolicy(verify=1)


@pytest.mark.pure
def test_restore_policy_is_frozen_hashable_and_normalized():
    policy = RestorePolicy(optional=None, exclude=["bias$"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.on_missing = "warn"
    assert policy.optional == () and policy.exclude == ("bias$",)
    assert RestorePolicy(optional="step$").optional == ("step$",)  # one pattern, not letters
    assert hash(policy) == hash(RestorePolicy(optional=(), exclude=("bias$",)))
    assert policy.replace(on_missing=UNSET) is policy
    assert policy.replace(on_missing="warn").on_missing == "warn"
    with pytest.raises(ValueError, match=exact("on_missing", "skip")):
        policy.replace(on_missing="skip")


@pytest.mark.pure
def test_resolve_policy_keywords_over_policy():
    base = RestorePolicy(on_missing="warn", staging="all")
    assert resolve_policy("f", None, {}) == RestorePolicy()
    assert resolve_policy("f", base, {}) is base
    got = resolve_policy("f", base, {"on_mismatch": "ignore", "on_conflict": UNSET})
    assert got == RestorePolicy(on_missing="warn", on_mismatch="ignore", staging="all")


@pytest.mark.pure
def test_resolve_policy_names_the_front_end_and_the_keywords():
    with pytest.raises(
        TypeError, match=r"^load\(\) got an unexpected keyword argument 'on_mising'"
    ):
        resolve_policy("load", None, {"on_mising": "warn"})
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'verify'"):
        resolve_policy("load", None, {"verify": True}, allowed=EAGER_KEYWORDS)
    with pytest.raises(
        TypeError, match=r"^load\(\): policy must be a tf1compat_init.RestorePolicy"
    ):
        resolve_policy("load", {"on_missing": "warn"}, {})


# -- the pure front doors: the engine and AssignmentMap ---------------------------------------


@pytest.mark.pure
@pytest.mark.parametrize(("name", "value"), BAD)
def test_plan_restore_rejects_before_opening_the_checkpoint(tmp_path, name, value):
    # The path does not exist: a ValueError (not CheckpointNotFoundError) shows the check
    # comes first.
    with pytest.raises(ValueError, match=exact(name, value)):
        plan_restore(str(tmp_path / "nope"), SPECS, **{name: value})


@pytest.mark.pure
def test_plan_restore_with_valid_policies_loads(ckpt):
    plan = plan_restore(ckpt, SPECS, on_missing="warn", on_mismatch="ignore", on_conflict="last")
    assert plan.report.loaded == {k: k for k in VALUES}


@pytest.mark.pure
def test_plan_restore_takes_a_policy_and_keeps_it(ckpt):
    specs = dict(SPECS, extra=((1,), "float32"))
    policy = RestorePolicy(on_missing="warn", exclude=["^fc2/bias$"], staging="all")
    plan = plan_restore(ckpt, specs, policy=policy)
    assert plan.policy is policy
    assert set(plan.report.loaded) == set(VALUES) - {"fc2/bias"}
    assert plan.report.excluded == {"fc2/bias": "fc2/bias"}
    assert plan.report.missing == {"extra": "extra"}
    # A keyword given as well replaces that field; the rest of the policy stays.
    with pytest.raises(Exception, match="extra"):
        plan_restore(ckpt, specs, policy=policy, on_missing="error")
    assert plan_restore(ckpt, SPECS).policy == RestorePolicy()
    with pytest.raises(TypeError, match="policy must be a tf1compat_init.RestorePolicy"):
        plan_restore(ckpt, SPECS, policy="warn")


@pytest.mark.pure
@pytest.mark.parametrize("value", ["first", "warn", None])
def test_assignment_map_resolve_rejects_on_conflict(value):
    amap = AssignmentMap({"fc1/": "fc1/"})
    with pytest.raises(ValueError, match=exact("on_conflict", value)):
        amap.resolve(list(VALUES), list(VALUES), on_conflict=value)
    assert [p.target for p in amap.resolve(list(VALUES), list(VALUES), on_conflict="last")] == [
        "fc1/bias",
        "fc1/kernel",
    ]


# -- the TensorFlow front ends ----------------------------------------------------------------
#
# Each runner builds fresh targets filled with -1 and returns ``(load, state)``: ``load(**policy)``
# calls the front end on ``ckpt`` (``run_dir`` is an empty directory it may use), ``state()`` is
# what a load would change. A valid call changes
# it (the control test), so an unchanged state after a rejected call means nothing was touched.


def _keras(tf, ckpt, run_dir):
    from tf1compat_init.keras import load_checkpoint

    model = _filled_mlp(tf)
    return (lambda **p: load_checkpoint(model, ckpt, **p)), lambda: _numpy(model.weights)


def _restore_keras(tf, ckpt, run_dir):
    from tf1compat_init.checkpoint import restore

    model = _filled_mlp(tf)
    return (lambda **p: restore(model, ckpt, **p)), lambda: _numpy(model.weights)


def _restore_module(tf, ckpt, run_dir):
    from tf1compat_init.checkpoint import restore

    module = _module(tf)
    return (lambda **p: restore(module, ckpt, **p)), lambda: _numpy(module.variables)


def _restore_or_initialize(tf, ckpt, run_dir):
    from tf1compat_init.checkpoint import restore_or_initialize

    module = _module(tf)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=module), str(run_dir), 1)
    amap = {"/": "model/"}
    return (
        lambda **p: restore_or_initialize(manager, ckpt, amap, **p),
        lambda: _numpy(module.variables),
    )


def _v1_eager(tf, ckpt, run_dir):
    from tf1compat_init import v1

    variables = [tf.Variable(np.full(v.shape, -1.0, np.float32), name=k) for k, v in VALUES.items()]
    return (
        lambda **p: v1.init_from_checkpoint(ckpt, {"/": "/"}, var_list=variables, **p),
        lambda: _numpy(variables),
    )


def _v1_graph(tf, ckpt, run_dir):
    from tf1compat_init import v1

    graph = tf.Graph()
    with graph.as_default():
        variables = [
            tf.compat.v1.get_variable(
                k, v.shape, initializer=tf.compat.v1.constant_initializer(-1.0)
            )
            for k, v in VALUES.items()
        ]

    def load(**p):
        with graph.as_default():
            return v1.init_from_checkpoint(ckpt, {"/": "/"}, **p)

    def state():
        # Graph mode changes the graph: new ops, and the variables' initializers.
        return [len(graph.get_operations())] + [v.initializer.name for v in variables]

    return load, state


TF_FRONT_ENDS = {
    "keras.load_checkpoint": _keras,
    "checkpoint.restore(keras model)": _restore_keras,
    "checkpoint.restore(tf.Module)": _restore_module,
    "checkpoint.restore_or_initialize": _restore_or_initialize,
    "v1.init_from_checkpoint(eager)": _v1_eager,
    "v1.init_from_checkpoint(graph)": _v1_graph,
}


@pytest.fixture(scope="module")
def tf():
    return pytest.importorskip("tensorflow")


def _filled_mlp(tf):
    keras = tf.keras
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, name="fc1"), keras.layers.Dense(2, name="fc2")]
    )
    for w in model.weights:
        w.assign(np.full(w.shape, -1.0, np.float32))
    return model


def _module(tf):
    class Dense(tf.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.kernel = tf.Variable(np.full((n_in, n_out), -1.0, np.float32))
            self.bias = tf.Variable(np.full((n_out,), -1.0, np.float32))

    module = tf.Module()
    module.fc1, module.fc2 = Dense(4, 3), Dense(3, 2)
    return module


def _numpy(variables):
    return sorted((np.asarray(v.numpy()).tolist() for v in variables), key=repr)


def _same(a, b):
    return repr(a) == repr(b)


@pytest.mark.parametrize("front_end", list(TF_FRONT_ENDS))
def test_front_end_with_valid_policies_loads(tf, ckpt, tmp_path, front_end):
    load, state = TF_FRONT_ENDS[front_end](tf, ckpt, tmp_path)
    before = state()
    load(on_missing="warn", on_mismatch="error", on_conflict="last")
    assert not _same(state(), before)


@pytest.mark.parametrize(("name", "value"), BAD)
@pytest.mark.parametrize("front_end", list(TF_FRONT_ENDS))
def test_front_end_rejects_bad_value_before_touching_anything(
    tf, ckpt, tmp_path, front_end, name, value
):
    load, state = TF_FRONT_ENDS[front_end](tf, ckpt, tmp_path)
    before = state()
    with pytest.raises(ValueError, match=exact(name, value)):
        load(**{name: value})
    assert _same(state(), before)


@pytest.mark.parametrize(("name", "value"), BAD[:3])
def test_restore_or_initialize_rejects_even_when_the_run_resumes(tf, ckpt, tmp_path, name, value):
    from tf1compat_init.checkpoint import restore_or_initialize

    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=_module(tf)), str(tmp_path), 1)
    manager.save()
    with pytest.raises(ValueError, match=exact(name, value)):
        restore_or_initialize(manager, ckpt, {"/": "model/"}, **{name: value})
    assert restore_or_initialize(manager, ckpt, {"/": "model/"}).outcome == "resumed"


@pytest.mark.parametrize(("name", "value"), BAD[:3])
def test_callbacks_and_hooks_reject_at_construction(tf, name, value):
    from tf1compat_init import v1
    from tf1compat_init.keras import CheckpointInit

    with pytest.raises(ValueError, match=exact(name, value)):
        CheckpointInit("pretrained/", **{name: value})
    with pytest.raises(ValueError, match=exact(name, value)):
        v1.CheckpointInitHook("pretrained/", **{name: value})


# -- policy= and staging= on every front end ----------------------------------------------------

#: The front ends that assign eagerly, through apply_plan (v1 graph mode builds a RestoreV2 op).
EAGER_FRONT_ENDS = [name for name in TF_FRONT_ENDS if name != "v1.init_from_checkpoint(graph)"]


@pytest.fixture
def stagings(monkeypatch):
    """The ``staging`` each apply_plan call ran with (recorded where it is used)."""
    from tf1compat_init.apply import _apply_plan as apply_module

    seen = []
    real = apply_module.apply_fast

    def spy(checkpoint, bundle, jobs, assigner, staging, *rest):
        seen.append(staging)
        return real(checkpoint, bundle, jobs, assigner, staging, *rest)

    monkeypatch.setattr(apply_module, "apply_fast", spy)
    return seen


@pytest.mark.parametrize("front_end", list(TF_FRONT_ENDS))
def test_front_end_takes_a_policy_object(tf, ckpt, tmp_path, front_end):
    load, state = TF_FRONT_ENDS[front_end](tf, ckpt, tmp_path)
    before = state()
    load(policy=RestorePolicy(on_missing="warn", on_conflict="last", exclude=["^nothing$"]))
    assert not _same(state(), before)


@pytest.mark.parametrize("front_end", list(TF_FRONT_ENDS))
def test_front_end_rejects_what_is_not_a_policy(tf, ckpt, tmp_path, front_end):
    load, state = TF_FRONT_ENDS[front_end](tf, ckpt, tmp_path)
    before = state()
    with pytest.raises(TypeError, match="policy must be a tf1compat_init.RestorePolicy"):
        load(policy={"on_missing": "warn"})
    assert _same(state(), before)


@pytest.mark.parametrize("front_end", list(TF_FRONT_ENDS))
def test_front_end_rejects_bad_staging_before_touching_anything(tf, ckpt, tmp_path, front_end):
    load, state = TF_FRONT_ENDS[front_end](tf, ckpt, tmp_path)
    before = state()
    with pytest.raises(ValueError, match=exact("staging", "x")):
        load(staging="x")
    assert _same(state(), before)


@pytest.mark.parametrize("front_end", EAGER_FRONT_ENDS)
def test_front_end_passes_staging_to_apply(tf, ckpt, tmp_path, front_end, stagings):
    for how in ({}, {"staging": "all"}, {"policy": RestorePolicy(staging="all")}):
        load, state = TF_FRONT_ENDS[front_end](tf, ckpt, tmp_path / str(len(stagings)))
        before = state()
        load(**how)
        assert not _same(state(), before)
    assert stagings == ["stream", "all", "all"]


def test_callback_and_hook_keep_the_policy(tf, ckpt, stagings):
    from tf1compat_init import v1
    from tf1compat_init.keras import CheckpointInit

    strict = RestorePolicy(optional=(), staging="all")
    callback = CheckpointInit(ckpt, policy=strict, on_missing="warn")
    assert callback.policy == strict.replace(on_missing="warn")
    model = _filled_mlp(tf)
    callback.set_model(model)
    callback.on_train_begin()
    assert callback.report.applied and stagings == ["all"]
    assert _numpy(model.weights) == _numpy([tf.constant(v) for v in VALUES.values()])

    graph = tf.Graph()
    with graph.as_default():
        for k, v in VALUES.items():
            tf.compat.v1.get_variable(k, v.shape)
        hook = v1.CheckpointInitHook(ckpt, {"/": "/"}, policy=strict, verify=True)
        hook.begin()
        saver = v1.restore_saver(ckpt, {"/": "/"}, policy=strict)
    assert hook.report.loaded == {k: k for k in VALUES}
    assert saver.report.loaded == {k: k for k in VALUES}
    with pytest.raises(TypeError, match="CheckpointInitHook"):
        v1.CheckpointInitHook(ckpt, policy=strict, on_mising="warn")


def test_migrate_takes_a_policy(tf, ckpt, tmp_path, stagings):
    from tf1compat_init.migrate import migrate

    with pytest.raises(ValueError, match=exact("on_missing", "skip")):
        migrate(ckpt, tmp_path / "bad" / "ckpt", on_missing="skip")
    assert not (tmp_path / "bad").exists()
    result = migrate(
        ckpt,
        tmp_path / "out" / "ckpt",
        format="tf2",
        model=lambda: _module(tf),
        policy=RestorePolicy(staging="all", optional=()),
    )
    assert set(result.tensors) == set(VALUES)
    # tf2 streams the values into the output, never into the model: nothing to stage (the
    # output is verified before it is installed, all or nothing)
    assert stagings == []


# -- the one preamble ---------------------------------------------------------------------------


def test_prepare_checks_the_policy_then_the_recipe():
    from tf1compat_init.errors import AssignmentMapError
    from tf1compat_init.preamble import prepare
    from tf1compat_init.transforms import get_recipe, list_recipes

    amap, policy = prepare("load", {"a/": "b/"}, None, None, {"on_missing": "warn"})
    assert amap == {"a/": "b/"} and policy == RestorePolicy(on_missing="warn")
    name = next(iter(list_recipes()))
    base = RestorePolicy(staging="all")
    amap, policy = prepare("load", None, name, base, {"on_conflict": UNSET})
    assert amap is get_recipe(name) and policy is base
    with pytest.raises(ValueError, match=exact("on_missing", "skip")):
        prepare("load", {"a": "b"}, "no-such", None, {"on_missing": "skip"})  # policy first
    with pytest.raises(AssignmentMapError, match="no recipe named 'no-such'"):
        prepare("load", None, "no-such", None, {})
    with pytest.raises(AssignmentMapError, match="either assignment_map or recipe="):
        prepare("load", {"a": "b"}, name, None, {})
    with pytest.raises(TypeError, match=r"^load\(\) got an unexpected keyword argument 'verify'"):
        prepare("load", None, None, None, {"verify": True}, allowed=EAGER_KEYWORDS)
