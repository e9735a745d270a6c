"""tf1compat_init.engine.grammar.name_index: scope queries and "did you mean" hints."""

from __future__ import annotations

import pytest

from tf1compat_init.engine.grammar.name_index import (
    NameIndex,
    SortedNames,
    did_you_mean,
    nearest,
    scopes_of,
)
from tf1compat_init.engine.grammar.rules import ROOT

pytestmark = pytest.mark.pure

NAMES = ["bert/encoder/layer_0/kernel", "bert/encoder/layer_1/kernel", "bert/pooler/bias", "cls/w"]


def test_under_returns_the_names_in_a_scope_in_order():
    index = NameIndex(reversed(NAMES))
    assert index.under("bert/encoder/") == NAMES[:2]
    assert index.under("bert/") == NAMES[:3]
    assert index.under("nothing/") == []
    assert index.under(ROOT) == sorted(NAMES)


def test_has_scope_and_membership():
    index = NameIndex(NAMES)
    assert index.has_scope("bert/pooler/") and index.has_scope(ROOT)
    assert not index.has_scope("bert/decoder/")
    assert not NameIndex([]).has_scope(ROOT)
    assert "cls/w" in index and "cls/" not in index


def test_a_set_is_kept_not_copied():
    names = {"a", "b"}
    assert NameIndex(names).set is names
    assert isinstance(NameIndex(names).sorted, SortedNames)


def test_nearest_finds_a_typo_and_never_the_whole_list():
    assert nearest("bert/pooler/bais", NAMES) == ["bert/pooler/bias"]
    assert nearest("x", []) == []
    assert len(nearest("bert/encoder/layer_0/kernel", NAMES)) <= 3


def test_nearest_on_a_large_collection_looks_at_neighbours_and_same_leaf():
    many = SortedNames(sorted(f"scope_{i:05d}/dense/kernel" for i in range(5000)))
    # a typo late in the name: the sorted neighbours
    assert nearest("scope_02500/dense/kernal", many)[0] == "scope_02500/dense/kernel"
    # a different scope early in it: the names with the same last component
    many2 = sorted([*many, "zzz/other/leaf_only_here"])
    assert nearest("aaa/other/leaf_only_here", many2) == ["zzz/other/leaf_only_here"]


def test_scopes_of_lists_distinct_top_scopes_up_to_a_limit():
    assert scopes_of(NAMES) == ["bert/", "cls/"]
    assert scopes_of(["a", "b/c", "b/d"]) == ["a", "b/"]
    assert scopes_of([f"s{i}/x" for i in range(10)], limit=3) == ["s0/", "s1/", "s2/"]


def test_did_you_mean_is_a_message_tail_or_nothing():
    assert did_you_mean("cls/ww", NAMES) == "; did you mean 'cls/w'?"
    assert did_you_mean("completely-different", NAMES) == ""
