"""Regex rules and leaf renames in map files: a GPT-2-style fused-QKV migration.

The checkpoint has GPT-2's TF1 layout (``model/h<i>/attn/c_attn/w`` ``[1, H, 3H]``,
``ln_1/g``, ``ln_1/b``, ...); one map file of twelve rules migrates every layer of any
depth, where string keys alone need one rule per tensor. Pure: no TensorFlow.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from support.bundles import write_checkpoint

from tf1compat_init import AssignmentMap, AssignmentMapError, open_checkpoint, plan_restore
from tf1compat_init import transforms as tt
from tf1compat_init.cli import main
from tf1compat_init.migrate import load_map_file, migrate

pytestmark = pytest.mark.pure

H, HEADS, LAYERS, VOCAB, POSITIONS = 32, 2, 2, 50, 16
HD = H // HEADS

#: The README's worked example, as a map file.
GPT2_MAP = {
    "model/wte": "token_embedding/embeddings",
    "model/wpe": "position_embedding/embeddings",
    r"re:model/h(\d+)/attn/c_attn/w": (
        r"layer_\1/attention/query/kernel, layer_\1/attention/key/kernel, "
        rf"layer_\1/attention/value/kernel | split(-1) | reshape({H}, {HEADS}, {HD})"
    ),
    r"re:model/h(\d+)/attn/c_attn/b": (
        r"layer_\1/attention/query/bias, layer_\1/attention/key/bias, "
        rf"layer_\1/attention/value/bias | split(-1) | reshape({HEADS}, {HD})"
    ),
    r"re:model/h(\d+)/attn/c_proj/w": (
        rf"layer_\1/attention/output/kernel | reshape({HEADS}, {HD}, {H})"
    ),
    r"re:model/h(\d+)/attn/c_proj/b": r"layer_\1/attention/output/bias",
    r"re:model/h(\d+)/mlp/c_fc/w": rf"layer_\1/mlp/intermediate/kernel | reshape({H}, {4 * H})",
    r"re:model/h(\d+)/mlp/c_proj/w": rf"layer_\1/mlp/output/kernel | reshape({4 * H}, {H})",
    r"re:model/h(\d+)/mlp/c_fc/b": r"layer_\1/mlp/intermediate/bias",
    r"re:model/h(\d+)/mlp/c_proj/b": r"layer_\1/mlp/output/bias",
    r"re:model/h(\d+)/(ln_[12])/(g|b)": {
        "target": r"layer_\1/\2/\3",
        "leaves": {"g": "gamma", "b": "beta"},
    },
    r"re:model/ln_f/(g|b)": {"target": r"final_norm/\1", "leaves": {"g": "gamma", "b": "beta"}},
}


def _gpt2_tensors() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(2)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    out = {"model/wte": r(VOCAB, H), "model/wpe": r(POSITIONS, H)}
    for i in range(LAYERS):
        p = f"model/h{i}/"
        out |= {
            p + "ln_1/g": r(H),
            p + "ln_1/b": r(H),
            p + "attn/c_attn/w": r(1, H, 3 * H),
            p + "attn/c_attn/b": r(3 * H),
            p + "attn/c_proj/w": r(1, H, H),
            p + "attn/c_proj/b": r(H),
            p + "ln_2/g": r(H),
            p + "ln_2/b": r(H),
            p + "mlp/c_fc/w": r(1, H, 4 * H),
            p + "mlp/c_fc/b": r(4 * H),
            p + "mlp/c_proj/w": r(1, 4 * H, H),
            p + "mlp/c_proj/b": r(H),
        }
    out |= {"model/ln_f/g": r(H), "model/ln_f/b": r(H)}
    return out


TENSORS = _gpt2_tensors()


@pytest.fixture
def gpt2(tmp_path: Path) -> str:
    return write_checkpoint(tmp_path / "gpt2" / "model.ckpt", dict(sorted(TENSORS.items())))


@pytest.fixture
def map_file(tmp_path: Path) -> Path:
    path = tmp_path / "gpt2_map.json"
    path.write_text(json.dumps(GPT2_MAP, indent=1))
    return path


def _check_values(values: dict[str, np.ndarray]) -> None:
    for i in range(LAYERS):
        w = TENSORS[f"model/h{i}/attn/c_attn/w"][0]
        for j, part in enumerate(("query", "key", "value")):  # q, k, v in GPT-2's order
            want = w[:, j * H : (j + 1) * H].reshape(H, HEADS, HD)
            np.testing.assert_array_equal(values[f"layer_{i}/attention/{part}/kernel"], want)
        np.testing.assert_array_equal(
            values[f"layer_{i}/ln_1/gamma"], TENSORS[f"model/h{i}/ln_1/g"]
        )
        np.testing.assert_array_equal(values[f"layer_{i}/ln_2/beta"], TENSORS[f"model/h{i}/ln_2/b"])
        np.testing.assert_array_equal(
            values[f"layer_{i}/mlp/intermediate/bias"], TENSORS[f"model/h{i}/mlp/c_fc/b"]
        )
    np.testing.assert_array_equal(values["final_norm/gamma"], TENSORS["model/ln_f/g"])


def test_gpt2_map_file_migrates_every_layer(gpt2, map_file, tmp_path):
    pairs = load_map_file(map_file)
    assert len(pairs) == 12  # for any number of layers
    dst = tmp_path / "out" / "gpt2.ckpt"
    result = migrate(gpt2, dst, pairs)
    values = open_checkpoint(dst).read()
    assert len(values) == len(TENSORS) + 4 * LAYERS  # c_attn w and b: one key, three tensors
    _check_values(values)
    # Each target names its part of the split; the counts add up to the tensors written.
    assert result.transforms["layer_1/attention/key/kernel"] == (
        f"split(-1)[1] | reshape({H}, {HEADS}, {HD})"
    )
    assert result.transforms["layer_0/attention/value/bias"].startswith("split(-1)[2]")
    assert result.transformed["layer_0/attention/query/kernel"] == "model/h0/attn/c_attn/w"
    counts = result.counts()
    assert sum(counts.values()) == len(result.tensors) == len(values)
    assert counts == {"renamed": 4 + 7 * LAYERS, "transformed": 9 * LAYERS, "unchanged": 0}


def test_gpt2_map_plans_against_targets_with_part_names(gpt2):
    amap = AssignmentMap(GPT2_MAP)  # the same rules in a Python map
    targets = {n: None for _, _, news in amap.rename(sorted(TENSORS)) for n in news}
    report = plan_restore(gpt2, targets, amap).report
    assert report.ok and len(report.loaded) == len(targets) and not report.unused
    text = str(report)
    assert re.search(
        r"layer_0/attention/key/kernel +<- model/h0/attn/c_attn/w \| split\(-1\)\[1\] \| "
        r"reshape\(32, 2, 16\)",
        text,
    )
    assert report.transforms["layer_0/attention/query/kernel"].startswith("split(-1)[0]")
    assert report.loaded["layer_1/ln_1/gamma"] == "model/h1/ln_1/g"


def test_cli_migrate_with_a_regex_map_file(gpt2, map_file, tmp_path, capsys):
    dst = tmp_path / "cli" / "gpt2.ckpt"
    rc = main(["migrate", gpt2, str(dst), "--map-file", str(map_file)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    n = len(TENSORS) + 4 * LAYERS
    assert out.startswith(
        f"wrote {dst} (tf1): {n} tensors ({4 + 7 * LAYERS} renamed, {9 * LAYERS} transformed, "
        f"0 unchanged)"
    )
    assert (
        "transform model/h0/attn/c_attn/w -> layer_0/attention/key/kernel | split(-1)[1] | "
        "reshape(32, 2, 16)" in out
    )
    _check_values(open_checkpoint(dst).read())


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ({"re:model/h(\\d+/ln_1/g": "x"}, r"rule \{'re:model/h\(\\\\d\+/ln_1/g': 'x'\}: regex"),
        ({"re:": "x"}, "the regex after 're:' is empty"),
        ({"model/": {"target": "x/", "leaves": {"g": "gamma"}}}, "leaf renames need a regex key"),
        ({"re:model/(.*)": {"target": "x", "leaf": {}}}, 'an object value is {"target"'),
        ({"re:model/(.*)": {"target": "x", "leaves": {"g/h": "gamma"}}}, "without '/'"),
        ({"re:model/(.*)": 3}, "must map a string to a string"),
    ],
)
def test_bad_map_file_names_rule_and_file_and_writes_nothing(
    gpt2, tmp_path, capsys, rules, message
):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(rules))
    with pytest.raises(AssignmentMapError, match=message) as e:
        load_map_file(path)
    assert str(path) in str(e.value)
    dst = tmp_path / "never" / "out.ckpt"
    rc = main(["migrate", gpt2, str(dst), "--map-file", str(path)])
    _, err = capsys.readouterr()
    assert rc != 0 and str(path) in err
    assert not dst.parent.exists()


def test_regex_that_does_not_compile_names_the_rule():
    with pytest.raises(AssignmentMapError, match=r"regex 'a\(' does not compile: missing \)"):
        AssignmentMap({"re:a(": "b"})


def test_leaves_in_python_maps_and_rename_forward():
    rx = re.compile(r"model/h(\d+)/(ln_\d)/(g|b)")
    amap = AssignmentMap({rx: tt.leaves(r"block_\1/\2/\3", g="gamma", b="beta")})
    keys = ["model/h0/ln_1/g", "model/h0/ln_1/b", "model/h3/ln_2/g"]
    targets = ["block_0/ln_1/gamma", "block_0/ln_1/beta", "block_3/ln_2/gamma"]
    pairs = amap.resolve(keys, targets)
    assert {(p.checkpoint_key, p.target) for p in pairs} == set(zip(keys, targets, strict=True))
    assert [news for _, _, news in amap.rename(keys)] == [(t,) for t in targets]
    assert "(leaves g=gamma, b=beta)" in pairs[0].rule.text
    # A leaf not listed keeps its name.
    assert tt.leaves("x", {"g": "gamma"}).rename("a/ln/w") == "a/ln/w"
    # Leaves with transforms: the renamed targets carry the pipeline.
    amap = AssignmentMap({re.compile(r"m/(q|k)"): tt.leaves("n/\\1 | reshape(2, 3)", q="query")})
    (p,) = [p for p in amap.resolve(["m/q"], ["n/query"]) if p.target == "n/query"]
    assert p.route is not None and p.route.text == "reshape(2, 3)"


def test_re_prefix_is_a_regex_in_python_maps_too():
    amap = AssignmentMap({"re:old/(.*)": r"new/\1"})
    assert [tuple(p[:2]) for p in amap.resolve(["old/a"], ["new/a"])] == [("old/a", "new/a")]
