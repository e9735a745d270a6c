"""Tensor transforms and recipes: the pure parts (no TensorFlow).

The transforms module, plans with transforms against natively written checkpoints, the
native tf1 migrate and the CLI's plan / migrate with the string syntax and recipes.
"""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.bundles import write_checkpoint

from tf1compat_init import (
    AssignmentMap,
    AssignmentMapError,
    CheckpointMismatchError,
    open_checkpoint,
    plan_restore,
)
from tf1compat_init import transforms as tt
from tf1compat_init.cli import main
from tf1compat_init.migrate import load_map_file, migrate

pytestmark = pytest.mark.pure

RNG = np.random.default_rng(0)
TENSORS = {
    "ckpt/q/kernel": RNG.standard_normal((6, 6)).astype(np.float32),
    "ckpt/k/kernel": RNG.standard_normal((6, 6)).astype(np.float32),
    "ckpt/v/kernel": RNG.standard_normal((6, 6)).astype(np.float32),
    "ckpt/qkv/kernel": RNG.standard_normal((6, 18)).astype(np.float32),
    "ckpt/ids": np.arange(6, dtype=np.int64),
    "ckpt/q/kernel/adam_m": np.zeros((6, 6), np.float32),
    "global_step": np.array(7, np.int64),
}


@pytest.fixture
def ckpt(tmp_path: Path) -> str:
    return write_checkpoint(tmp_path / "src" / "model.ckpt", dict(sorted(TENSORS.items())))


# -- the transforms themselves --------------------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "text"),
    [
        (tt.reshape(768, 12, 64), "reshape(768, 12, 64)"),
        (tt.reshape(), "reshape()"),
        (tt.transpose(1, 0), "transpose(1, 0)"),
        (tt.split(-1), "split(-1)"),
        (tt.split(0, n=3), "split(0, n=3)"),
        (tt.split(1, sizes=[2, 4]), "split(1, sizes=[2, 4])"),
        (tt.concat(-1), "concat(-1)"),
        (tt.cast("float16"), "cast(float16)"),
        (tt.cast(np.float64), "cast(float64)"),
        (tt.fn(lambda a: a[::-1], name="flip"), "fn(flip)"),
    ],
)
def test_canonical_text_forms(transform, text):
    assert transform.text == text
    if not text.startswith("fn("):
        assert tt.parse_transforms(text) == (transform,)  # the text parses back to it


def test_string_forms_parse_and_round_trip():
    to = tt.parse_target("x | transpose(1, 0) | cast(float16)")
    assert to == tt.to("x", tt.transpose(1, 0), tt.cast("float16"))
    assert to.text == "x | transpose(1, 0) | cast(float16)"
    to = tt.parse_target("q/kernel,k/kernel ,  v/kernel|split(-1)")
    assert to.targets == ("q/kernel", "k/kernel", "v/kernel")
    assert to.text == "q/kernel, k/kernel, v/kernel | split(-1)"
    assert tt.parse_key("ckpt/q + ckpt/k+ckpt/v") == ("ckpt/q", "ckpt/k", "ckpt/v")
    # Plain TF1 names are never pipelines or concat keys.
    assert not tt.is_pipeline("bert/encoder/layer_0/attention/self/query/kernel")
    assert not tt.is_concat_key("model/dense_1/kernel")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x | reshap(1, 2)", "unknown transform 'reshap'"),
        ("x | reshape(1, 2", "is not a transform"),
        ("x | | cast(float16)", "an empty step"),
        ("x | cast(nosuchtype)", "unknown dtype 'nosuchtype'"),
        ("x | fn(flip)", "fn(...) has no string form"),
        ("x | split(-1, parts=2)", "unexpected keyword argument 'parts'"),
        ("x | reshape(1, -1, -1)", "-1 may appear once"),
        ("x | reshape(open('f'))", "arguments must be numbers"),
        ("a b | reshape()", "names separated by commas"),
    ],
)
def test_bad_syntax_is_a_clear_error(text, message):
    with pytest.raises(tt.TransformError, match=re.escape(message)):
        tt.parse_target(text)


def test_infer_shapes_and_dtypes():
    f32 = "float32"
    assert tt.infer([tt.reshape()], [((768, 768), f32)], [(768, 12, 64)]) == [((768, 12, 64), f32)]
    assert tt.infer([tt.reshape(-1, 64)], [((4, 32), f32)], [None]) == [((2, 64), f32)]
    assert tt.infer([tt.transpose()], [((2, 3, 4), f32)], [None]) == [((4, 3, 2), f32)]
    assert tt.infer([tt.split(-1)], [((4, 9), f32)], [None] * 3) == [((4, 3), f32)] * 3
    assert tt.infer([tt.split(0, sizes=[1, 3])], [((4, 2), f32)], [None, None]) == [
        ((1, 2), f32),
        ((3, 2), f32),
    ]
    ins = [((4, 2), f32), ((4, 3), f32)]
    assert tt.infer([tt.concat(1)], ins, [None]) == [((4, 5), f32)]
    assert tt.infer([tt.cast("half")], [((2,), f32)], [None]) == [((2,), "float16")]
    flip = tt.fn(lambda a: a.T[::-1].astype(np.float64), name="flip")
    assert tt.infer([flip], [((2, 5), f32)], [None]) == [((5, 2), "float64")]
    given_ = tt.fn(lambda a: a.sum(), name="s", shape=(), dtype="float32")
    assert tt.infer([given_], [((2, 5), f32)], [None]) == [((), f32)]


@pytest.mark.parametrize(
    ("steps", "ins", "targets", "message"),
    [
        ([tt.reshape(5, 5)], [((4, 6), "float32")], [None], "reshape(5, 5) cannot reshape [4, 6]"),
        ([tt.reshape()], [((4, 6), "float32")], [None], "write the shape"),
        ([tt.split(-1)], [((4, 7), "float32")], [None] * 3, "7 is not a multiple of 3"),
        ([tt.split(0, sizes=[1, 2])], [((4, 7), "float32")], [None] * 2, "add up to 3"),
        (
            [tt.concat(0)],
            [((2, 3), "float32"), ((2, 3), "int64")],
            [None],
            "tensor 2 is int64, tensor 1 is float32",
        ),
        (
            [tt.concat(0)],
            [((2, 3), "float32"), ((2, 4), "float32")],
            [None],
            "all dimensions but axis 0 must agree",
        ),
        ([tt.transpose(0, 0)], [((2, 3), "float32")], [None], "is not a permutation"),
        ([tt.concat(2)], [((2, 3), "float32")] * 2, [None], "axis 2 is out of range"),
        ([], [((2, 3), "float32")] * 2, [None], "2 checkpoint keys need concat"),
        ([], [((2, 3), "float32")], [None, None], "2 targets need split"),
        ([tt.fn(lambda a: a.no_such)], [((2,), "float32")], [None], "give tt.fn(..., shape="),
        ([tt.cast("float16")], [((2,), "string")], [None], "cannot cast a string"),
    ],
)
def test_infer_errors(steps, ins, targets, message):
    with pytest.raises(tt.TransformError, match=re.escape(message)):
        tt.infer(steps, ins, targets)


def test_run_values():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    (r,) = tt.run([tt.reshape(2, 12)], [a], [None])
    np.testing.assert_array_equal(r, a.reshape(2, 12))
    (r,) = tt.run([tt.transpose(1, 0), tt.cast("float16")], [a], [None])
    np.testing.assert_array_equal(r, a.T.astype(np.float16))
    parts = tt.run([tt.split(1)], [a], [None] * 3)
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(p, a[:, 2 * i : 2 * i + 2])
        assert p.flags.c_contiguous
    (r,) = tt.run([tt.concat(0)], [a, a + 1], [None])
    np.testing.assert_array_equal(r, np.concatenate([a, a + 1]))
    (r,) = tt.run([tt.fn(lambda x: x[::-1], name="flip")], [a], [None])
    np.testing.assert_array_equal(r, a[::-1])


def test_fn_that_breaks_its_planned_shape_is_caught():
    calls = []

    def sneaky(x):
        calls.append(x.shape)
        return x if len(calls) == 1 else x[:1]

    with pytest.raises(tt.TransformError, match="was planned as"):
        tt.run([tt.fn(sneaky)], [np.zeros((3, 2), np.float32)], [None])


def test_plan_time_probe_uses_no_memory():
    """The probe ``fn`` sees is a zero-stride view: a huge input costs nothing."""
    seen = []
    f = tt.fn(lambda a: seen.append(a.strides) or a[..., :2], name="head")
    tracemalloc.start()
    try:
        out = tt.infer([f], [((100_000, 10_000), "float32")], [None])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out == [((100_000, 2), "float32")]
    assert seen == [(0, 0)]
    assert peak < 1 << 20  # 4 GB of input, well under 1 MiB traced


# -- copies: reshape none, the others at most one --------------------------------------------


def _peak_extra(steps, arrays, targets):
    """Bytes allocated at the peak of run() (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = tt.run(steps, arrays, targets)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return out, peak


def test_reshape_never_copies():
    a = np.arange(1 << 20, dtype=np.float32)
    (r,) = tt.run([tt.reshape(1024, -1)], [a], [None])
    assert np.shares_memory(r, a)
    (r,) = tt.run([tt.reshape()], [a], [(16, 256, 256)])
    assert np.shares_memory(r, a)
    _, peak = _peak_extra([tt.reshape(512, 2048)], [a], [None])
    assert peak < a.nbytes // 100


@pytest.mark.parametrize(
    ("steps", "n_in", "targets"),
    [
        ([tt.transpose(1, 0)], 1, [None]),
        ([tt.cast("float64")], 1, [None]),  # the output is twice the input: one copy of it
        ([tt.transpose(1, 0), tt.cast("float16")], 1, [None]),
        ([tt.reshape(2048, 512), tt.transpose(1, 0), tt.reshape(-1)], 1, [None]),
        ([tt.split(1)], 1, [None] * 4),
        ([tt.split(0)], 1, [None] * 4),  # contiguous parts: views, no copy
        ([tt.concat(0)], 2, [None]),
        ([tt.concat(1), tt.reshape(-1)], 2, [None]),
        ([tt.fn(lambda x: x * 2, name="double")], 1, [None]),
    ],
)
def test_other_transforms_copy_at_most_once(steps, n_in, targets):
    arrays = [np.ones((1024, 1024), np.float32) for _ in range(n_in)]
    out, peak = _peak_extra(steps, arrays, targets)
    out_bytes = sum(o.nbytes for o in out)
    assert peak <= out_bytes + (64 << 10), (peak, out_bytes)
    if any(isinstance(s, tt.Split) for s in steps) and steps[0].axis == 0:
        assert all(np.shares_memory(o, arrays[0]) for o in out)


_DIMS = st.integers(min_value=1, max_value=4)


@st.composite
def _pipelines(draw):
    """A random input shape and a pipeline of transforms that applies to it."""
    shape = tuple(draw(st.lists(_DIMS, min_size=1, max_size=4)))
    steps = []
    n_targets = 1
    has_split = False
    cur = shape
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["reshape", "transpose", "cast", "split", "fn"]))
        if kind == "reshape":
            size = int(np.prod(cur))
            dims = [d for d in range(1, size + 1) if size % d == 0]
            first = draw(st.sampled_from(dims))
            step = (
                tt.reshape(first, -1) if draw(st.booleans()) else tt.reshape(size // first, first)
            )
        elif kind == "transpose":
            step = tt.transpose(*draw(st.permutations(range(len(cur)))))
        elif kind == "cast":
            step = tt.cast(draw(st.sampled_from(["float16", "float64", "int32", "float32"])))
        elif kind == "split":
            if has_split:
                continue
            has_split = True
            axis = draw(st.integers(-len(cur), len(cur) - 1))
            divisors = [n for n in range(1, cur[axis] + 1) if cur[axis] % n == 0]
            n_targets = draw(st.sampled_from(divisors))
            step = tt.split(axis)
        else:
            step = tt.fn(lambda a: a[..., ::-1][..., :1], name="last")
        steps.append(step)
        outs = tt.infer([*steps], [(shape, "float32")], [None] * n_targets)
        cur = outs[0][0]
    return shape, steps, n_targets


@settings(max_examples=150, deadline=None)
@given(_pipelines())
def test_plan_time_shapes_equal_the_numpy_result(case):
    shape, steps, n_targets = case
    specs = tt.infer(steps, [(shape, "float32")], [None] * n_targets)
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    outs = tt.run(steps, [data], [None] * n_targets)
    assert [(o.shape, tt._dtype_name(o.dtype)) for o in outs] == specs


@settings(max_examples=50, deadline=None)
@given(
    st.lists(_DIMS, min_size=1, max_size=3),
    st.lists(st.integers(1, 3), min_size=1, max_size=4),
    st.data(),
)
def test_concat_plan_time_shape_equals_numpy(base, extents, data):
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    shapes = []
    for e in extents:
        s = list(base)
        s[axis] = e
        shapes.append(tuple(s))
    specs = tt.infer([tt.concat(axis)], [(s, "int64") for s in shapes], [None])
    arrays = [np.zeros(s, np.int64) for s in shapes]
    (out,) = tt.run([tt.concat(axis)], arrays, [None])
    assert specs == [(out.shape, "int64")]


# -- maps with transforms: plans ------------------------------------------------------------


MAP = {
    "ckpt/q/kernel": tt.to("q", tt.reshape(6, 2, 3)),
    "ckpt/k/kernel": "k | reshape()",
    "ckpt/v/kernel": tt.to("v", tt.transpose(1, 0), tt.cast("float16")),
    "ckpt/qkv/kernel": "a, b, c | split(-1)",
    ("ckpt/q/kernel", "ckpt/k/kernel"): tt.to("qk", tt.concat(0)),
    "ckpt/k/kernel + ckpt/v/kernel": "kv | concat(-1)",
}
SPECS = {
    "q": ((6, 2, 3), "float32"),
    "k": ((6, 2, 3), "float32"),
    "v": ((6, 6), "float16"),
    "a": ((6, 6), "float32"),
    "b": ((6, 6), "float32"),
    "c": ((6, 6), "float32"),
    "qk": ((12, 6), "float32"),
    "kv": ((6, 12), "float32"),
}


def test_plan_shows_each_transform(ckpt):
    plan = plan_restore(ckpt, SPECS, MAP)
    report = plan.report
    assert report.loaded["qk"] == "ckpt/q/kernel + ckpt/k/kernel"
    assert report.loaded["b"] == "ckpt/qkv/kernel"
    assert report.transforms == {
        "q": "reshape(6, 2, 3)",
        "k": "reshape()",
        "v": "transpose(1, 0) | cast(float16)",
        "a": "split(-1)[0]",
        "b": "split(-1)[1]",
        "c": "split(-1)[2]",
        "qk": "concat(0)",
        "kv": "concat(-1)",
    }
    text = str(report)
    assert re.search(r"loaded +v +<- ckpt/v/kernel \| transpose\(1, 0\) \| cast\(float16\)", text)
    assert re.search(r"loaded +qk +<- ckpt/q/kernel \+ ckpt/k/kernel \| concat\(0\)", text)
    assert report.to_dict()["transforms"]["a"] == "split(-1)[0]"
    assert re.search(r"loaded +c +<- ckpt/qkv/kernel \| split\(-1\)\[2\]", text)
    assert "ckpt/ids" in report.unused and "ckpt/qkv/kernel" not in report.unused
    routes = {p.target: p.route for p in plan.entries}
    assert routes["c"].index == 2 and routes["c"].targets == ("a", "b", "c")


def test_regex_rules_take_transforms(ckpt):
    rx = re.compile(r"ckpt/(q|k)/kernel")
    plan = plan_restore(ckpt, {"q": SPECS["q"], "k": SPECS["k"]}, {rx: tt.to(r"\1", tt.reshape())})
    assert plan.report.transforms == {"k": "reshape()", "q": "reshape()"}
    rx = re.compile(r"ckpt/(qkv)/kernel")
    plan = plan_restore(
        ckpt,
        {"x_q": SPECS["a"], "x_k": SPECS["a"], "x_v": SPECS["a"]},
        {rx: tt.to([r"x_q", r"x_k", r"x_v"], tt.split(-1))},
    )
    assert sorted(plan.report.loaded) == ["x_k", "x_q", "x_v"]


def test_scope_rules_take_transforms(ckpt):
    plan = plan_restore(
        ckpt,
        {"new/q/kernel": ((6, 6), "float16"), "new/k/kernel": ((6, 6), "float16")},
        {"ckpt/": "new/ | cast(float16)"},
    )
    assert plan.report.transforms == {
        "new/k/kernel": "cast(float16)",
        "new/q/kernel": "cast(float16)",
    }


@pytest.mark.parametrize(
    ("amap", "specs", "error", "parts"),
    [
        (  # output does not fit: the rule, the key and both shapes
            {"ckpt/q/kernel": "q | reshape(4, 9)"},
            {"q": ((6, 6), "float32")},
            CheckpointMismatchError,
            ["rule {'ckpt/q/kernel': 'q | reshape(4, 9)'}", "ckpt/q/kernel", "[6, 6]", "[4, 9]"],
        ),
        (
            {"ckpt/q/kernel": "q | reshape()"},
            {"q": ((5, 7), "float32")},
            AssignmentMapError,
            ["q | reshape()", "ckpt/q/kernel [6, 6]", "q [5, 7]", "36 values", "35 values"],
        ),
        (  # split that does not divide
            {"ckpt/q/kernel": "a, b, c, d | split(-1)"},
            {t: ((6, 1), "float32") for t in "abcd"},
            AssignmentMapError,
            [
                "split(-1) does not divide",
                "ckpt/q/kernel [6, 6]",
                "a [6, 1]",
                "6 is not a multiple of 4",
            ],
        ),
        (  # concat of different dtypes
            {"ckpt/q/kernel + ckpt/ids": "x | concat(0)"},
            {"x": ((12,), "float32")},
            AssignmentMapError,
            ["ckpt/q/kernel + ckpt/ids", "int64", "float32", "ckpt/ids [6]"],
        ),
        (  # concat of different other dims
            {"ckpt/q/kernel + ckpt/qkv/kernel": "x | concat(0)"},
            {"x": ((12, 6), "float32")},
            AssignmentMapError,
            ["all dimensions but axis 0", "ckpt/qkv/kernel [6, 18]", "ckpt/q/kernel [6, 6]"],
        ),
        (  # a concat key that is not in the checkpoint
            {"ckpt/q/kernel + ckpt/nope": "x | concat(0)"},
            {"x": ((12, 6), "float32")},
            AssignmentMapError,
            ["'ckpt/nope' is not in the checkpoint"],
        ),
        (  # dtype that does not fit
            {"ckpt/q/kernel": "q | cast(float16)"},
            {"q": ((6, 6), "float32")},
            CheckpointMismatchError,
            ["cast(float16)", "float16[6, 6]", "float32[6, 6]"],
        ),
        (
            {"ckpt/q/kernel": "q | frobnicate(2)"},
            {"q": ((6, 6), "float32")},
            AssignmentMapError,
            ["rule {'ckpt/q/kernel': 'q | frobnicate(2)'}", "unknown transform 'frobnicate'"],
        ),
    ],
)
def test_plan_errors_name_rule_keys_and_shapes(ckpt, amap, specs, error, parts):
    with pytest.raises(error) as info:
        plan_restore(ckpt, specs, amap)
    for part in parts:
        assert part in str(info.value), (part, str(info.value))


def test_mismatch_policy_applies_to_transformed_targets(ckpt):
    plan = plan_restore(
        ckpt, {"q": ((6, 6), "float32")}, {"ckpt/q/kernel": "q | reshape(4, 9)"}, on_mismatch="warn"
    )
    assert plan.entries == [] and plan.report.mismatched[0].transform == "reshape(4, 9) of [6, 6]"


# -- recipes ----------------------------------------------------------------------------------


@pytest.fixture
def demo_recipe():
    recipe = tt.Recipe(
        name="test-demo",
        rules={"ckpt/q/kernel": "q | reshape(6, 2, 3)", "ckpt/qkv/kernel": "a, b, c | split(-1)"},
        drop=[r"(^|/)adam_[mv]$", r"^global_step$"],
        requires=[r"^ckpt/qkv/kernel$"],
        description="the test checkpoint -> the test targets",
    )
    tt.register(recipe)
    yield recipe
    tt.unregister("test-demo")


def test_recipe_registry(demo_recipe):
    assert tt.get_recipe("test-demo") is demo_recipe
    assert tt.get_recipe(demo_recipe) is demo_recipe
    assert "test-demo" in tt.list_recipes()
    tt.register(demo_recipe)  # the same object again: fine
    with pytest.raises(ValueError, match="registered already"):
        tt.register(tt.Recipe("test-demo", {}))
    with pytest.raises(AssignmentMapError, match="no recipe named 'nope'.*test-demo"):
        tt.get_recipe("nope")
    with pytest.raises(AssignmentMapError, match="not a valid regex"):
        tt.Recipe("bad", {}, drop=["("])
    with pytest.raises(AssignmentMapError, match="either assignment_map or recipe="):
        tt.recipe_map({"a": "b"}, "test-demo")


def test_recipe_drops_with_a_report_line_and_checks_requires(ckpt, demo_recipe):
    specs = {"q": SPECS["q"], "a": SPECS["a"], "b": SPECS["b"], "c": SPECS["c"]}
    report = plan_restore(ckpt, specs, demo_recipe).report
    assert report.dropped == {
        "ckpt/q/kernel/adam_m": "recipe test-demo drops it ((^|/)adam_[mv]$)",
        "global_step": "recipe test-demo drops it (^global_step$)",
    }
    assert "global_step" not in report.unused
    assert "  dropped     global_step" in str(report)
    assert report.summary().endswith("2 dropped")
    wrong = tt.Recipe("bert-ish", {}, requires=[r"^bert/embeddings/word_embeddings$", "^ckpt/"])
    with pytest.raises(CheckpointMismatchError) as info:
        plan_restore(ckpt, specs, wrong)
    message = str(info.value)
    assert "recipe 'bert-ish'" in message and "'^bert/embeddings/word_embeddings$'" in message
    assert "'^ckpt/'" not in message.split("(required)")[0]


def test_a_recipe_through_assignment_map_keeps_it(demo_recipe):
    amap = AssignmentMap(AssignmentMap(demo_recipe))
    assert amap.recipe is demo_recipe
    assert amap.dropped_by("x/adam_v") is not None and amap.dropped_by("x/kernel") is None


# -- migrate (native tf1) ---------------------------------------------------------------------


def test_migrate_tf1_applies_transforms_streaming(ckpt, tmp_path, demo_recipe):
    dst = tmp_path / "out" / "model.ckpt"
    result = migrate(ckpt, dst, recipe="test-demo")
    assert result.transforms == {
        "q": "reshape(6, 2, 3)",
        "a": "split(-1)[0]",
        "b": "split(-1)[1]",
        "c": "split(-1)[2]",
    }
    # One source into three tensors: transformed, not "renamed" (a source -> new table
    # keeps one of three); the counts add up to the tensors written.
    assert result.transformed == {
        "q": "ckpt/q/kernel",
        "a": "ckpt/qkv/kernel",
        "b": "ckpt/qkv/kernel",
        "c": "ckpt/qkv/kernel",
    }
    assert result.renamed == {}
    assert result.counts() == {"renamed": 0, "transformed": 4, "unchanged": 3}
    assert sum(result.counts().values()) == len(result.tensors) == 7
    assert "7 tensors (0 renamed, 4 transformed, 3 unchanged)" in result.summary()
    assert result.excluded["global_step"].startswith("recipe test-demo drops it")
    out = open_checkpoint(dst)
    values = out.read()
    np.testing.assert_array_equal(values["q"], TENSORS["ckpt/q/kernel"].reshape(6, 2, 3))
    np.testing.assert_array_equal(values["c"], TENSORS["ckpt/qkv/kernel"][:, 12:])
    # Keys no rule reads keep their names; the ones the rules read are not copied.
    assert sorted(out.variables) == [
        "a",
        "b",
        "c",
        "ckpt/ids",
        "ckpt/k/kernel",
        "ckpt/v/kernel",
        "q",
    ]


def test_migrate_concat_and_cast(ckpt, tmp_path):
    dst = tmp_path / "out" / "model.ckpt"
    result = migrate(
        ckpt,
        dst,
        {"ckpt/q/kernel + ckpt/k/kernel": "qk | concat(0) | cast(float16)", "global_step": "step"},
    )
    # n -> 1: one tensor from two sources; a plain rename beside it.
    assert result.transformed == {"qk": "ckpt/q/kernel + ckpt/k/kernel"}
    assert result.renamed == {"global_step": "step"}
    assert result.counts() == {"renamed": 1, "transformed": 1, "unchanged": 4}
    assert sum(result.counts().values()) == len(result.tensors)
    values = open_checkpoint(dst).read(["qk"])
    want = np.concatenate([TENSORS["ckpt/q/kernel"], TENSORS["ckpt/k/kernel"]]).astype(np.float16)
    np.testing.assert_array_equal(values["qk"], want)


@pytest.mark.parametrize(
    ("amap", "message"),
    [
        ({"ckpt/q/kernel": "q | reshape()"}, "write the shape, e.g. reshape(768, 12, 64)"),
        ({"ckpt/q/kernel": "a, b, c, d | split(0)"}, "6 is not a multiple of 4"),
        ({"ckpt/q/kernel + ckpt/ids": "x | concat(0)"}, "tensor 2 is int64"),
        ({"ckpt/q/kernel": "q | reshape(5, 5)"}, "cannot reshape [6, 6] (36 values)"),
    ],
)
def test_migrate_bad_transforms_write_nothing(ckpt, tmp_path, amap, message):
    dst = tmp_path / "out" / "model.ckpt"
    with pytest.raises(AssignmentMapError) as info:
        migrate(ckpt, dst, amap)
    assert message in str(info.value)
    assert next(iter(amap)) in str(info.value)  # names the rule
    assert not dst.parent.exists()


def test_migrate_wrong_checkpoint_for_the_recipe_writes_nothing(ckpt, tmp_path):
    dst = tmp_path / "out" / "model.ckpt"
    wrong = tt.Recipe("other", {}, requires=["^resnet_v1_50/"])
    with pytest.raises(CheckpointMismatchError, match="recipe 'other'.*resnet_v1_50"):
        migrate(ckpt, dst, recipe=wrong)
    assert not dst.parent.exists()


# -- map files and the CLI --------------------------------------------------------------------


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_map_file_with_the_string_syntax(ckpt, tmp_path, capsys):
    map_file = tmp_path / "map.json"
    map_file.write_text(
        json.dumps(
            {
                "ckpt/q/kernel": "q | reshape(6, 2, 3)",
                "ckpt/q/kernel + ckpt/k/kernel": "qk | concat(-1)",
                "ckpt/qkv/kernel": "a, b, c | split(-1)",
            }
        )
    )
    assert [k for k, _ in load_map_file(map_file)][1] == "ckpt/q/kernel + ckpt/k/kernel"
    dst = tmp_path / "out" / "model.ckpt"
    rc, out, err = _run(capsys, "migrate", ckpt, dst, "--map-file", map_file)
    assert rc == 0, err
    assert "transform ckpt/q/kernel + ckpt/k/kernel -> qk | concat(-1)" in out
    assert open_checkpoint(dst).variables["qk"].shape == (6, 12)
    rc, out, err = _run(capsys, "plan", ckpt, "--target", dst, "--map-file", map_file)
    assert rc == 0, err
    assert re.search(
        r"loaded\s+qk\s+<- ckpt/q/kernel \+ ckpt/k/kernel \(renamed qk\) \| concat", out
    )


def test_bad_map_file_names_file_and_rule(ckpt, tmp_path, capsys):
    map_file = tmp_path / "map.json"
    map_file.write_text(json.dumps({"ckpt/q/kernel": "q | reshap(6, 2, 3)"}))
    dst = tmp_path / "out" / "model.ckpt"
    rc, _, err = _run(capsys, "migrate", ckpt, dst, "--map-file", map_file)
    assert rc == 1
    assert str(map_file) in err and "unknown transform 'reshap'" in err and "ckpt/q/kernel" in err
    assert not dst.parent.exists()


def test_cli_recipe(ckpt, tmp_path, capsys, demo_recipe):
    dst = tmp_path / "out" / "model.ckpt"
    rc, out, err = _run(capsys, "migrate", ckpt, dst, "--recipe", "test-demo", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["transforms"]["b"] == "split(-1)[1]"
    assert data["transformed"]["b"] == "ckpt/qkv/kernel"
    assert sum(data["counts"].values()) == len(data["tensors"])
    assert "global_step" in data["excluded"]
    rc, out, err = _run(capsys, "plan", ckpt, "--target", dst, "--recipe", "test-demo")
    assert rc == 0, err
    assert re.search(r"loaded\s+b\s+<- ckpt/qkv/kernel \(renamed b\) \| split\(-1\)\[1\]", out)
    assert re.search(r"excluded\s+global_step\s+recipe test-demo drops it", out)
    rc, _, err = _run(capsys, "migrate", ckpt, tmp_path / "o2" / "m", "--recipe", "no-such")
    assert rc == 1 and "no recipe named 'no-such'" in err
    rc, _, err = _run(
        capsys, "migrate", ckpt, tmp_path / "o3" / "m", "--recipe", "test-demo", "--map", "a=b"
    )
    assert rc == 2 and "--recipe is a whole map" in err


def test_string_tensors_take_layout_transforms(tmp_path):
    words = np.array([b"a", b"bc", b"", b"def"], dtype=object)
    prefix = write_checkpoint(tmp_path / "s" / "model.ckpt", {"vocab": words})
    plan = plan_restore(str(prefix), {"v": ((2, 2), "string")}, {"vocab": "v | reshape(2, 2)"})
    assert plan.report.loaded == {"v": "vocab"}
    dst = tmp_path / "out" / "model.ckpt"
    migrate(str(prefix), dst, {"vocab": "a, b | split(0)"})
    values = open_checkpoint(dst).read()
    assert list(values["a"]) == [b"a", b"bc"] and list(values["b"]) == [b"", b"def"]
