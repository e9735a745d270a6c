"""The assignment-map grammar, pure Python (no TensorFlow)."""

import re

import pytest

from tf1compat_init import AssignmentMap, AssignmentMapError

pytestmark = pytest.mark.pure


def resolve(amap, keys, targets, **kw):
    return {p.target: p.checkpoint_key for p in AssignmentMap(amap).resolve(keys, targets, **kw)}


KEYS = ["dense/kernel", "dense/bias", "model/fc1/bias", "model/fc1/kernel", "global_step"]


@pytest.mark.parametrize(
    ("amap", "targets", "expected"),
    [
        (None, ["dense/bias"], {"dense/bias": "dense/bias"}),
        ({"/": "/"}, ["dense/bias", "x"], {"dense/bias": "dense/bias", "x": "x"}),
        ({"old/": "/"}, ["x"], {"x": "old/x"}),
        ({"/": "new/"}, ["new/x", "other/y"], {"new/x": "x"}),
        (
            {"model/": "sub_model_2/"},
            ["sub_model_2/fc1/bias"],
            {"sub_model_2/fc1/bias": "model/fc1/bias"},
        ),
        ({"dense/bias": "a/b"}, ["a/b"], {"a/b": "dense/bias"}),
        ({"model/": "a/b/"}, ["a/b/fc1/bias", "a/c"], {"a/b/fc1/bias": "model/fc1/bias"}),
    ],
)
def test_documented_forms(amap, targets, expected):
    keys = KEYS + ["old/x", "x"]
    assert resolve(amap, keys, targets) == expected


def test_pairs_sorted_and_last_wins_only_when_asked():
    amap = [("dense/bias", "t"), ("dense/kernel", "t")]
    with pytest.raises(AssignmentMapError, match="written by two rules"):
        resolve(amap, KEYS, ["t"])
    assert resolve(amap, KEYS, ["t"], on_conflict="last") == {"t": "dense/kernel"}


def test_same_key_twice_is_not_a_conflict():
    assert resolve({"/": "/", "dense/bias": "dense/bias"}, KEYS, ["dense/bias"]) == {
        "dense/bias": "dense/bias"
    }


def test_tutorial_reversed_scope_map_suggests_the_correct_map():
    with pytest.raises(AssignmentMapError) as e:
        resolve({"sub_model_2/": "model/"}, KEYS, ["sub_model_2/fc1/bias"])
    msg = str(e.value)
    assert "silently load nothing" in msg
    assert "{'model/': 'sub_model_2/'}" in msg


def test_tutorial_empty_target_suggests_root_map():
    with pytest.raises(AssignmentMapError) as e:
        resolve({"sub_model_1/": ""}, KEYS, ["sub_model_1/dense/bias"])
    msg = str(e.value)
    assert "empty string" in msg and "'ense/bias'" in msg
    assert "{'/': 'sub_model_1/'}" in msg


def test_target_without_slash_is_not_a_scope():
    with pytest.raises(AssignmentMapError, match=r"Did you mean \{'old/': 'new/'\}"):
        resolve({"old/": "new"}, ["old/x"], ["new/x"])


def test_scope_key_needs_trailing_slash():
    with pytest.raises(AssignmentMapError, match=r"must be a scope"):
        resolve({"model": "sub/"}, KEYS, ["sub/fc1/bias"])


def test_missing_one_to_one_key_names_nearest():
    with pytest.raises(
        AssignmentMapError,
        match=r"'dense/kernal' is not in the checkpoint; did you mean 'dense/kernel'",
    ):
        resolve({"dense/kernal": "w"}, KEYS, ["w"])


def test_missing_checkpoint_scope():
    with pytest.raises(AssignmentMapError, match=r"no key under 'modelx/'"):
        resolve({"modelx/": "sub/"}, KEYS, ["sub/fc1/bias"])


def test_unknown_one_to_one_target_is_scope_error():
    with pytest.raises(AssignmentMapError, match="did you mean 'sub/fc1/bias'"):
        resolve({"model/fc1/bias": "sub/fc1/bais"}, KEYS, ["sub/fc1/bias"])


def test_regex_rule_with_backrefs():
    amap = {re.compile(r"model/fc(\d)/(.*)"): r"enc/layer_\1/\2"}
    assert resolve(amap, KEYS, ["enc/layer_1/bias", "enc/layer_1/kernel"]) == {
        "enc/layer_1/bias": "model/fc1/bias",
        "enc/layer_1/kernel": "model/fc1/kernel",
    }


def test_regex_rule_matching_nothing():
    with pytest.raises(AssignmentMapError, match="resolves to nothing"):
        resolve({re.compile(r"nope/(.*)"): r"\1"}, KEYS, ["x"])


def test_callable_map():
    def fn(key):
        return key.replace("model/", "m/") if key.startswith("model/") else None

    assert resolve(fn, KEYS, ["m/fc1/bias", "m/fc1/kernel"]) == {
        "m/fc1/bias": "model/fc1/bias",
        "m/fc1/kernel": "model/fc1/kernel",
    }


def test_callable_returning_unknown_target():
    with pytest.raises(AssignmentMapError, match="not a variable to restore"):
        resolve(lambda k: "zzz", KEYS, ["x"])


def test_exclude_drops_pairs_by_key_or_target():
    excluded = {}
    pairs = AssignmentMap({"/": "/"}, exclude=["^dense/"]).resolve(
        KEYS, ["dense/bias", "global_step"], excluded=excluded
    )
    assert [p.target for p in pairs] == ["global_step"]
    assert excluded == {"dense/bias": "dense/bias"}


@pytest.mark.parametrize("bad", ["abc", 3, [("a",)], {1: "x"}])
def test_malformed_maps(bad):
    with pytest.raises(AssignmentMapError):
        resolve(bad, KEYS, ["x"])


def test_object_target_needs_name_of():
    with pytest.raises(AssignmentMapError, match="variable objects"):
        AssignmentMap({"dense/bias": object()})
    amap = AssignmentMap({"dense/bias": object()}, name_of=lambda v: "t")
    assert [tuple(p[:2]) for p in amap.resolve(KEYS, ["t"])] == [("dense/bias", "t")]


def test_resolution_scales(benchmark=None):
    n = 20000
    keys = [f"old/layer_{i}/kernel" for i in range(n)]
    targets = [f"new/layer_{i}/kernel" for i in range(n)]
    got = resolve({"old/": "new/"}, keys, targets)
    assert len(got) == n and got["new/layer_7/kernel"] == "old/layer_7/kernel"


def test_a_variable_as_target_is_shown_without_reading_its_value():
    # an eager variable's repr reads and formats its whole value: a map of a model's
    # variables spent seconds in its rule texts (issue 28's layouts: 6 s for ResNet-50)
    class Variable:
        name, shape, dtype = "dense/kernel:0", (2, 3), "float32"

        def __repr__(self):
            raise AssertionError("the value was read")

    # the engine's map takes names only; its error shows the rule as the front ends do
    shown = "{'net/w': <Variable 'dense/kernel:0' shape=(2, 3) dtype=float32>}"
    with pytest.raises(AssignmentMapError, match=re.escape(f"rule {shown}: the target must")):
        AssignmentMap({"net/w": Variable()})
