"""Vocabulary remapping (``VocabInfo``): ours against ``tf.compat.v1.train.warm_start``.

Every case runs TensorFlow's own ``warm_start(var_name_to_vocab_info=...)`` with
``tf.compat.v1.train.VocabInfo`` and ours on the same checkpoint and vocabulary files, in
one process, on both legs (TF 2.15 and 2.21 both ship TF1's warm-start): the graph front
end (:func:`tf1compat_init.v1.warm_start`), the ``remap_vocab`` transform through the
eager engine (``plan_restore`` + ``apply_plan``) and ``migrate``. Rows, order, OOV
buckets, ``old_vocab_size`` truncation, ``axis=1``, partitioned variables, and the backup
initializer's values for the same seed must be identical, bit for bit.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np
import pytest
from support.bundles import write_checkpoint

tf = pytest.importorskip("tensorflow")

from tf1compat_init import (  # noqa: E402
    AssignmentMapError,
    apply_plan,
    open_checkpoint,
    plan_restore,
)
from tf1compat_init import transforms as tt  # noqa: E402
from tf1compat_init import v1 as tv1  # noqa: E402
from tf1compat_init.cli import main  # noqa: E402
from tf1compat_init.migrate import migrate  # noqa: E402
from tf1compat_init.variables import collect_targets  # noqa: E402

V1 = tf.compat.v1
VocabInfo = V1.train.VocabInfo
OLD = ["a", "b", "c", "d", "e", "f"]
NEW = ["e", "x", "a", "f", "y", "b", "z"]
CLASSES_OLD = ["neg", "pos", "mid"]
CLASSES_NEW = ["pos", "new", "neg", "mid2"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("vocab")

    def vocab(name: str, tokens: list[str], end: str = "\n") -> str:
        path = d / name
        path.write_bytes((end.join(tokens) + end).encode())
        return str(path)

    rng = np.random.default_rng(5)
    values = {
        # 8 rows: the old vocabulary's 6 tokens and 2 OOV buckets of the old model.
        "emb": rng.standard_normal((8, 4)).astype(np.float32),
        "logits/kernel": rng.standard_normal((5, 3)).astype(np.float32),
        "wide": rng.standard_normal((6, 1)).astype(np.float32),
    }
    prefix = write_checkpoint(d / "model.ckpt", values)
    return {
        "ckpt": prefix,
        "old": vocab("old.txt", OLD),
        "new": vocab("new.txt", NEW),
        "new_crlf": vocab("new_crlf.txt", NEW, "\r\n"),
        "cold": vocab("classes_old.txt", CLASSES_OLD),
        "cnew": vocab("classes_new.txt", CLASSES_NEW),
        "empty": vocab("empty.txt", [], ""),
        "dup": vocab("dup.txt", ["a", "b", "a"]),
        "long": vocab("long.txt", [*OLD, "g", "h", "i"]),
        "dir": str(d),
    }


def _seeded():
    return V1.random_uniform_initializer(-1.0, 1.0, seed=7)


#: (name, checkpoint key, variable shape, VocabInfo arguments, partitions)
CASES = [
    ("rows, 2 OOV, seeded backup", "emb", (9, 4), dict(nv=7, oov=2, init=_seeded), None),
    ("zeros by default", "emb", (7, 4), dict(nv=7, oov=0), None),
    ("old_vocab_size truncates", "emb", (8, 4), dict(nv=7, oov=1, ovs=3, init=_seeded), None),
    ("new_vocab_size < lines", "emb", (5, 4), dict(nv=4, oov=1, init=_seeded), None),
    ("CRLF vocabulary", "emb", (7, 4), dict(nv=7, oov=0, new="new_crlf"), None),
    ("a linear weight [n, 1]", "wide", (8, 1), dict(nv=7, oov=1, init=_seeded), None),
    (
        "columns (axis=1), OOV",
        "logits/kernel",
        (5, 5),
        dict(nv=4, oov=1, init=_seeded, axis=1, old="cold", new="cnew"),
        None,
    ),
    (
        "axis=1 ignores old_vocab_size, as TF",
        "logits/kernel",
        (5, 4),
        dict(nv=4, oov=0, ovs=1, axis=1, old="cold", new="cnew", init=_seeded),
        None,
    ),
    ("2 partitions", "emb", (9, 4), dict(nv=7, oov=2, init=_seeded), 2),
    ("3 partitions, an OOV-only one", "emb", (9, 4), dict(nv=7, oov=2, init=_seeded), 3),
    (
        "axis=1, partitioned rows",
        "logits/kernel",
        (5, 5),
        dict(nv=4, oov=1, init=_seeded, axis=1, old="cold", new="cnew"),
        2,
    ),
]


def _info(files, a):
    return VocabInfo(
        new_vocab=files[a.get("new", "new")],
        new_vocab_size=a["nv"],
        num_oov_buckets=a["oov"],
        old_vocab=files[a.get("old", "old")],
        old_vocab_size=a.get("ovs", -1),
        backup_initializer=a["init"]() if "init" in a else None,
        axis=a.get("axis", 0),
    )


_TF_VALUES: dict = {}


def _graph_value(warm_start, files, key, shape, args, parts):
    if warm_start is V1.train.warm_start:  # TF's reference, computed once per case
        cache_key = (files["ckpt"], key, shape, repr(sorted(args.items())), parts)
        if cache_key not in _TF_VALUES:
            _TF_VALUES[cache_key] = _run_warm_start(warm_start, files, key, shape, args, parts)
        return _TF_VALUES[cache_key]
    return _run_warm_start(warm_start, files, key, shape, args, parts)


def _run_warm_start(warm_start, files, key, shape, args, parts):
    with tf.Graph().as_default():
        kw = {"partitioner": V1.fixed_size_partitioner(parts)} if parts else {}
        v = V1.get_variable(key, shape, initializer=V1.ones_initializer(), **kw)
        warm_start(files["ckpt"], [key], var_name_to_vocab_info={key: _info(files, args)})
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            return sess.run(v.as_tensor() if parts else v)


def _transform(files, args):
    a = args
    return tt.remap_vocab(
        files[a.get("old", "old")],
        files[a.get("new", "new")],
        axis=a.get("axis", 0),
        num_oov_buckets=a["oov"],
        new_vocab_size=a["nv"],
        old_vocab_size=a.get("ovs", -1),
        backup_initializer=a["init"]() if "init" in a else None,
    )


@pytest.mark.parametrize(
    ("case", "key", "shape", "args", "parts"), CASES, ids=[c[0] for c in CASES]
)
def test_graph_warm_start_equals_tensorflow(files, case, key, shape, args, parts):
    want = _graph_value(V1.train.warm_start, files, key, shape, args, parts)
    got = _graph_value(tv1.warm_start, files, key, shape, args, parts)
    assert got.tobytes() == want.tobytes(), (case, got, want)


@pytest.mark.parametrize(
    ("case", "key", "shape", "args", "parts"), CASES, ids=[c[0] for c in CASES]
)
def test_remap_vocab_transform_equals_tensorflow(files, case, key, shape, args, parts):
    if parts:
        # TF calls the backup initializer once per partition; the transform sees the
        # whole tensor, so it equals TF's unpartitioned variable (checked here).
        want = _graph_value(V1.train.warm_start, files, key, shape, args, None)
    else:
        want = _graph_value(V1.train.warm_start, files, key, shape, args, parts)
    var = tf.Variable(tf.ones(shape), name=key.replace("/", "_"))
    targets = collect_targets([var])
    (name,) = targets
    plan = plan_restore(
        files["ckpt"], targets_specs(targets), {key: tt.to(name, _transform(files, args))}
    )
    assert plan.report.transforms[name].startswith("remap_vocab(")
    apply_plan(plan, targets)
    assert var.numpy().tobytes() == want.tobytes(), case


def targets_specs(targets):
    return {n: (t.shape, t.dtype) for n, t in targets.items()}


def test_migrate_remaps_an_embedding_as_tensorflow(files, tmp_path):
    args = CASES[0][3]
    want = _graph_value(V1.train.warm_start, files, "emb", (9, 4), args, None)
    dst = tmp_path / "out" / "m.ckpt"
    result = migrate(files["ckpt"], dst, {"emb": tt.to("emb", _transform(files, args))})
    assert result.transforms["emb"].startswith("remap_vocab(")
    assert open_checkpoint(dst).read(["emb"])["emb"].tobytes() == want.tobytes()


def test_text_form_in_a_map_file(files, tmp_path, capsys):
    want = _graph_value(V1.train.warm_start, files, "emb", (8, 4), dict(nv=7, oov=1), None)
    rule = f"emb | remap_vocab({files['old']!r}, {files['new']!r}, num_oov_buckets=1)"
    map_file = tmp_path / "map.json"
    map_file.write_text('{"emb": ' + _json_str(rule) + "}")
    dst = tmp_path / "cli" / "m.ckpt"
    assert main(["migrate", files["ckpt"], str(dst), "--map-file", str(map_file)]) == 0
    out = capsys.readouterr().out
    assert "transform emb -> emb | remap_vocab(" in out
    assert open_checkpoint(dst).read(["emb"])["emb"].tobytes() == want.tobytes()
    assert tt.parse_target(rule).steps[0].text == (
        f"remap_vocab({files['old']!r}, {files['new']!r}, num_oov_buckets=1)"
    )


def _json_str(text: str) -> str:
    import json

    return json.dumps(text)


def test_estimator_warm_start_settings_take_vocab_info(files, tmp_path):
    from tf1compat_init import estimator as E

    args = CASES[0][3]
    want = _graph_value(V1.train.warm_start, files, "emb", (9, 4), args, None)
    seen = {}

    def model_fn(features, labels, mode):
        emb = V1.get_variable("emb", (9, 4), initializer=V1.ones_initializer())
        step = V1.train.get_global_step()
        loss = tf.reduce_sum(emb) * 0.0
        seen["emb"] = emb
        return E.EstimatorSpec(mode, loss=loss, train_op=V1.assign_add(step, 1))

    class Grab(V1.train.SessionRunHook):
        def after_create_session(self, session, coord):
            seen["value"] = session.run(seen["emb"])

    settings = E.WarmStartSettings(
        files["ckpt"], "emb", var_name_to_vocab_info={"emb": _info(files, args)}
    )
    est = E.Estimator(model_fn, str(tmp_path / "model"), warm_start_from=settings)
    est.train(lambda: ({"x": tf.zeros([1, 1])}, tf.zeros([1])), steps=1, hooks=[Grab()])
    assert seen["value"].tobytes() == want.tobytes()


# -- bad input: errors at plan time, nothing changed ----------------------------------------


@pytest.mark.parametrize(
    ("args", "shape", "message"),
    [
        (dict(nv=7, oov=0, old="missing"), (7, 4), "missing.txt cannot be read"),
        (dict(nv=7, oov=0, old="empty"), (7, 4), "empty.txt is empty"),
        (dict(nv=9, oov=0), (9, 4), "new_vocab_size is 9, but the new vocabulary file"),
        (dict(nv=7, oov=0, ovs=8), (7, 4), "Invalid vocab_size in .*old.txt: expected 8 but got 6"),
        (dict(nv=7, oov=0, old="long"), (7, 4), "long.txt, 9 tokens\\) is longer than"),
        (dict(nv=7, oov=0, old="dup"), (7, 4), "dup.txt lists 'a' twice"),
        (dict(nv=7, oov=1), (7, 4), "new_vocab_size 7 \\+ num_oov_buckets 1 .* gives \\[8, 4\\]"),
    ],
)
def test_bad_vocab_info_changes_nothing(files, args, shape, message):
    files = dict(files, missing=os.path.join(files["dir"], "missing.txt"))
    with tf.Graph().as_default() as g:
        v = V1.get_variable("emb", shape, initializer=V1.ones_initializer())
        before = v.initializer
        n_ops = len(g.get_operations())
        with pytest.raises(AssignmentMapError, match=message) as e:
            tv1.warm_start(
                files["ckpt"], ["emb"], var_name_to_vocab_info={"emb": _info(files, args)}
            )
        assert "'emb'" in str(e.value)  # the variable (the rule)
        assert v.initializer is before and len(g.get_operations()) == n_ops


def test_vocab_info_for_an_unselected_variable_is_an_error_first(files):
    with tf.Graph().as_default():
        V1.get_variable("emb", (7, 4))
        with pytest.raises(AssignmentMapError, match="var_name_to_vocab_info that were not used"):
            tv1.warm_start(
                files["ckpt"],
                ["emb"],
                var_name_to_vocab_info={"emb2": _info(files, dict(nv=7, oov=0))},
            )


def test_vars_to_warm_start_none_remaps_only_the_vocab_variables(files):
    with tf.Graph().as_default():
        emb = V1.get_variable("emb", (7, 4), initializer=V1.ones_initializer())
        wide = V1.get_variable("wide", (6, 1), initializer=V1.ones_initializer())
        report = tv1.warm_start(
            files["ckpt"], None, var_name_to_vocab_info={"emb": _info(files, dict(nv=7, oov=0))}
        )
        assert list(report.loaded) == ["emb"]
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            assert (sess.run(wide) == 1).all() and not (sess.run(emb) == 1).all()


@pytest.mark.parametrize(
    ("transform", "ckpt_key", "message"),
    [
        (dict(axis=1), "wide_1d", "axis=1 remaps the columns of a 2-D tensor"),
        (dict(old="empty"), "emb", "empty.txt is empty"),
        (dict(old="long"), "emb", "is longer than the checkpoint tensor's axis 0"),
    ],
)
def test_transform_errors_at_plan_time_name_rule_and_file(
    files, tmp_path, transform, ckpt_key, message
):
    prefix = tmp_path / "c" / "m.ckpt"
    zeros = {"emb": np.zeros((8, 4), np.float32), "wide_1d": np.zeros((8,), np.float32)}
    write_checkpoint(prefix, zeros)
    t = tt.remap_vocab(
        files[transform.get("old", "old")], files["new"], axis=transform.get("axis", 0)
    )
    with pytest.raises(AssignmentMapError, match=message) as e:
        plan_restore(str(prefix), {"x": None}, {ckpt_key: tt.to("x", t)})
    assert f"rule {{'{ckpt_key}'" in str(e.value) and "Nothing was changed" in str(e.value)
    dst = tmp_path / "never" / "out.ckpt"
    with pytest.raises(AssignmentMapError, match=message):
        migrate(str(prefix), dst, {ckpt_key: tt.to("x", t)})
    assert not dst.parent.exists()


def test_one_dimensional_rows_in_eager(files, tmp_path):
    # TF's warm_start fails on a 1-D variable (IndexError); the transform remaps it.
    bias = np.arange(6, dtype=np.float32)
    write_checkpoint(tmp_path / "c" / "m.ckpt", {"bias": bias})
    out = tt.run([tt.remap_vocab(files["old"], files["new"], num_oov_buckets=1)], [bias], [None])[0]
    index = {t: i for i, t in enumerate(OLD)}
    want = [bias[index[t]] if t in index else 0.0 for t in NEW] + [0.0]
    np.testing.assert_array_equal(out, np.array(want, np.float32))


def test_remap_vocab_holds_one_copy(files, monkeypatch):
    import tracemalloc

    from tf1compat_init import vocab

    chunk = 64 * 1024  # the gather's temporary: one chunk of rows, whatever the table
    monkeypatch.setattr(vocab, "_CHUNK_BYTES", chunk)
    table = np.random.default_rng(0).standard_normal((6, 20000)).astype(np.float32)
    t = tt.remap_vocab(files["old"], files["new"], num_oov_buckets=2)
    tracemalloc.start()
    tt.run([t], [table], [None])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out_bytes = 9 * 20000 * 4  # the output: the one copy; zeros need no backup array
    row = 20000 * 4
    assert peak < out_bytes + max(chunk, row) + 16 * 1024


def test_text_form_round_trips(files):
    t = tt.remap_vocab(files["old"], files["new"], axis=1, num_oov_buckets=2, new_vocab_size=3)
    (parsed,) = tt.parse_transforms(t.text)
    assert parsed == t
    with pytest.raises(AssignmentMapError, match="The only supported values for the axis"):
        tt.remap_vocab("a", "b", axis=2)
    assert Path(files["old"]).exists()


@pytest.mark.parametrize(
    ("case", "key", "shape", "args", "parts"), CASES, ids=[c[0] for c in CASES]
)
def test_graph_init_from_checkpoint_with_the_transform_equals_tensorflow(
    files, case, key, shape, args, parts
):
    # In a TF1 graph the map's remap_vocab becomes ops between the read and the assign.
    want = _graph_value(V1.train.warm_start, files, key, shape, args, parts)
    with tf.Graph().as_default():
        kw = {"partitioner": V1.fixed_size_partitioner(parts)} if parts else {}
        v = V1.get_variable(key, shape, initializer=V1.ones_initializer(), **kw)
        report = tv1.init_from_checkpoint(files["ckpt"], {key: tt.to(key, _transform(files, args))})
        assert report.transforms[key].startswith("remap_vocab(")
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            got = sess.run(v.as_tensor() if parts else v)
    if parts:  # the transform sees the whole tensor: TF's unpartitioned values
        want = _graph_value(V1.train.warm_start, files, key, shape, args, None)
    assert got.tobytes() == want.tobytes(), (case, got, want)


def test_keras_load_remaps_an_embedding(files):
    from tf1compat_init import keras as tk

    keras = pytest.importorskip("keras")
    args = CASES[0][3]
    want = _graph_value(V1.train.warm_start, files, "emb", (9, 4), args, None)
    model = keras.Sequential(
        [keras.Input((3,), dtype="int32"), keras.layers.Embedding(9, 4, name="words")]
    )
    report = tk.load_checkpoint(
        model, files["ckpt"], {"emb": tt.to("words/embeddings", _transform(files, args))}
    )
    assert report.transforms["words/embeddings"].startswith("remap_vocab(")
    assert model.get_layer("words").get_weights()[0].tobytes() == want.tobytes()


def test_one_dimensional_rows_in_a_graph_map_equal_the_eager_transform(files, tmp_path):
    bias = np.arange(6, dtype=np.float32) + 1
    prefix = write_checkpoint(tmp_path / "c" / "m.ckpt", {"bias": bias})
    t = tt.remap_vocab(files["old"], files["new"], num_oov_buckets=2, backup_initializer=0.5)
    want = tt.run([t], [bias], [None])[0]
    with tf.Graph().as_default():
        v = V1.get_variable("bias", [9], initializer=V1.ones_initializer())
        tv1.init_from_checkpoint(str(prefix), {"bias": tt.to("bias", t)})
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            got = sess.run(v)
    assert got.tobytes() == want.tobytes()


def test_tokens_are_whole_lines_even_with_nul_bytes(tmp_path):
    # numpy's bytes dtype would strip a trailing NUL; such files are compared exactly.
    old, new = tmp_path / "old.txt", tmp_path / "new.txt"
    old.write_bytes(b"a\nb\x00\nc\n")
    new.write_bytes(b"b\x00\na\x00\nc\nb\n")
    table = np.arange(3, dtype=np.float32)
    out = tt.run([tt.remap_vocab(str(old), str(new), backup_initializer=-1.0)], [table], [None])
    np.testing.assert_array_equal(out[0], np.array([1, -1, 2, -1], np.float32))


@pytest.mark.parametrize("new_parts", [None, 2])
def test_partitioned_old_variable(files, tmp_path, new_parts):
    # The checkpoint was saved from a variable partitioned in 3: its key holds slices.
    with tf.Graph().as_default():
        V1.get_variable(
            "emb",
            [8, 4],
            initializer=V1.random_uniform_initializer(seed=1),
            partitioner=V1.fixed_size_partitioner(3),
        )
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            prefix = V1.train.Saver().save(sess, str(tmp_path / "part.ckpt"))
    sliced = dict(files, ckpt=prefix)
    args = CASES[0][3]
    want = _graph_value(V1.train.warm_start, sliced, "emb", (9, 4), args, new_parts)
    got = _graph_value(tv1.warm_start, sliced, "emb", (9, 4), args, new_parts)
    assert got.tobytes() == want.tobytes()
    if new_parts is None:
        table = open_checkpoint(prefix).read(["emb"])["emb"]
        out = tt.run([_transform(files, args)], [table], [None])[0]
        assert out.tobytes() == want.tobytes()


def test_vocabulary_files_at_urls_are_read_through_gfile(files):
    """gs://, s3://, ram://: vocabulary files are read as remote checkpoints are (ram:// here)."""
    remote = dict(files)
    for name in ("old", "new"):
        remote[name] = f"ram://vocab_{uuid.uuid4().hex}/{name}.txt"
        tf.io.gfile.makedirs(remote[name].rsplit("/", 1)[0])
        tf.io.gfile.copy(files[name], remote[name])
    case, key, shape, args, _ = CASES[0]
    want = _graph_value(V1.train.warm_start, files, key, shape, args, None)
    var = tf.Variable(tf.ones(shape), name="remote_emb")
    targets = collect_targets([var])
    (name,) = targets
    plan = plan_restore(
        files["ckpt"], targets_specs(targets), {key: tt.to(name, _transform(remote, args))}
    )
    apply_plan(plan, targets)
    assert var.numpy().tobytes() == want.tobytes(), case
    missing = dict(remote, new=remote["new"] + ".absent")
    with pytest.raises(AssignmentMapError, match=r"absent"):
        plan_restore(
            files["ckpt"], targets_specs(targets), {key: tt.to(name, _transform(missing, args))}
        )
