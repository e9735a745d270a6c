"""tf1compat_init.engine.grammar.rules: rule kinds, rules, pairs and a resolution as data."""

from __future__ import annotations

import re

import pytest

from tf1compat_init.engine.grammar.rules import ROOT, Pair, Resolution, Rule, RuleKind, rule_text
from tf1compat_init.errors import AssignmentMapError

pytestmark = pytest.mark.pure


class _Route:
    """Stands in for transforms.Route: the keys read, and a rename over a view's keys."""

    def __init__(self, keys, source):
        self.keys, self.source = tuple(keys), source

    def rename(self, mapping):
        return _Route([mapping[k] for k in self.keys], " + ".join(mapping[k] for k in self.keys))


class _Leaves:
    def rename(self, name):
        return name.replace("/gamma", "/scale")


def test_kinds_are_strings_and_a_rule_reads_a_string_as_its_kind():
    assert RuleKind.REGEX == "regex" and {k.value for k in RuleKind} == {
        "identity",
        "name",
        "one_to_one",
        "regex",
        "callable",
        "routed",
    }
    rule = Rule("name", "a/", "b/", "{'a/': 'b/'}")
    assert type(rule.kind) is RuleKind and rule.kind is RuleKind.NAME
    assert "kind='name'" in repr(rule)
    with pytest.raises(ValueError):
        Rule("scope", "a/", "b/", "")


def test_rules_are_frozen_and_compare_by_value():
    a = Rule(RuleKind.NAME, "a", "b", "t")
    assert a == Rule("name", "a", "b", "t") and hash(a) == hash(Rule("name", "a", "b", "t"))
    with pytest.raises(AttributeError):
        a.key = "c"


def test_a_regex_rule_expands_its_template_then_renames_leaves():
    pattern = re.compile(r"^bert/encoder/layer_(\d+)/(.*)$")
    match = pattern.match("bert/encoder/layer_3/LayerNorm/gamma")
    plain = Rule(RuleKind.REGEX, pattern, r"layers/\1/\2", "t")
    assert plain.expand(match, plain.target) == "layers/3/LayerNorm/gamma"
    leaves = Rule(RuleKind.REGEX, pattern, r"layers/\1/\2", "t", leaves=_Leaves())
    assert leaves.expand(match, leaves.target) == "layers/3/LayerNorm/scale"


def test_a_pair_reads_its_key_or_its_routes_keys():
    rule = Rule(RuleKind.NAME, "a", "x", "t")
    assert Pair("a", "x", rule).keys == ("a",)
    assert Pair("a + b", "x", rule, _Route(["a", "b"], "a + b")).keys == ("a", "b")


def test_renamed_pairs_follow_a_views_names():
    rule = Rule(RuleKind.NAME, "v", "x", "t")
    plain = Pair("v", "x", rule).renamed({"v": "raw/v"})
    assert plain == ("raw/v", "x", rule, None)
    routed = Pair("v + w", "x", rule, _Route(["v", "w"], "v + w"))
    moved = routed.renamed({"v": "raw/v", "w": "raw/w"})
    assert moved.checkpoint_key == "raw/v + raw/w" and moved.keys == ("raw/v", "raw/w")
    # a view whose names are themselves transformed hands its route to a plain pair
    route = _Route(["raw/a", "raw/b"], "raw/a + raw/b")
    taken = Pair("v", "x", rule).renamed({}, routes={"v": route})
    assert taken.route is route and taken.checkpoint_key == "raw/a + raw/b"


def test_a_routed_pair_over_transformed_view_names_is_refused():
    rule = Rule(RuleKind.ROUTED, ("v", "w"), "x", "{('v', 'w'): 'x'}")
    pair = Pair("v + w", "x", rule, _Route(["v", "w"], "v + w"))
    with pytest.raises(AssignmentMapError, match=r"\{\('v', 'w'\): 'x'\}.*one place"):
        pair.renamed({"v": "v", "w": "w"}, routes={"v": _Route(["a"], "a")})


def test_a_resolution_is_its_pairs_plus_what_was_left_out():
    rule = Rule(RuleKind.IDENTITY, None, None, "None")
    res = Resolution([Pair("a", "a", rule)], excluded={"b": "b"})
    assert list(res) == [("a", "a", rule, None)] and isinstance(res, list)
    assert res.excluded == {"b": "b"} and res.overridden == [] and res.dropped == {}
    other = Resolution()
    other.dropped["c"] = "why"
    assert Resolution().dropped == {}  # no shared default


def test_rule_text_reads_as_the_user_wrote_it():
    assert rule_text("old/", "new/") == "{'old/': 'new/'}"
    assert rule_text(re.compile(r"^a/(.*)"), r"b/\1") == "{'^a/(.*)': 'b/\\\\1'}"
    assert ROOT == "/"
