"""The grammar's own shape: rule kinds, one dispatch for both readings, a result object,
and a recipe's drops and requirements checked beside the plan. Pure: no TensorFlow."""

from __future__ import annotations

import re

import pytest

from tf1compat_init import recipe_plan
from tf1compat_init import transforms as tt
from tf1compat_init.errors import AssignmentMapError, CheckpointMismatchError
from tf1compat_init.mapping import AssignmentMap, Resolution, Rule, RuleKind
from tf1compat_init.rule_kinds import KINDS

pytestmark = pytest.mark.pure

KEYS = ["old/a", "old/b", "old/c", "x/adam_m", "x/k"]


def _kinds(rules):
    return [r.kind for r in AssignmentMap(rules, name_of=lambda v: "t").rule_list]


def test_every_kind_the_parser_makes_is_a_rule_kind_with_both_readings():
    assert _kinds(None) == [RuleKind.IDENTITY]
    assert _kinds(lambda k: None) == [RuleKind.CALLABLE]
    assert _kinds({"old/": "new/"}) == [RuleKind.NAME]
    assert _kinds({"old/a": object()}) == [RuleKind.ONE_TO_ONE]
    assert _kinds({re.compile("old/(.*)"): r"n/\1"}) == [RuleKind.REGEX]
    assert _kinds({"a + b": "c | concat(-1)"}) == [RuleKind.ROUTED]
    assert _kinds({"a": "q, k | split(-1)"}) == [RuleKind.ROUTED]
    assert _kinds({"a": "q | reshape(2)"}) == [RuleKind.NAME]
    assert set(KINDS) == set(RuleKind)


def test_a_kind_still_compares_equal_to_its_string():
    rule = Rule("regex", re.compile("a"), "b", "{'a': 'b'}")
    assert rule.kind is RuleKind.REGEX and rule.kind == "regex" and f"{rule.kind}" == "regex"
    with pytest.raises(ValueError):
        Rule("scope", "a/", "b/", "{'a/': 'b/'}")


def test_resolve_returns_the_pairs_and_what_it_left_out():
    amap = AssignmentMap({"old/a": "t", "old/b": "t", "old/": "n/"}, exclude=["^n/c$"])
    got = amap.resolve(KEYS, ["t", "n/a", "n/b", "n/c"], on_conflict="last")
    assert isinstance(got, Resolution)
    assert [tuple(p[:2]) for p in got] == [("old/a", "n/a"), ("old/b", "n/b"), ("old/b", "t")]
    assert got.excluded == {"n/c": "old/c"}
    assert [tuple(p[:2]) for p in got.overridden] == [("old/a", "t")]
    assert got.dropped == {}
    # callers that passed their own out-parameters still get them filled
    excluded: dict[str, str] = {}
    amap.resolve(KEYS, ["t", "n/a", "n/b", "n/c"], on_conflict="last", excluded=excluded)
    assert excluded == {"n/c": "old/c"}


def test_drop_is_a_plain_callable_and_a_recipe_supplies_it():
    amap = AssignmentMap({"/": "/"})
    got = amap.resolve(KEYS, ["x/adam_m", "x/k"], drop=lambda k: "slot" if "adam" in k else None)
    assert [p.target for p in got] == ["x/k"] and got.dropped == {"x/adam_m": "slot"}
    recipe = tt.Recipe("grammar-demo", {"/": "/"}, drop=[r"adam_[mv]$"], requires=["^x/"])
    got = AssignmentMap(recipe).resolve(KEYS, ["x/adam_m", "x/k"])
    assert got.dropped == {"x/adam_m": "recipe grammar-demo drops it (adam_[mv]$)"}


def test_the_recipe_checks_beside_the_plan():
    recipe = tt.Recipe("grammar-demo", {}, drop=[r"adam_[mv]$"], requires=["^y/"])
    assert recipe_plan.drop_reason(None, "x/adam_m") is None
    assert recipe_plan.drop_reason(recipe, "x/k") is None
    dropped: dict[str, str] = {}
    assert recipe_plan.drop_unused(recipe, ["x/adam_m", "x/k"], dropped) == ["x/k"]
    assert dropped == {"x/adam_m": "recipe grammar-demo drops it (adam_[mv]$)"}
    recipe_plan.check_requires(None, KEYS)
    with pytest.raises(CheckpointMismatchError, match="no key matches '\\^y/'"):
        recipe_plan.check_requires(recipe, KEYS)
    amap = AssignmentMap(recipe)
    assert amap.dropped_by("x/adam_m") == recipe_plan.drop_reason(recipe, "x/adam_m")


def test_rename_dispatches_on_the_same_kinds():
    amap = AssignmentMap(
        {
            "old/": "new/",
            re.compile(r"x/(k)"): r"y/\1",
            "old/a + old/b": "ab | concat(-1)",
        }
    )
    assert [(src, new) for _, src, new in amap.rename(KEYS)] == [
        (("old/a",), ("new/a",)),
        (("old/b",), ("new/b",)),
        (("old/c",), ("new/c",)),
        (("old/a", "old/b"), ("ab",)),
        (("x/k",), ("y/k",)),
    ]
    with pytest.raises(AssignmentMapError, match="renames 'x/k' to the empty string"):
        AssignmentMap({re.compile("x/k"): ""}).rename(KEYS)
    with pytest.raises(AssignmentMapError, match="variable objects have no meaning here"):
        AssignmentMap({"old/a": object()}, name_of=lambda v: "t").rename(KEYS)
