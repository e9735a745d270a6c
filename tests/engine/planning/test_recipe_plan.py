"""tf1compat_init.engine.planning.recipe_plan: what a recipe adds to a plan."""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import pytest

from tf1compat_init import CheckpointMismatchError
from tf1compat_init.engine.planning.recipe_plan import (
    check_coverage,
    check_requires,
    drop_reason,
    drop_unused,
)
from tf1compat_init.recipes.recipe import Recipe

pytestmark = pytest.mark.pure

RECIPE = Recipe(
    name="toy",
    rules={"bert/": "model/"},
    drop=[r"/adam_[mv]$"],
    requires=[r"^bert/embeddings/"],
    optional=[r"^model/pooler/"],
)


def _report(untouched=(), unused=()):
    return SimpleNamespace(
        untouched=list(untouched), unused=list(unused), summary=lambda: "0 loaded"
    )


def test_drop_reason_names_the_recipe_and_its_pattern():
    assert drop_reason(RECIPE, "bert/w/adam_m") == "recipe toy drops it (/adam_[mv]$)"
    assert drop_reason(RECIPE, "bert/w") is None
    assert drop_reason(None, "bert/w/adam_m") is None


def test_check_requires_raises_for_a_missing_required_key():
    check_requires(None, [])
    check_requires(RECIPE, ["bert/embeddings/word"])
    with pytest.raises(CheckpointMismatchError, match="toy"):
        check_requires(RECIPE, ["other/w"])


def test_drop_unused_keeps_what_the_recipe_does_not_drop():
    dropped: dict[str, str] = {}
    kept = drop_unused(RECIPE, ["bert/w/adam_v", "cls/w"], dropped)
    assert kept == ["cls/w"]
    assert dropped == {"bert/w/adam_v": "recipe toy drops it (/adam_[mv]$)"}


def test_check_coverage_raises_for_weights_no_rule_covers():
    report = _report(untouched=["model/head/w", "model/pooler/w", "global_step"])
    optional = [re.compile("global_step")]
    with pytest.raises(CheckpointMismatchError, match=r"1 weight\(s\).*model/head/w"):
        check_coverage(RECIPE, report, "error", optional)
    check_coverage(RECIPE, report, "ignore", optional)  # nothing raised


def test_check_coverage_warns_and_logs_unused_keys(caplog):
    report = _report(untouched=["model/head/w"], unused=[f"k{i}" for i in range(12)])
    with caplog.at_level(logging.WARNING, logger="tf1compat_init.plan"):
        check_coverage(RECIPE, report, "warn", [])
    text = caplog.text
    assert "12 checkpoint key(s) nothing loads" in text and " ..." in text
    assert "sets no value for 1 weight(s)" in text


def test_check_coverage_is_quiet_when_everything_is_covered(caplog):
    with caplog.at_level(logging.WARNING, logger="tf1compat_init.plan"):
        check_coverage(RECIPE, _report(untouched=["model/pooler/w"]), "error", [])
    assert caplog.text == ""
