"""tf1compat_init.engine.planning.preamble: every front end's map-and-policy step."""

from __future__ import annotations

import pytest

from tf1compat_init import AssignmentMapError, RestorePolicy
from tf1compat_init.engine.planning.policy import UNSET
from tf1compat_init.engine.planning.preamble import prepare

pytestmark = pytest.mark.pure


def test_the_map_passes_through_with_the_keywords_policy():
    amap, policy = prepare("load", {"a/": "b/"}, None, None, {"on_missing": "warn"})
    assert amap == {"a/": "b/"}
    assert isinstance(policy, RestorePolicy) and policy.on_missing == "warn"


def test_unset_keywords_keep_the_defaults():
    _, policy = prepare("load", {}, None, None, {"on_missing": UNSET})
    assert policy == RestorePolicy()


def test_a_policy_object_is_taken_as_is():
    given = RestorePolicy(on_mismatch="warn")
    _, policy = prepare("load", {}, None, given, {})
    assert policy.on_mismatch == "warn"


def test_an_unknown_keyword_or_a_bad_value_is_refused():
    with pytest.raises(TypeError):
        prepare("load", {}, None, None, {"on_missin": "warn"})
    with pytest.raises(ValueError):
        prepare("load", {}, None, None, {"on_missing": "sometimes"})
    with pytest.raises(TypeError):
        prepare("load", {}, None, {"on_missing": "warn"}, {})


def test_a_front_end_may_allow_fewer_keywords():
    with pytest.raises(TypeError):
        prepare("restore", {}, None, None, {"on_mismatch": "warn"}, allowed=("on_missing",))


def test_a_recipe_replaces_the_map_and_both_are_an_error():
    amap, _ = prepare("load", None, "bert-to-keras-hub", None, {})
    assert amap is not None and amap != {}
    with pytest.raises(AssignmentMapError):
        prepare("load", {"a/": "b/"}, "bert-to-keras-hub", None, {})
    with pytest.raises(AssignmentMapError):
        prepare("load", None, "no-such-recipe", None, {})
