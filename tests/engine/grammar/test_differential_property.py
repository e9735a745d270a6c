"""Property test: random variable trees and documented maps, ours against real TF.

For each example hypothesis draws a small tree of ``get_variable`` variables (nested
scopes from a tiny alphabet, so that ``a/`` and ``ab/`` sit side by side; random shapes;
some partitioned), writes it as a TF1 checkpoint, draws an assignment map from TF's
documented forms using scopes that exist, and derives the target graph from it
(re-partitioned at random, sometimes with one fault: a shape, a dtype, a key that is not
in the checkpoint). Then:

- where TF raises, or silently loads a value of the wrong shape, ours raises one of
  our errors at plan time;
- otherwise both load exactly the same ``{target: checkpoint_key}`` pairs.

Rules that write one variable twice are allowed: by default ours refuses them (an
``AssignmentMapError`` naming both rules), and with ``on_conflict="last"`` it must load
what TF loads. Bounded: 25 fixed examples (``derandomize``), well under a second each.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace

import pytest

tf = pytest.importorskip("tensorflow")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.tfgraph import Var, compare, write_checkpoint  # noqa: E402

from tf1compat_init import AssignmentMapError, Tf1CompatError  # noqa: E402

SCOPES = ("a", "b", "ab")  # 'a/' and 'ab/' share a prefix but not a scope
LEAVES = ("w", "k", "bias")
NEW_SCOPES = ("t/", "u/", "v/", "t/a/")  # target scopes; 't/' contains 't/a/' on purpose
NEW_NAMES = ("t/x", "u/x", "y", "v/a/x")


def _conflicting(names):
    """Whether a name is also a scope of another (TF would mix them up)."""
    return any(m.startswith(n + "/") for n in names for m in names)


@st.composite
def shapes(draw):
    rank = draw(st.integers(0, 2))
    return tuple(draw(st.integers(1, 4)) for _ in range(rank))


def partitions_for(draw, shape):
    if not shape or shape[0] < 2:
        return 1
    return draw(st.integers(1, min(3, shape[0])))


@st.composite
def trees(draw):
    """2 to 6 source variables with distinct names under nested scopes."""
    names = draw(
        st.lists(
            st.lists(st.sampled_from(SCOPES), max_size=2).flatmap(
                lambda scopes: st.sampled_from(LEAVES).map(lambda leaf: "/".join([*scopes, leaf]))
            ),
            min_size=2,
            max_size=6,
            unique=True,
        ).filter(lambda ns: not _conflicting(ns))
    )
    out = []
    for name in names:
        shape = draw(shapes())
        out.append(Var(name, shape, partitions=partitions_for(draw, shape)))
    return out


def scopes_of(names):
    """Every scope (``'a/'``, ``'a/b/'``) that holds at least one of ``names``."""
    return sorted({n[: i + 1] for n in names for i, c in enumerate(n) if c == "/"})


@dataclass
class MapSpec:
    """A drawn map: ``(checkpoint_key, target_name, kind)`` triples.

    ``kind`` is ``"name"`` (the string) or ``"object"`` (the variable, or its list of
    partitions). Called with the target graph's variables it builds the
    map TF and ours receive: a dict, or a list of pairs when a key repeats.
    """

    rules: list[tuple[str, str, str]]

    def __call__(self, variables):
        pairs = []
        for key, target, kind in self.rules:
            value = target
            if kind == "object":  # TF takes a partitioned variable as its list of parts
                var = variables[target]
                value = list(var) if type(var).__name__ == "PartitionedVariable" else var
            pairs.append((key, value))
        keys = [k for k, _ in pairs]
        return dict(pairs) if len(set(keys)) == len(keys) else pairs


@st.composite
def rule(draw, source, mixed):
    """One documented rule and the target variables it is meant to cover."""
    names = [v.name for v in source]
    by_name = {v.name: v for v in source}
    scopes = scopes_of(names)
    forms = ["root_to_scope", "name", "object"]
    if scopes:
        forms += ["scope_to_scope"]
    if not mixed:  # a rule onto the root covers every target; keep it to one-rule maps
        forms += ["root", "root"] + (["scope_to_root"] if scopes else [])
    form = draw(st.sampled_from(forms))

    def subset(candidates):
        # Mostly most of them: larger target graphs compare more pairs per example.
        least = max(1, len(candidates) * 2 // 3)
        return draw(st.lists(st.sampled_from(candidates), min_size=least, unique=True))

    def moved(var, name):
        return replace(var, name=name, partitions=partitions_for(draw, var.shape))

    if form == "root":
        return ("/", "/", "name"), [moved(by_name[n], n) for n in subset(names)]
    if form == "scope_to_root":
        scope = draw(st.sampled_from(scopes))
        under = [n for n in names if n.startswith(scope)]
        return (scope, "/", "name"), [moved(by_name[n], n[len(scope) :]) for n in subset(under)]
    if form == "root_to_scope":
        new = draw(st.sampled_from(NEW_SCOPES))
        return ("/", new, "name"), [moved(by_name[n], new + n) for n in subset(names)]
    if form == "scope_to_scope":
        scope, new = draw(st.sampled_from(scopes)), draw(st.sampled_from(NEW_SCOPES))
        under = [n for n in names if n.startswith(scope)]
        targets = [moved(by_name[n], new + n[len(scope) :]) for n in subset(under)]
        return (scope, new, "name"), targets
    key = draw(st.sampled_from(names))
    target = moved(by_name[key], draw(st.sampled_from(NEW_NAMES)))
    return (key, target.name, "object" if form == "object" else "name"), [target]


FAULTS = ("none",) * 4 + ("shape", "dtype", "missing")


@st.composite
def examples(draw):
    source = draw(trees())
    n_rules = draw(st.integers(1, 3))
    rules, targets = [], {}
    for _ in range(n_rules):
        r, covered = draw(rule(source, mixed=n_rules > 1))
        rules.append(r)
        for var in covered:
            targets.setdefault(var.name, var)  # a name drawn twice keeps its first spec
    targets = list(targets.values())
    fault = draw(st.sampled_from(FAULTS))
    if fault != "none":
        i = draw(st.integers(0, len(targets) - 1))
        var = targets[i]
        if fault == "shape":
            shape = var.shape[:-1] + (var.shape[-1] + 1,) if var.shape else (2,)
            targets[i] = replace(var, shape=shape)
        elif fault == "dtype":
            targets[i] = replace(var, dtype="float64")
        else:  # a sibling the checkpoint has no value for
            scope = var.name.rsplit("/", 1)[0] + "/" if "/" in var.name else ""
            targets.append(Var(scope + "zz", (2,)))
    hypothesis.assume(not _conflicting([v.name for v in targets]))
    return source, targets, MapSpec(rules), fault


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,  # the same 25 examples on every run and leg
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(examples())
def test_random_trees_resolve_as_tf_loads(example):
    source, targets, amap, fault = example
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "model.ckpt")
        values = write_checkpoint(prefix, source)
        out = compare(prefix, values, targets, amap)
    why = f"\nsource={source}\ntargets={targets}\nmap={amap.rules} fault={fault}\n" + out.explain()
    assert not out.unrecognised, why
    hypothesis.event(f"fault: {fault}")
    for key, target, kind in amap.rules:
        form = "one_to_one" if not key.endswith("/") else "scope"
        hypothesis.event(f"rule: {form} {'(root)' if '/' in (key, target) else ''} {kind}")
    hypothesis.event(f"partitioned targets: {sum(v.partitions > 1 for v in targets)}")
    hypothesis.event("TF failed" if out.tf_failed else "TF loaded")
    if out.tf_failed:
        assert isinstance(out.ours_error, Tf1CompatError), why
        return
    assert out.tf_loaded, why  # the drawn maps always load something
    hypothesis.event(f"{len(out.tf_loaded)} targets loaded; {len(amap.rules)} rules")
    if out.ours_error is not None:
        hypothesis.event("conflict refused by default")
        # Ours refuses two rules writing one variable; TF keeps the last in key order.
        assert isinstance(out.ours_error, AssignmentMapError), why
        assert "written by two rules" in str(out.ours_error), why
    else:
        assert out.ours_loaded == out.tf_loaded, why
    assert out.ours_last_error is None and out.ours_last_loaded == out.tf_loaded, why
