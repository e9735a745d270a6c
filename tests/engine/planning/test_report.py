"""tf1compat_init.report: what a RestoreReport says, in its line, its table and its dict."""

from __future__ import annotations

import json

import pytest

from tf1compat_init import AssignmentMap, RestoreReport
from tf1compat_init.report import Mismatch

pytestmark = pytest.mark.pure


def _report(**kw) -> RestoreReport:
    base = dict(
        checkpoint="/ckpt/model.ckpt-5",
        loaded={"enc/w": "old/w", "enc/q": "old/qkv"},
        missing={"head/w": "head/w", "head/b": "head/b"},
        optional=["head/b"],
        untouched=["new/x"],
        unused=["old/extra"],
        transforms={"enc/q": "split(-1)[0]"},
        suggestions={"head/w": ["old/head/w"]},
    )
    base.update(kw)
    return RestoreReport(**base)


def test_ok_needs_every_required_target_and_no_mismatch():
    assert RestoreReport().ok
    report = _report()
    assert report.missing_required == {"head/w": "head/w"}
    assert not report.ok
    assert _report(missing={"head/b": "head/b"}).ok  # only the optional one is missing
    wrong = Mismatch("enc/w", "old/w", (2, 3), (3, 2), "float32", "float32")
    assert not _report(missing={}, mismatched=[wrong]).ok


def test_summary_counts_every_section():
    assert _report().summary() == (
        "2 loaded, 2 missing (1 optional), 0 mismatched, 1 untouched, 1 unused"
    )
    dropped = _report(dropped={"global_step": "recipe x drops it"})
    assert dropped.summary().endswith("1 unused, 1 dropped")


def test_the_table_says_why_for_each_row():
    text = str(_report())
    lines = text.splitlines()
    assert lines[0] == "Plan for /ckpt/model.ckpt-5: " + _report().summary()
    rows = {(line.split()[0], line.split()[1]): line for line in lines[1:]}
    assert rows[("loaded", "enc/q")].endswith("<- old/qkv | split(-1)[0]")
    assert rows[("loaded", "enc/w")].endswith("<- old/w")
    assert rows[("missing", "head/w")].endswith(
        "<- head/w not in checkpoint; did you mean old/head/w?"
    )
    assert rows[("missing", "head/b")].endswith("<- head/b not in checkpoint (optional)")
    assert rows[("untouched", "new/x")].endswith("(no rule covers it; keeps its initial value)")
    assert rows[("unused", "old/extra")].endswith("(checkpoint key nothing loads)")
    # names are padded to one column
    assert len({line.index("<-") for line in lines[1:] if "<-" in line}) == 1
    assert str(_report(applied=True)).startswith("Restored from /ckpt/model.ckpt-5: ")


def test_a_long_section_is_cut_at_twenty_rows_and_says_how_many_more():
    report = RestoreReport(checkpoint="c", unused=[f"k{i:02d}" for i in range(25)])
    lines = str(report).splitlines()
    assert [line.split()[1] for line in lines[1:21]] == [f"k{i:02d}" for i in range(20)]
    assert lines[21].split() == ["unused", "...", "and", "5", "more", "(see", "to_dict())"]
    assert len(report.to_dict()["unused"]) == 25


@pytest.mark.parametrize(
    "mismatch, reason",
    [
        (
            Mismatch("w", "k", (2, 3), (3, 2), "float32", "float32"),
            "shape [2, 3] vs checkpoint [3, 2]",
        ),
        (
            Mismatch("w", "k", (None, 3), (5, 3), "float16", "float32"),
            "dtype float16 vs checkpoint float32",
        ),
        (
            Mismatch("w", "k", (4,), (), "int64", "int32"),
            "shape [4] vs checkpoint [], dtype int64 vs checkpoint int32",
        ),
        (Mismatch("w", "k", None, (7, 7), None, "float32"), ""),  # unknown target: fits
        (
            Mismatch("w", "k", (8,), (2, 3), "float32", "float32", "reshape(8)", "'k': 'w'"),
            "rule 'k': 'w': reshape(8) gives float32[2, 3], the target is float32[8]",
        ),
        (
            Mismatch("w", "k", None, (2, 3), None, "float32", "reshape(8)", "'k': 'w'"),
            "rule 'k': 'w': reshape(8) gives float32[2, 3], the target is <unknown>",
        ),
    ],
)
def test_a_mismatch_says_what_differs(mismatch, reason):
    assert mismatch.reason == reason


def test_a_mismatch_row_in_the_table():
    m = Mismatch("enc/w", "old/w", (2, 3), (3, 2), "float32", "float32")
    row = [line for line in str(RestoreReport(mismatched=[m])).splitlines() if "mismatched" in line]
    assert row[-1].split(None, 2)[2] == "<- old/w: shape [2, 3] vs checkpoint [3, 2]"


def test_to_dict_is_json_and_holds_everything():
    m = Mismatch("enc/w", "old/w", None, (3, 2), "float32", "float16")
    amap = AssignmentMap({"old/": "enc/"})
    report = _report(mismatched=[m], applied_map=amap, excluded={"enc/z": "old/z"})
    d = json.loads(json.dumps(report.to_dict()))
    assert d["ok"] is False and d["applied"] is False
    assert d["loaded"] == report.loaded and d["missing"] == report.missing
    assert d["optional"] == ["head/b"] and d["untouched"] == ["new/x"]
    assert d["mismatched"] == [
        {
            "target": "enc/w",
            "checkpoint_key": "old/w",
            "target_shape": None,
            "checkpoint_shape": [3, 2],
            "target_dtype": "float32",
            "checkpoint_dtype": "float16",
            "transform": None,
            "reason": "dtype float32 vs checkpoint float16",
        }
    ]
    assert d["applied_map"] == {"old/": "enc/"}
    assert d["excluded"] == {"enc/z": "old/z"} and d["suggestions"] == {"head/w": ["old/head/w"]}
    assert _report(applied_map={"a": "b"}).to_dict()["applied_map"] == {"a": "b"}
    assert _report(applied_map=None).to_dict()["applied_map"] is None
