"""tf1compat_init.engine.grammar.rule_kinds: one resolve/rename handler per rule kind.

Each kind is exercised through the table (``KINDS``) on rules the map parses, and checked
against what ``AssignmentMap`` does with the same rule, so the table and the map agree.
"""

from __future__ import annotations

import re

import pytest

from tf1compat_init import AssignmentMap, AssignmentMapError
from tf1compat_init.engine.grammar.name_index import NameIndex
from tf1compat_init.engine.grammar.rule_kinds import KINDS, Kind
from tf1compat_init.engine.grammar.rules import RuleKind

pytestmark = pytest.mark.pure

CKPT = ["old/dense/kernel", "old/dense/bias", "global_step"]
TARGETS = ["new/dense/kernel", "new/dense/bias", "other/w"]


def _rules(spec):
    return AssignmentMap(spec).rule_list


def test_every_rule_kind_has_both_readings():
    assert set(KINDS) == set(RuleKind)
    for kind in KINDS.values():
        assert isinstance(kind, Kind)
        assert callable(kind.resolve) and callable(kind.rename)


@pytest.mark.parametrize(
    "spec, kind",
    [
        ({"old/": "new/"}, RuleKind.NAME),
        ({"old/dense/kernel": "new/dense/kernel"}, RuleKind.NAME),
        ({re.compile("old/(.*)"): r"new/\1"}, RuleKind.REGEX),
    ],
)
def test_resolve_pairs_each_checkpoint_key_with_its_target(spec, kind):
    (rule,) = _rules(spec)
    pairs = KINDS[rule.kind].resolve(rule, NameIndex(CKPT), NameIndex(TARGETS), False)
    got = {p.target: p.checkpoint_key for p in pairs}
    expected = {"new/dense/kernel": "old/dense/kernel", "new/dense/bias": "old/dense/bias"}
    if "old/dense/kernel" in spec:
        expected.pop("new/dense/bias")
    assert got == expected


def test_rename_reads_the_keys_alone():
    (rule,) = _rules({"old/": "new/"})
    triples = KINDS[rule.kind].rename(rule, sorted(CKPT), set(CKPT))
    assert {old: new for _, (old,), (new,) in triples} == {
        "old/dense/kernel": "new/dense/kernel",
        "old/dense/bias": "new/dense/bias",
    }
    assert triples == AssignmentMap({"old/": "new/"}).rename(sorted(CKPT))


def test_a_scope_with_no_checkpoint_key_is_an_error_with_a_hint():
    (rule,) = _rules({"olld/": "new/"})
    with pytest.raises(AssignmentMapError, match="olld"):
        KINDS[rule.kind].resolve(rule, NameIndex(CKPT), NameIndex(TARGETS), False)
