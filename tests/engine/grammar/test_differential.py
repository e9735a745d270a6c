"""Differential tests: our plans against the real ``tf.compat.v1.train.init_from_checkpoint``.

Each case builds a TF1 graph with ``get_variable`` under variable scopes, runs TF's
``init_from_checkpoint`` and reads back which checkpoint tensor each variable got
(every checkpoint tensor holds a distinct value; every target starts from a distinct
sentinel), then plans the same map with ``plan_restore(..., optional=())`` on the same
variables and compares ``{target: checkpoint_key}`` exactly. Both legs (TF 2.15, TF 2.21).

Where TF raises, ours raises too. Where TF silently misbehaves or crashes confusingly,
the test pins TF's actual behaviour and asserts that ours raises a clear error at plan
time instead.
"""

from __future__ import annotations

import re

import pytest

tf = pytest.importorskip("tensorflow")

from support.tfgraph import Var, compare, write_checkpoint  # noqa: E402

from tf1compat_init import (  # noqa: E402
    DEFAULT_OPTIONAL,
    AssignmentMapError,
    CheckpointMismatchError,
    Tf1CompatError,
)

# One name-based checkpoint for most cases: nested scopes, partitioned variables
# (saved with 2 partitions), and scopes to rename from.
CKPT_SPECS = [
    Var("model/fc1/kernel", (3, 2)),
    Var("model/fc1/bias", (2,)),
    Var("model/fc2/kernel", (2, 2)),
    Var("model/fc2/bias", (2,)),
    Var("model/emb/table", (6, 2), partitions=2),
    Var("dense/kernel", (3, 4)),
    Var("dense/bias", (4,)),
    Var("conv1/bias", (4,)),
    Var("a/b/c/w", (2, 3)),
    Var("a/b/d", (4,)),
    Var("a/e", (2,)),
    Var("old/part_var", (7, 2), partitions=2),  # the name TF's docs use
    Var("old/table", (5, 3), partitions=2),
    Var("old/x", (3,)),
]


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp("diff") / "model.ckpt")
    return prefix, write_checkpoint(prefix, CKPT_SPECS)


def run(ckpt, targets, amap, **kw):
    prefix, values = ckpt
    out = compare(prefix, values, targets, amap, **kw)
    assert not out.unrecognised, f"values from nowhere in {out.unrecognised}"
    return out


def assert_same(out, expected):
    assert out.tf_error is None, f"TF raised: {out.tf_error!r}"
    assert out.tf_loaded == expected, out.explain()
    assert out.ours_error is None, f"ours raised: {out.ours_error}"
    assert out.ours_loaded == expected, out.explain()


# --- every documented form: both sides load exactly the expected pairs ------------------

P3 = {"partitions": 3}  # targets re-partitioned: saved with 2, loaded into 3

DOCUMENTED = {
    "root_to_root": (
        [
            Var("model/fc1/kernel", (3, 2)),
            Var("model/fc1/bias", (2,)),
            Var("model/emb/table", (6, 2), **P3),
            Var("a/b/c/w", (2, 3)),
        ],
        {"/": "/"},
        {
            "model/fc1/kernel": "model/fc1/kernel",
            "model/fc1/bias": "model/fc1/bias",
            "model/emb/table": "model/emb/table",
            "a/b/c/w": "a/b/c/w",
        },
    ),
    "ckpt_scope_to_root": (
        [Var("fc1/kernel", (3, 2)), Var("fc2/bias", (2,)), Var("emb/table", (6, 2), **P3)],
        {"model/": "/"},
        {
            "fc1/kernel": "model/fc1/kernel",
            "fc2/bias": "model/fc2/bias",
            "emb/table": "model/emb/table",
        },
    ),
    "root_to_scope": (
        [
            Var("new/dense/kernel", (3, 4)),
            Var("new/dense/bias", (4,)),
            Var("new/conv1/bias", (4,)),
            Var("other/w", (5,)),  # outside the scope: untouched
        ],
        {"/": "new/"},
        {
            "new/dense/kernel": "dense/kernel",
            "new/dense/bias": "dense/bias",
            "new/conv1/bias": "conv1/bias",
        },
    ),
    "root_to_nested_scope": (
        [Var("s/t/a/e", (2,)), Var("s/t/dense/bias", (4,))],
        {"/": "s/t/"},
        {"s/t/a/e": "a/e", "s/t/dense/bias": "dense/bias"},
    ),
    "scope_to_scope": (
        [
            Var("sub_model_2/fc1/kernel", (3, 2)),
            Var("sub_model_2/fc1/bias", (2,)),
            Var("sub_model_2/emb/table", (6, 2), **P3),
            Var("model/fc2/bias", (2,)),  # in the checkpoint, but no rule covers it
        ],
        {"model/": "sub_model_2/"},
        {
            "sub_model_2/fc1/kernel": "model/fc1/kernel",
            "sub_model_2/fc1/bias": "model/fc1/bias",
            "sub_model_2/emb/table": "model/emb/table",
        },
    ),
    "nested_scope_to_deeper_scope": (
        [Var("x/y/z/c/w", (2, 3)), Var("x/y/z/d", (4,)), Var("x/y/e", (2,))],
        {"a/b/": "x/y/z/"},
        {"x/y/z/c/w": "a/b/c/w", "x/y/z/d": "a/b/d"},
    ),
    "nested_scope_to_shallow_scope": (
        [Var("q/w", (2, 3))],
        {"a/b/c/": "q/"},
        {"q/w": "a/b/c/w"},
    ),
    "nested_scope_to_root": (
        [Var("c/w", (2, 3)), Var("d", (4,))],
        {"a/b/": "/"},
        {"c/w": "a/b/c/w", "d": "a/b/d"},
    ),
    "scope_to_same_scope": (
        [Var("old/table", (5, 3), **P3), Var("old/x", (3,)), Var("new/x", (3,))],
        {"old/": "old/"},
        {"old/table": "old/table", "old/x": "old/x"},
    ),
    "one_to_one_name": (
        [Var("head/bias", (2,)), Var("head/kernel", (3, 2))],
        {"model/fc1/bias": "head/bias"},
        {"head/bias": "model/fc1/bias"},
    ),
    "one_to_one_nested_name": (
        [Var("x/y/w", (2, 3))],
        {"a/b/c/w": "x/y/w"},
        {"x/y/w": "a/b/c/w"},
    ),
    "one_to_one_resource_variable": (
        [Var("head/kernel", (3, 4)), Var("head/bias", (4,))],
        lambda vs: {"dense/kernel": vs["head/kernel"]},
        {"head/kernel": "dense/kernel"},
    ),
    "one_to_one_ref_variable": (
        [Var("head/kernel", (3, 4), use_resource=False), Var("head/bias", (4,))],
        lambda vs: {"dense/kernel": vs["head/kernel"]},
        {"head/kernel": "dense/kernel"},
    ),
    "one_to_one_variable_outside_the_store": (
        [Var("w", (4,), in_store=False)],
        lambda vs: {"dense/bias": vs["w"]},
        {"w": "dense/bias"},
    ),
    "one_to_one_partition_list": (
        [Var("new/pv", (7, 2), **P3)],
        lambda vs: {"old/part_var": list(vs["new/pv"])},
        {"new/pv": "old/part_var"},
    ),
    "one_to_one_partition_list_from_plain_key": (
        [Var("pk", (3, 4), **P3)],
        lambda vs: {"dense/kernel": list(vs["pk"])},
        {"pk": "dense/kernel"},
    ),
    "partitioned_by_name_repartitioned": (
        [Var("new/part_var", (7, 2), **P3)],
        {"old/part_var": "new/part_var"},
        {"new/part_var": "old/part_var"},
    ),
    "partitioned_by_name_same_partitions": (
        [Var("new/part_var", (7, 2), partitions=2)],
        {"old/part_var": "new/part_var"},
        {"new/part_var": "old/part_var"},
    ),
    "partitioned_by_scope_repartitioned": (
        [Var("new/table", (5, 3), **P3), Var("new/x", (3,))],
        {"old/": "new/"},
        {"new/table": "old/table", "new/x": "old/x"},
    ),
    "partitioned_into_plain": (
        [Var("flat", (7, 2))],
        {"old/part_var": "flat"},
        {"flat": "old/part_var"},
    ),
    "plain_into_partitioned": (
        [Var("pk", (3, 4), **P3)],
        {"dense/kernel": "pk"},
        {"pk": "dense/kernel"},
    ),
    "mixed_names_and_scopes": (
        [
            Var("enc/l1/kernel", (3, 2)),
            Var("enc/l1/bias", (2,)),
            Var("enc/l2/kernel", (2, 2)),
            Var("enc/l2/bias", (2,)),
            Var("head/w", (3, 4)),
            Var("head/b", (4,)),
            Var("deep/c/w", (2, 3)),
            Var("deep/d", (4,)),
            Var("free/v", (3,)),
        ],
        {
            "model/fc1/": "enc/l1/",
            "model/fc2/": "enc/l2/",
            "dense/kernel": "head/w",
            "dense/bias": "head/b",
            "a/b/": "deep/",
        },
        {
            "enc/l1/kernel": "model/fc1/kernel",
            "enc/l1/bias": "model/fc1/bias",
            "enc/l2/kernel": "model/fc2/kernel",
            "enc/l2/bias": "model/fc2/bias",
            "head/w": "dense/kernel",
            "head/b": "dense/bias",
            "deep/c/w": "a/b/c/w",
            "deep/d": "a/b/d",
        },
    ),
    "mixed_list_of_pairs_with_objects": (
        [Var("new/table", (5, 3), **P3), Var("new/x", (3,)), Var("head/b", (4,))],
        lambda vs: [("old/", "new/"), ("dense/bias", vs["head/b"])],
        {"new/table": "old/table", "new/x": "old/x", "head/b": "dense/bias"},
    ),
    "mixed_scope_partitions_and_variable": (
        [
            Var("enc/dense/bias", (4,)),
            Var("enc/a/e", (2,)),
            Var("pv", (7, 2), **P3),
            Var("k", (3, 2), use_resource=False),
        ],
        lambda vs: {
            "/": "enc/",
            "old/part_var": list(vs["pv"]),
            "model/fc1/kernel": vs["k"],
        },
        {
            "enc/dense/bias": "dense/bias",
            "enc/a/e": "a/e",
            "pv": "old/part_var",
            "k": "model/fc1/kernel",
        },
    ),
}


@pytest.mark.parametrize("case", sorted(DOCUMENTED))
def test_documented_form_loads_what_tf_loads(ckpt, case):
    targets, amap, expected = DOCUMENTED[case]
    assert_same(run(ckpt, targets, amap), expected)


def test_partitioned_values_are_the_concatenated_parts(ckpt):
    # The comparison above identifies a partitioned target by its full value; check
    # here that TF really filled the 3 new parts from the 2 saved slices.
    out = run(ckpt, [Var("new/part_var", (7, 2), **P3)], {"old/part_var": "new/part_var"})
    assert out.values["new/part_var"].tolist() == ckpt[1]["old/part_var"].tolist()


# --- two rules writing one variable: TF keeps the last in sorted key order ---------------

CONFLICTS = {
    "scope_overrides_root": (
        [Var("model/fc1/bias", (2,))],
        {"/": "/", "model/fc2/": "model/fc1/"},
        {"model/fc1/bias": "model/fc2/bias"},
        "model/fc1/bias",
    ),
    "name_after_scope_wins": (
        [Var("m/fc1/bias", (2,)), Var("m/fc1/kernel", (3, 2))],
        {"model/fc2/bias": "m/fc1/bias", "model/": "m/"},
        {"m/fc1/bias": "model/fc2/bias", "m/fc1/kernel": "model/fc1/kernel"},
        "m/fc1/bias",
    ),
    "scope_after_name_wins": (
        [Var("m/fc1/bias", (2,)), Var("m/fc1/kernel", (3, 2))],
        {"model/": "m/", "a/e": "m/fc1/bias"},  # sorted: 'a/e' < 'model/'
        {"m/fc1/bias": "model/fc1/bias", "m/fc1/kernel": "model/fc1/kernel"},
        "m/fc1/bias",
    ),
    "pairs_with_one_target": (
        [Var("t", (2,))],
        [("model/fc2/bias", "t"), ("model/fc1/bias", "t")],
        {"t": "model/fc2/bias"},
        "t",
    ),
    "object_and_name_for_one_target": (
        [Var("t", (2,))],
        lambda vs: [("model/fc2/bias", "t"), ("a/e", vs["t"])],
        {"t": "model/fc2/bias"},
        "t",
    ),
}


@pytest.mark.parametrize("case", sorted(CONFLICTS))
def test_conflicts_error_by_default_and_match_tf_with_last(ckpt, case):
    targets, amap, expected, target = CONFLICTS[case]
    out = run(ckpt, targets, amap)
    assert out.tf_error is None and out.tf_loaded == expected, out.explain()
    assert isinstance(out.ours_error, AssignmentMapError), out.explain()
    msg = str(out.ours_error)
    assert "written by two rules" in msg and "on_conflict='last'" in msg
    assert f"target {target!r} is written by two rules" in msg
    assert_same(run(ckpt, targets, amap, on_conflict="last"), expected)


@pytest.mark.parametrize(
    ("targets", "amap"),
    [
        # '/' -> 'new/' wants key 'zz' for new/zz (missing); the later name rule overrides it.
        (
            [Var("new/dense/bias", (4,)), Var("new/zz", (2,))],
            {"/": "new/", "model/fc1/bias": "new/zz"},
        ),
        # The one-to-one rule has the wrong shape; the later scope rule overrides it.
        ([Var("m/fc1/bias", (2,))], {"conv1/bias": "m/fc1/bias", "model/": "m/"}),
    ],
    ids=["overridden_missing_key", "overridden_shape_mismatch"],
)
def test_overridden_rule_that_tf_rejects(ckpt, targets, amap):
    out = run(ckpt, targets, amap)
    assert isinstance(out.tf_error, ValueError) and out.tf_stage == "call"
    assert isinstance(out.ours_error, AssignmentMapError)  # by default: a conflict
    assert isinstance(out.ours_last_error, Tf1CompatError), out.explain()


# --- TF raises: ours raises too, at plan time, naming the key or shapes -----------------

RAISES = {
    "missing_key_one_to_one": (
        [Var("t/bias", (2,))],
        {"model/fc1/bais": "t/bias"},
        r"Tensor model/fc1/bais is not found in .* checkpoint",
        AssignmentMapError,
        r"'model/fc1/bais' is not in the checkpoint; did you mean 'model/fc1/bias'",
    ),
    "missing_key_object": (
        [Var("t", (4,))],
        lambda vs: {"conv1/bais": vs["t"]},
        r"Tensor conv1/bais is not found",
        AssignmentMapError,
        r"'conv1/bais' is not in the checkpoint; did you mean 'conv1/bias'",
    ),
    "missing_checkpoint_scope": (
        [Var("sub/fc1/bias", (2,))],
        {"modelx/": "sub/"},
        r"Tensor modelx/fc1/bias \(fc1/bias in modelx/\) is not found",
        AssignmentMapError,
        r"\{'modelx/': 'sub/'\}: the checkpoint has no key under 'modelx/'",
    ),
    "missing_key_under_existing_scope": (
        [Var("sub/fc1/bias", (2,)), Var("sub/fc3/bias", (2,))],
        {"model/": "sub/"},
        r"Tensor model/fc3/bias \(fc3/bias in model/\) is not found",
        CheckpointMismatchError,
        r"sub/fc3/bias <- model/fc3/bias: not in the checkpoint",
    ),
    "scope_key_for_one_variable": (
        [Var("head/bias", (2,))],
        {"model/": "head/bias"},
        r"Tensor model/ is not found",
        AssignmentMapError,
        r"'model/' is a scope but 'head/bias' is one variable",
    ),
    "name_key_for_unknown_target": (
        [Var("other/w", (2,))],
        {"model/fc1/bias": "nothere"},
        r"Assignment map with scope only name .* Should be 'scope/': 'other_scope/'",
        AssignmentMapError,
        r"'nothere' is not a variable to restore, so it must be a scope",
    ),
    "shape_mismatch_one_to_one_name": (
        [Var("conv1/bias", (5,))],
        {"conv1/bias": "conv1/bias"},
        r"Shape of variable conv1/bias:0 \(\(5,\)\) doesn't match with shape of tensor "
        r"conv1/bias \(\[4\]\)",
        CheckpointMismatchError,
        r"conv1/bias <- conv1/bias: shape \[5\] vs checkpoint \[4\]",
    ),
    "shape_mismatch_one_to_one_object": (
        [Var("t", (3, 3))],
        lambda vs: {"dense/kernel": vs["t"]},
        r"Shape of variable t:0 \(\(3, 3\)\) doesn't match with shape of tensor dense/kernel",
        CheckpointMismatchError,
        r"t <- dense/kernel: shape \[3, 3\] vs checkpoint \[3, 4\]",
    ),
}


@pytest.mark.parametrize("case", sorted(RAISES))
def test_where_tf_raises_ours_raises(ckpt, case):
    targets, amap, tf_message, our_error, our_message = RAISES[case]
    out = run(ckpt, targets, amap)
    assert isinstance(out.tf_error, ValueError) and out.tf_stage == "call", out.explain()
    assert re.search(tf_message, str(out.tf_error)), str(out.tf_error)
    assert type(out.ours_error) is our_error, out.explain()
    assert re.search(our_message, str(out.ours_error)), str(out.ours_error)


def test_missing_global_step_strict_and_optional(ckpt):
    targets = [Var("dense/bias", (4,)), Var("global_step", (), "int64")]
    out = run(ckpt, targets, {"/": "/"})
    # TF's scope rule cuts one character too many at the root (sic).
    assert isinstance(out.tf_error, ValueError)
    assert "Tensor global_step (lobal_step in /) is not found" in str(out.tf_error)
    assert isinstance(out.ours_error, CheckpointMismatchError)
    assert "global_step <- global_step: not in the checkpoint" in str(out.ours_error)
    assert out.ours_error.report.missing == {"global_step": "global_step"}
    # Our default policy lets training state be absent (reported, not raised).
    out = run(ckpt, targets, {"/": "/"}, policy={"optional": DEFAULT_OPTIONAL})
    assert out.ours_error is None and out.ours_loaded == {"dense/bias": "dense/bias"}


# --- TF misbehaves: pin what TF does, and that ours raises a clear error instead ----------

TUTORIAL_TARGETS = [
    Var("sub_model_1/dense/kernel", (3, 4)),
    Var("sub_model_1/dense/bias", (4,)),
    Var("sub_model_2/fc1/kernel", (3, 2)),
    Var("sub_model_2/fc1/bias", (2,)),
]


def test_tutorial_empty_target_drops_a_character_in_tf(ckpt):
    out = run(ckpt, TUTORIAL_TARGETS, {"sub_model_1/": ""})
    # TF treats '' as the root scope and then cuts the first character of every name.
    assert isinstance(out.tf_error, ValueError) and out.tf_stage == "call"
    assert re.search(
        r"Tensor sub_model_1/ub_model_1/dense/bias \(ub_model_1/dense/bias in sub_model_1/\) "
        r"is not found",
        str(out.tf_error),
    ), str(out.tf_error)
    assert isinstance(out.ours_error, AssignmentMapError)
    msg = str(out.ours_error)
    assert "the target is the empty string" in msg
    assert "did you mean {'/': 'sub_model_1/'}?" in msg


def test_tutorial_reversed_scope_map_is_silent_in_tf(ckpt):
    out = run(ckpt, TUTORIAL_TARGETS, {"sub_model_2/": "model/"})
    assert out.tf_error is None and out.tf_loaded == {}  # nothing loaded, nothing said
    assert isinstance(out.ours_error, AssignmentMapError)
    msg = str(out.ours_error)
    assert "no variable to restore is under 'model/'" in msg
    assert "The map looks reversed" in msg and "did you mean {'model/': 'sub_model_2/'}?" in msg


def test_tutorial_corrected_maps_agree(ckpt):
    out = run(ckpt, TUTORIAL_TARGETS, {"/": "sub_model_1/", "model/": "sub_model_2/"})
    assert_same(
        out,
        {
            "sub_model_1/dense/kernel": "dense/kernel",
            "sub_model_1/dense/bias": "dense/bias",
            "sub_model_2/fc1/kernel": "model/fc1/kernel",
            "sub_model_2/fc1/bias": "model/fc1/bias",
        },
    )


def test_scope_value_without_slash_drops_a_character_in_tf(ckpt):
    out = run(ckpt, [Var("new/x", (3,))], {"old/": "new"})
    assert isinstance(out.tf_error, ValueError)
    assert "Tensor old/ew/x (ew/x in old/) is not found" in str(out.tf_error)
    assert isinstance(out.ours_error, AssignmentMapError)
    assert "Did you mean {'old/': 'new/'}?" in str(out.ours_error)


def test_root_map_on_empty_graph_is_silent_in_tf(ckpt):
    out = run(ckpt, [], {"/": "/"})
    assert out.tf_error is None and out.tf_loaded == {}
    assert isinstance(out.ours_error, AssignmentMapError)
    assert "no variable to restore is under '/'" in str(out.ours_error)


def test_scope_form_shape_mismatch_loads_silently_into_resource_variable(ckpt):
    out = run(ckpt, [Var("conv1/bias", (5,))], {"conv1/": "conv1/"})
    assert out.tf_error is None
    assert out.tf_loaded == {"conv1/bias": "conv1/bias"}
    assert out.misshaped == ["conv1/bias"]  # a [4] value in a [5] variable
    assert out.values["conv1/bias"].shape == (4,)
    assert isinstance(out.ours_error, CheckpointMismatchError)
    assert "conv1/bias <- conv1/bias: shape [5] vs checkpoint [4]" in str(out.ours_error)
    assert [m.target for m in out.ours_error.report.mismatched] == ["conv1/bias"]


def test_scope_form_shape_mismatch_fails_at_init_for_ref_variable(ckpt):
    out = run(ckpt, [Var("conv1/bias", (5,), use_resource=False)], {"/": "/"})
    assert out.tf_stage == "init"
    assert "Assign requires shapes of both tensors to match" in str(out.tf_error)
    assert isinstance(out.ours_error, CheckpointMismatchError)
    assert "shape [5] vs checkpoint [4]" in str(out.ours_error)


@pytest.mark.parametrize("form", ["scope", "name"])
def test_dtype_mismatch_fails_only_at_init_in_tf(ckpt, form):
    amap = {"conv1/": "conv1/"} if form == "scope" else {"conv1/bias": "conv1/bias"}
    out = run(ckpt, [Var("conv1/bias", (4,), "float64")], amap)
    assert out.tf_stage == "init", out.explain()  # init_from_checkpoint itself accepted it
    assert isinstance(out.tf_error, tf.errors.InvalidArgumentError)
    assert "expected dtype double does not equal original dtype float" in str(out.tf_error)
    assert isinstance(out.ours_error, CheckpointMismatchError)
    assert "conv1/bias <- conv1/bias: dtype float64 vs checkpoint float32" in str(out.ours_error)


def test_scope_form_breaks_on_names_starting_with_part_in_tf(ckpt):
    # TF strips partition suffixes with name[:name.index("/part_")], which also cuts
    # 'new/part_var' (the name TF's own docs use) down to 'new'.
    targets = [Var("new/part_var", (7, 2), **P3), Var("new/x", (3,))]
    out = run(ckpt, targets, {"old/": "new/"})
    assert isinstance(out.tf_error, ValueError)
    assert "Tensor old ( in old/) is not found" in str(out.tf_error)
    assert out.ours_error is None
    assert out.ours_loaded == {"new/part_var": "old/part_var", "new/x": "old/x"}
    # By name both sides agree.
    expected = {"new/part_var": "old/part_var"}
    assert_same(run(ckpt, targets, {"old/part_var": "new/part_var"}), expected)


def test_partitioned_variable_object_crashes_tf_and_resolves_in_ours(ckpt):
    out = run(ckpt, [Var("new/pv", (7, 2), **P3)], lambda vs: {"old/part_var": vs["new/pv"]})
    assert isinstance(out.tf_error, TypeError)
    assert "unsupported operand type(s) for +: 'PartitionedVariable' and 'str'" in str(out.tf_error)
    # Ours takes the object as the whole variable, like its list of parts.
    assert out.ours_error is None and out.ours_loaded == {"new/pv": "old/part_var"}


# --- what TF's string maps cannot see -----------------------------------------------------
# TF resolves names in its variable store: only get_variable variables, and its scope
# rule cuts names at '/part_'. Ours resolves against the targets it is given; fed every
# global variable it also reaches those, and fed TF's reachable set it equals TF exactly.


def test_variable_outside_the_store_is_invisible_to_tf_string_maps(ckpt):
    targets = [Var("dense/bias", (4,), in_store=False), Var("a/e", (2,))]
    out = run(ckpt, targets, {"/": "/"})
    assert out.tf_loaded == {"a/e": "a/e"}  # dense/bias silently kept its initial value
    assert out.ours_loaded == {"a/e": "a/e", "dense/bias": "dense/bias"}
    assert_same(run(ckpt, targets, {"/": "/"}, store_only=True), {"a/e": "a/e"})
    # By name, TF cannot find it at all.
    out = run(ckpt, targets, {"dense/bias": "dense/bias"})
    assert "Assignment map with scope only name dense" in str(out.tf_error)
    assert isinstance(
        run(ckpt, targets, {"dense/bias": "dense/bias"}, store_only=True).ours_error,
        AssignmentMapError,
    )


OPT_SOURCE = [
    Var("model/fc1/kernel", (3, 2)),
    Var("model/fc1/bias", (2,)),
    Var("model/emb/table", (6, 2), partitions=2),
]
SLOTS = {"momentum": ("Momentum",), "adam": ("Adam", "Adam_1")}


@pytest.fixture(scope="module", params=sorted(SLOTS))
def opt_ckpt(request, tmp_path_factory):
    prefix = str(tmp_path_factory.mktemp(request.param) / "model.ckpt-100")
    return request.param, prefix, write_checkpoint(prefix, OPT_SOURCE, optimizer=request.param)


def _slot_pairs(optimizer, target_scope, ckpt_scope, names):
    return {
        f"{target_scope}{n}/{slot}": f"{ckpt_scope}{n}/{slot}"
        for n in names
        for slot in SLOTS[optimizer]
    }


@pytest.mark.parametrize(("amap", "scope"), [({"/": "/"}, "model/"), ({"model/": "new/"}, "new/")])
def test_optimizer_slots_and_global_step(opt_ckpt, amap, scope):
    optimizer, prefix, values = opt_ckpt
    targets = [
        Var(f"{scope}fc1/kernel", (3, 2)),
        Var(f"{scope}fc1/bias", (2,)),
        Var(f"{scope}emb/table", (6, 2), **P3),
    ]
    plain = ["fc1/kernel", "fc1/bias"]
    expected = {f"{scope}{n}": f"model/{n}" for n in plain + ["emb/table"]}
    expected |= _slot_pairs(optimizer, scope, "model/", plain)
    if amap == {"/": "/"}:
        expected["global_step"] = "global_step"
    out = compare(prefix, values, targets, amap, optimizer=optimizer, store_only=True)
    assert not out.unrecognised
    assert_same(out, expected)

    # Given every global variable, ours also restores what TF's store cannot reach: the
    # slots of the partitioned variable and Adam's beta powers (TF keeps their initial
    # values, which leaves Adam's state inconsistent).
    out = compare(prefix, values, targets, amap, optimizer=optimizer)
    assert out.tf_loaded == expected, out.explain()
    extras = _slot_pairs(optimizer, scope, "model/", ["emb/table"])
    if optimizer == "adam" and amap == {"/": "/"}:
        extras |= {"beta1_power": "beta1_power", "beta2_power": "beta2_power"}
    assert out.ours_error is None and out.ours_loaded == expected | extras, out.explain()


def test_slot_by_name_is_invisible_to_tf(opt_ckpt):
    optimizer, prefix, values = opt_ckpt
    slot = f"model/fc1/bias/{SLOTS[optimizer][0]}"
    targets = [Var("model/fc1/bias", (2,))]
    out = compare(prefix, values, targets, {slot: slot}, optimizer=optimizer)
    # The store keys slots as 'model/fc1/bias/Momentum/' (trailing slash): not found by name.
    assert "Assignment map with scope only name model/fc1/bias" in str(out.tf_error)
    assert out.ours_loaded == {slot: slot}
    # ...but the scope form reaches it, on both sides.
    out = compare(
        prefix, values, targets, {"model/fc1/bias/": "model/fc1/bias/"}, optimizer=optimizer
    )
    assert_same(out, _slot_pairs(optimizer, "model/", "model/", ["fc1/bias"]))
