"""tf1compat_init.v1 on real TensorFlow (both legs): graph and eager init, hooks, Scaffold,
warm_start, Saver from a plan, partitions, resource and ref variables."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from support.v1_helpers import Recorder, read_checkpoint, rewrite_latest, save_checkpoint  # noqa: E402

from tf1compat_init import (  # noqa: E402
    AssignmentMapError,
    CheckpointCorruptError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
)
from tf1compat_init import v1 as tv1  # noqa: E402
from tf1compat_init.errors import TargetError  # noqa: E402

V1 = tf.compat.v1
ROOT = Path(__file__).resolve().parents[3]

W = np.array([1.0, 2.0, 3.0], np.float32)
B = np.array([10.0, 20.0], np.float32)
P = np.arange(12, dtype=np.float32).reshape(6, 2)


@pytest.fixture(scope="module")
def pre(tmp_path_factory):
    """A pretrained TF1 checkpoint: two scopes, a partitioned tensor, a step counter."""
    d = tmp_path_factory.mktemp("pretrained")
    return save_checkpoint(
        str(d / "model.ckpt"),
        {
            "pretrained/w": W,
            "pretrained/b": B,
            "p": P,
            "step": np.int64(7),
        },
        partitions={"p": 2},
    )


def _vars(use_resource=True, scope="model", shapes=None):
    shapes = shapes or {"w": [3], "b": [2]}
    with V1.variable_scope(scope):
        return {
            k: V1.get_variable(
                k, s, initializer=V1.constant_initializer(-1.0), use_resource=use_resource
            )
            for k, s in shapes.items()
        }


def _run_init(variables):
    with V1.Session() as sess:
        sess.run(V1.global_variables_initializer())
        return sess.run(variables)


def _restore_ops(graph):
    return [op for op in graph.get_operations() if op.type == "RestoreV2"]


# -- init_from_checkpoint, graph mode ----------------------------------------------------


@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
def test_scope_map_restores_through_initializers(pre, use_resource):
    with tf.Graph().as_default() as g:
        v = _vars(use_resource)
        other = V1.get_variable("other", [1], initializer=V1.constant_initializer(5.0))
        report = tv1.init_from_checkpoint(pre, {"pretrained/": "model/"})
        assert report.loaded == {"model/b": "pretrained/b", "model/w": "pretrained/w"}
        assert report.untouched == ["other"] and not report.applied
        assert len(_restore_ops(g)) == 1  # one batched read, not one per variable
        got = _run_init({**v, "other": other})
    np.testing.assert_array_equal(got["w"], W)
    np.testing.assert_array_equal(got["b"], B)
    np.testing.assert_array_equal(got["other"], [5.0])


@pytest.mark.parametrize("path", ["internal", "public"])
@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
def test_fallback_op_paths(pre, monkeypatch, path, use_resource):
    """Where TF's internals differ, the slower op constructors give the same graph."""
    from tf1compat_init.v1 import _graph as _v1_graph

    init = _v1_graph._OpMaker.__init__

    def without_fast_paths(self, *args):
        init(self, *args)
        self.direct = False
        if path == "public":
            self._internal = None

    monkeypatch.setattr(_v1_graph._OpMaker, "__init__", without_fast_paths)
    with tf.Graph().as_default():
        v = _vars(use_resource)
        with tf.device("/cpu:0"):
            p = V1.get_variable(
                "p", [6, 2], partitioner=V1.fixed_size_partitioner(3), use_resource=use_resource
            )
        tv1.init_from_checkpoint(pre, {"pretrained/": "model/", "p": "p"})
        assert "CPU:0" in list(p)[0].initializer.device
        got = _run_init({**v, "p": p.as_tensor()})
    np.testing.assert_array_equal(got["w"], W)
    np.testing.assert_array_equal(got["p"], P)


def test_tf_variable_and_objects_resolve(pre):
    with tf.Graph().as_default():
        # A tf.Variable is not in the variable store, so TF finds it only as an object;
        # string maps here cover every global variable.
        w = tf.Variable(np.zeros(3, np.float32), name="model/w")
        b = V1.get_variable("bias", [2], initializer=V1.zeros_initializer())
        report = tv1.init_from_checkpoint(pre, {"pretrained/w": "model/w", "pretrained/b": b})
        assert report.loaded == {"model/w": "pretrained/w", "bias": "pretrained/b"}
        got = _run_init([w, b])
    np.testing.assert_array_equal(got[0], W)
    np.testing.assert_array_equal(got[1], B)


def test_initializer_rerun_reloads_and_late_call_waits_for_init(pre):
    with tf.Graph().as_default():
        v = _vars()
        init_before = V1.global_variables_initializer()
        with V1.Session() as sess:
            sess.run(init_before)
            tv1.init_from_checkpoint(pre, {"pretrained/": "model/"})
            # TF's mechanism: nothing changes until an initializer runs again.
            np.testing.assert_array_equal(sess.run(v["w"]), [-1, -1, -1])
            init = V1.global_variables_initializer()
            sess.run(init)
            np.testing.assert_array_equal(sess.run(v["w"]), W)
            sess.run(v["w"].assign([9.0, 9.0, 9.0]))
            sess.run(init)  # re-running the initializer reloads the checkpoint
            np.testing.assert_array_equal(sess.run(v["w"]), W)


@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
@pytest.mark.parametrize("how", ["scope", "name", "parts", "partitioned_variable"])
def test_repartition_2_to_3(pre, use_resource, how):
    with tf.Graph().as_default():
        p = V1.get_variable(
            "new/p",
            [6, 2],
            initializer=V1.zeros_initializer(),
            partitioner=V1.fixed_size_partitioner(3),
            use_resource=use_resource,
        )
        assert len(list(p)) == 3
        amap = {
            "scope": {"/": "new/"},
            "name": {"p": "new/p"},
            "parts": {"p": list(p)},
            # TF: TypeError: unsupported operand type(s) for +: 'PartitionedVariable' and 'str'
            "partitioned_variable": {"p": p},
        }[how]
        on_missing = "ignore" if how == "scope" else "error"  # new/step is not in the ckpt
        V1.get_variable("new/step", [], tf.int64, initializer=V1.zeros_initializer())
        report = tv1.init_from_checkpoint(pre, amap, on_missing=on_missing)
        assert report.loaded["new/p"] == "p"
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(p.as_tensor()), P)
            np.testing.assert_array_equal(sess.run(list(p)[1]), P[2:4])


@pytest.mark.parametrize("parts", [[1], [0, 2]], ids=["one", "two_of_three"])
def test_map_naming_some_partitions_is_refused(pre, parts):
    # The map names only some partitions of new/p: the target is those parts alone,
    # which do not tile it, even though the graph's collection holds all three.
    with tf.Graph().as_default():
        p = list(V1.get_variable("new/p", [6, 2], partitioner=V1.fixed_size_partitioner(3)))
        value = p[parts[0]] if len(parts) == 1 else [p[i] for i in parts]
        with pytest.raises(TargetError, match="do not tile its full shape"):
            tv1.init_from_checkpoint(pre, {"p": value})


@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
def test_variable_of_unknown_shape(pre, use_resource):
    with tf.Graph().as_default():
        init = V1.placeholder_with_default(tf.zeros([3]), shape=None)
        w = V1.Variable(init, name="w", validate_shape=False, use_resource=use_resource)
        assert w.shape.rank is None
        report = tv1.init_from_checkpoint(pre, {"pretrained/w": "w"})
        assert report.loaded == {"w": "pretrained/w"}
        np.testing.assert_array_equal(_run_init(w), W)


def test_values_are_not_embedded_as_constants(tmp_path):
    big = np.full((512, 512), 3.0, np.float32)  # 1 MiB
    prefix = save_checkpoint(str(tmp_path / "big.ckpt"), {"big": big})
    with tf.Graph().as_default() as g:
        v = V1.get_variable("big", [512, 512], initializer=V1.zeros_initializer())
        before = g.as_graph_def().ByteSize()
        tv1.init_from_checkpoint(prefix, {"/": "/"})
        added = g.as_graph_def().ByteSize() - before
        assert added < 4096, f"the graph grew by {added} bytes"
        consts = [op for op in g.get_operations() if op.type == "Const"]
        assert all(op.get_attr("value").ByteSize() < 1024 for op in consts)
        np.testing.assert_array_equal(_run_init(v), big)


def test_failing_read_assigns_nothing(tmp_path):
    prefix = save_checkpoint(
        str(tmp_path / "m.ckpt"),
        {"a": np.full(64, 1.0, np.float32), "z": np.full(64, 2.0, np.float32)},
    )
    with tf.Graph().as_default():
        a = V1.get_variable("a", [64], initializer=V1.constant_initializer(-1.0))
        z = V1.get_variable("z", [64], initializer=V1.constant_initializer(-1.0))
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            tv1.init_from_checkpoint(prefix, {"/": "/"})  # planned while the data is intact
            data = prefix + ".data-00000-of-00001"
            raw = bytearray(Path(data).read_bytes())
            at = bytes(raw).index(np.full(64, 2.0, np.float32).tobytes())
            raw[at + 8] ^= 0xFF  # corrupt "z" only: its checksum no longer matches
            Path(data).write_bytes(bytes(raw))
            with pytest.raises(tf.errors.DataLossError):
                sess.run([a.initializer, z.initializer])
            # One restore op feeds every assign: "a" was readable but is not assigned either.
            np.testing.assert_array_equal(sess.run(a), np.full(64, -1.0))
            np.testing.assert_array_equal(sess.run(z), np.full(64, -1.0))


def test_big_restores_read_in_parallel_ops_and_still_assign_all_or_nothing(tmp_path, monkeypatch):
    """A big restore is read by one RestoreV2 op per reader thread, balanced by bytes,
    each tensor once; every assign waits for every read, so a bad checksum in one op
    leaves the variables fed by the others unassigned too."""
    from tf1compat_init.v1 import _graph as _v1_graph

    monkeypatch.setattr(_v1_graph, "RESTORE_OP_BYTES", 1024)
    monkeypatch.setattr(_v1_graph, "default_threads", lambda: 3)
    sizes = {"a": 1024, "b": 256, "c": 256, "d": 128, "e": 64, "f": 64}  # floats
    values = {k: np.arange(n, dtype=np.float32) + i for i, (k, n) in enumerate(sizes.items())}
    prefix = save_checkpoint(str(tmp_path / "m.ckpt"), values)
    with tf.Graph().as_default() as g:
        v = {
            k: V1.get_variable(k, [n], initializer=V1.constant_initializer(-1.0))
            for k, n in sizes.items()
        }
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            tv1.init_from_checkpoint(prefix, {"/": "/"})
            ops = _restore_ops(g)
            read = [sess.run(op.inputs[1]).astype(str).tolist() for op in ops]  # names
            assert len(ops) == 3
            assert sorted(k for names in read for k in names) == sorted(sizes)
            assert ["a"] in read  # the biggest alone; the others share the rest
            sess.run([x.initializer for x in v.values()])
            got = sess.run(v)
            for k in sizes:
                np.testing.assert_array_equal(got[k], values[k])
            for x in v.values():  # back to -1 before the failing run
                x.load(np.full(x.shape, -1.0, np.float32), sess)
            data = prefix + ".data-00000-of-00001"
            raw = bytearray(Path(data).read_bytes())
            at = bytes(raw).index(values["a"].tobytes())
            raw[at + 8] ^= 0xFF  # corrupt "a" only: the op reading it fails
            Path(data).write_bytes(bytes(raw))
            with pytest.raises(tf.errors.DataLossError):
                sess.run(v["e"].initializer)  # "e" is read by another op, and intact
            for k, x in v.items():
                np.testing.assert_array_equal(sess.run(x), np.full(sizes[k], -1.0), k)


def test_a_partitions_read_counts_its_slice_when_reads_are_split(tmp_path, monkeypatch):
    """Three partitions of a 4 KiB tensor read 4 KiB, not three times the whole tensor:
    with 2 KiB per op that makes 2 ops (12 KiB would have made 3); values exact."""
    from tf1compat_init.v1 import _graph as _v1_graph

    monkeypatch.setattr(_v1_graph, "RESTORE_OP_BYTES", 2048)
    monkeypatch.setattr(_v1_graph, "default_threads", lambda: 3)
    value = np.arange(1024, dtype=np.float32).reshape(512, 2)
    prefix = save_checkpoint(str(tmp_path / "p.ckpt"), {"p": value})
    with tf.Graph().as_default() as g:
        parts = list(V1.get_variable("p", [512, 2], partitioner=V1.fixed_size_partitioner(3)))
        tv1.init_from_checkpoint(prefix, {"/": "/"})
        assert len(_restore_ops(g)) == 2
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            got = sess.run(parts)
    np.testing.assert_array_equal(np.concatenate(got), value)


def test_small_restores_use_one_restore_op(tmp_path):
    values = {f"t{i}": np.full(16, float(i), np.float32) for i in range(20)}
    prefix = save_checkpoint(str(tmp_path / "s.ckpt"), values)
    with tf.Graph().as_default() as g:
        v = {k: V1.get_variable(k, [16], initializer=V1.zeros_initializer()) for k in values}
        tv1.init_from_checkpoint(prefix, {"/": "/"})
        assert len(_restore_ops(g)) == 1  # below RESTORE_OP_BYTES: one op, cheap to build
        got = _run_init(v)
    for k in values:
        np.testing.assert_array_equal(got[k], values[k])


def test_verify_true_finds_corrupt_data_at_call_time(tmp_path):
    prefix = save_checkpoint(
        str(tmp_path / "m.ckpt"),
        {"a": np.full(64, 1.0, np.float32), "z": np.full(64, 2.0, np.float32)},
    )
    data = Path(prefix + ".data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    raw[bytes(raw).index(np.full(64, 2.0, np.float32).tobytes()) + 8] ^= 0xFF
    data.write_bytes(bytes(raw))
    with tf.Graph().as_default() as g:
        V1.get_variable("a", [64])
        V1.get_variable("z", [64])
        n_ops = len(g.get_operations())
        with pytest.raises(CheckpointCorruptError, match="'z'"):
            tv1.init_from_checkpoint(prefix, {"/": "/"}, verify=True)
        assert len(g.get_operations()) == n_ops
        with pytest.raises(TypeError, match="verify"):
            tv1.init_from_checkpoint(prefix, {"/": "/"}, verify="yes")
        tv1.init_from_checkpoint(prefix, {"/": "/"})  # by default only the index is read


def test_errors_change_nothing(pre):
    with tf.Graph().as_default() as g:
        v = _vars()
        w64 = V1.get_variable("model64/w", [3], tf.float64)
        initializers = {name: var.initializer for name, var in {**v, "w64": w64}.items()}
        n_ops = len(g.get_operations())
        with pytest.raises(CheckpointMismatchError, match="dtype float64 vs checkpoint float32"):
            tv1.init_from_checkpoint(pre, {"pretrained/": "model64/"})
        with pytest.raises(AssignmentMapError, match="did you mean {'pretrained/': 'model/'}"):
            tv1.init_from_checkpoint(pre, {"model/": "pretrained/"})
        with pytest.raises(AssignmentMapError, match="empty string"):
            tv1.init_from_checkpoint(pre, {"pretrained/": ""})
        with pytest.raises(CheckpointNotFoundError, match="got None"):
            tv1.init_from_checkpoint(None, {"/": "/"})
        with pytest.raises(CheckpointNotFoundError, match="does not exist"):
            tv1.init_from_checkpoint(pre + "-nope", {"/": "/"})
        with pytest.raises(TypeError, match="on_mising"):
            tv1.init_from_checkpoint(pre, None, on_mising="warn")
        with pytest.raises(ValueError, match="Received: on_missing='skip'"):
            tv1.init_from_checkpoint(pre, None, on_missing="skip")
        assert len(g.get_operations()) == n_ops
        assert {n: x.initializer for n, x in {**v, "w64": w64}.items()} == initializers


def test_shape_mismatch_in_scope_form_is_caught(pre):
    with tf.Graph().as_default():
        _vars(shapes={"w": [4], "b": [2]})
        # TF loads a [3] value into a [4] resource variable silently here.
        with pytest.raises(CheckpointMismatchError, match=r"shape \[4\] vs checkpoint \[3\]"):
            tv1.init_from_checkpoint(pre, {"pretrained/": "model/"})
        report = tv1.init_from_checkpoint(pre, {"pretrained/": "model/"}, on_mismatch="warn")
        assert list(report.loaded) == ["model/b"]


def test_missing_key_policy(pre, caplog):
    with tf.Graph().as_default():
        v = _vars(shapes={"w": [3], "extra": [2]})
        with pytest.raises(CheckpointMismatchError, match="model/extra <- pretrained/extra"):
            tv1.init_from_checkpoint(pre, {"pretrained/": "model/"})
        with caplog.at_level(logging.WARNING):
            report = tv1.init_from_checkpoint(pre, {"pretrained/": "model/"}, on_missing="warn")
        assert "model/extra" in caplog.text and report.missing == {
            "model/extra": "pretrained/extra"
        }
        got = _run_init(v)
    np.testing.assert_array_equal(got["w"], W)
    np.testing.assert_array_equal(got["extra"], [-1, -1])


def test_identity_map_none_and_optional_global_step(pre):
    with tf.Graph().as_default():
        gs = V1.train.get_or_create_global_step()
        w = V1.get_variable("pretrained/w", [3])
        report = tv1.init_from_checkpoint(pre)  # None: same names; global_step is optional
        assert report.loaded == {"pretrained/w": "pretrained/w"}
        assert report.optional == ["global_step"]
        got = _run_init([w, gs])
    np.testing.assert_array_equal(got[0], W)
    assert got[1] == 0


def test_ops_ignore_user_device_and_control_scopes(pre):
    with tf.Graph().as_default() as g:
        v = _vars()
        marker = tf.no_op(name="marker")
        with tf.device("/job:nowhere/task:3"), g.control_dependencies([marker]):
            tv1.init_from_checkpoint(pre, {"pretrained/": "model/"})
        (restore,) = _restore_ops(g)
        assert "nowhere" not in restore.device and "CPU:0" in restore.device
        assert not restore.control_inputs
        np.testing.assert_array_equal(_run_init(v)["w"], W)


def test_inside_tf_function_is_refused(pre):
    @tf.function
    def f():
        tv1.init_from_checkpoint(pre, {"/": "/"})
        return 0

    with pytest.raises(RuntimeError, match="tf.function"):
        f()


# -- eager mode --------------------------------------------------------------------------


def test_eager_objects_names_and_clear_error(pre):
    assert tf.executing_eagerly()
    w = tf.Variable(np.zeros(3, np.float32), name="w")
    b = tf.Variable(np.zeros(2, np.float32), name="enc/b")
    report = tv1.init_from_checkpoint(pre, {"pretrained/w": w})
    assert report.applied and report.loaded == {"w": "pretrained/w"}
    np.testing.assert_array_equal(w.numpy(), W)
    report = tv1.init_from_checkpoint(pre, {"pretrained/": "enc/"}, var_list=[w, b])
    np.testing.assert_array_equal(b.numpy(), B)
    # TF silently loads nothing for a string map in eager mode.
    with pytest.raises(AssignmentMapError, match="eager mode.*var_list="):
        tv1.init_from_checkpoint(pre, {"pretrained/": "enc/"})
    with pytest.raises(AssignmentMapError, match="names resolve only against var_list"):
        tv1.init_from_checkpoint(pre, {"pretrained/": "dec/"}, var_list=[b])
    with pytest.raises(RuntimeError, match="eager mode"):
        tv1.warm_start(pre)


# -- CheckpointInitHook with MonitoredTrainingSession --------------------------------------


def _model(use_resource=True):
    gs = V1.train.get_or_create_global_step()
    v = _vars(use_resource)
    loss = tf.reduce_sum(v["w"]) + tf.reduce_sum(v["b"])
    train_op = tf.group(V1.assign_add(v["w"], [0.5, 0.5, 0.5]), V1.assign_add(gs, 1))
    return gs, v, loss, train_op


def _train(run_dir, last_step, hook=None, use_resource=True, init_fn=None):
    """One MonitoredTrainingSession run with the stock hooks; returns what it saw at start.

    ``init_fn`` is a factory called inside the run's graph (as a Scaffold is built).
    """
    with tf.Graph().as_default():
        gs, v, loss, train_op = _model(use_resource)
        recorder = Recorder({"w": v["w"], "b": v["b"], "step": gs})
        hooks = [
            V1.train.LoggingTensorHook({"loss": loss}, every_n_iter=1),
            V1.train.StopAtStepHook(last_step=last_step),
            recorder,
        ]
        if hook is not None:
            hooks.insert(0, hook)
        scaffold = V1.train.Scaffold(init_fn=init_fn()) if init_fn else None
        with V1.train.MonitoredTrainingSession(
            checkpoint_dir=str(run_dir),
            scaffold=scaffold,
            hooks=hooks,
            # TensorFlow's hook, except on TF 2.20 + protobuf 7 where it cannot save its graph.
            chief_only_hooks=[tv1.CheckpointSaverHook(str(run_dir), save_steps=1)],
            save_checkpoint_steps=None,
            save_checkpoint_secs=None,
            save_summaries_steps=None,
            save_summaries_secs=None,
            log_step_count_steps=None,
        ) as sess:
            while not sess.should_stop():
                sess.run(train_op)
    return recorder.seen


@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
def test_hook_warm_starts_first_run_and_resume_wins(pre, tmp_path, use_resource):
    hook = tv1.CheckpointInitHook(pre, {"pretrained/": "model/"})
    seen = _train(tmp_path, 2, hook, use_resource)
    np.testing.assert_array_equal(seen[0]["w"], W)
    np.testing.assert_array_equal(seen[0]["b"], B)
    assert hook.report.loaded == {"model/b": "pretrained/b", "model/w": "pretrained/w"}
    # The first checkpoint already holds the warm-started values (TF's recipes do not).
    ckpt0 = read_checkpoint(str(tmp_path / "model.ckpt-0"))
    np.testing.assert_array_equal(ckpt0["model/w"], W)
    np.testing.assert_array_equal(ckpt0["model/b"], B)
    np.testing.assert_array_equal(read_checkpoint(str(tmp_path / "model.ckpt-2"))["model/w"], W + 1)

    rewrite_latest(str(tmp_path), {"model/b": [7.0, 8.0]})  # only the run's ckpt has this
    hook2 = tv1.CheckpointInitHook(pre, {"pretrained/": "model/"})
    seen = _train(tmp_path, 4, hook2, use_resource)
    assert seen[0]["step"] == 2
    np.testing.assert_array_equal(seen[0]["b"], [7.0, 8.0])
    np.testing.assert_array_equal(seen[0]["w"], W + 1)
    final = read_checkpoint(str(tmp_path / "model.ckpt-4"))
    np.testing.assert_array_equal(final["model/b"], [7.0, 8.0])
    np.testing.assert_array_equal(final["model/w"], W + 2)


def test_hook_missing_checkpoint(tmp_path, caplog):
    with pytest.raises(CheckpointNotFoundError, match="allow_missing=True"):
        _train(tmp_path / "a", 1, tv1.CheckpointInitHook(None, {"pretrained/": "model/"}))
    hook = tv1.CheckpointInitHook(str(tmp_path / "empty"), allow_missing=True)
    os.makedirs(tmp_path / "empty")
    with caplog.at_level(logging.WARNING):
        seen = _train(tmp_path / "b", 1, hook)
    assert hook.report is None and "no pretrained checkpoint" in caplog.text
    np.testing.assert_array_equal(seen[0]["w"], [-1, -1, -1])


def test_hook_checks_arguments_at_construction():
    with pytest.raises(AssignmentMapError, match="string"):
        tv1.CheckpointInitHook("x", "model/")
    with pytest.raises(ValueError, match="on_conflict"):
        tv1.CheckpointInitHook("x", on_conflict="first")


def test_hook_with_broken_state_file_is_an_error_even_with_allow_missing(pre, tmp_path):
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "gone.ckpt-5"\n')
    hook = tv1.CheckpointInitHook(str(tmp_path), allow_missing=True)
    with tf.Graph().as_default():
        _vars()
        with pytest.raises(CheckpointNotFoundError, match="was the checkpoint deleted"):
            hook.begin()


# -- scaffold_init_fn --------------------------------------------------------------------


def test_scaffold_init_fn_first_run_then_resume(pre, tmp_path):
    calls = []

    def make_init_fn():
        init_fn = tv1.scaffold_init_fn(pre, {"pretrained/": "model/"})

        def counted(scaffold, session):
            calls.append(1)
            init_fn(scaffold, session)

        return counted

    seen = _train(tmp_path, 1, init_fn=make_init_fn)
    assert len(calls) == 1
    np.testing.assert_array_equal(seen[0]["w"], W)
    np.testing.assert_array_equal(read_checkpoint(str(tmp_path / "model.ckpt-0"))["model/b"], B)
    rewrite_latest(str(tmp_path), {"model/b": [5.0, 5.0]})
    seen = _train(tmp_path, 2, init_fn=make_init_fn)
    assert len(calls) == 1  # SessionManager skipped init_fn: the run resumed
    np.testing.assert_array_equal(seen[0]["b"], [5.0, 5.0])
    np.testing.assert_array_equal(seen[0]["w"], W + 0.5)


def test_scaffold_init_fn_allow_missing_and_finalized_graph(pre, tmp_path, caplog):
    with tf.Graph().as_default() as g:
        _vars()
        with caplog.at_level(logging.WARNING):
            assert tv1.scaffold_init_fn(None, allow_missing=True) is None
        assert "allow_missing=True" in caplog.text
        fn = tv1.scaffold_init_fn(pre, {"pretrained/": "model/"})
        assert fn.report.loaded and not fn.report.applied
        g.finalize()
        with pytest.raises(RuntimeError, match="before MonitoredTrainingSession"):
            tv1.scaffold_init_fn(pre, {"pretrained/": "model/"})


@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
def test_scaffold_init_fn_repartitions(pre, use_resource):
    with tf.Graph().as_default():
        q = V1.get_variable(
            "q",
            [6, 2],
            initializer=V1.zeros_initializer(),
            partitioner=V1.fixed_size_partitioner(3),
            use_resource=use_resource,
        )
        init_fn = tv1.scaffold_init_fn(pre, {"p": q})
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(q.as_tensor()), np.zeros((6, 2)))
            init_fn(None, sess)
            np.testing.assert_array_equal(sess.run(q.as_tensor()), P)
            assert init_fn.report.applied


# -- restore_saver / init_unrestored -----------------------------------------------------


@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
def test_restore_saver_and_init_unrestored(pre, use_resource):
    with tf.Graph().as_default():
        v = _vars(use_resource)
        p = V1.get_variable(
            "q",
            [6, 2],
            initializer=V1.zeros_initializer(),
            partitioner=V1.fixed_size_partitioner(3),
            use_resource=use_resource,
        )
        other = V1.get_variable("other", [1], initializer=V1.constant_initializer(4.0))
        saver_a = tv1.restore_saver(pre, {"pretrained/": "model/"})
        saver_b = tv1.restore_saver(pre, {"p": "q"})
        assert isinstance(saver_a, V1.train.Saver)
        assert saver_a.report.loaded == {"model/b": "pretrained/b", "model/w": "pretrained/w"}
        init_rest = tv1.init_unrestored(saver_a, saver_b)
        with V1.Session() as sess:
            sess.run(init_rest)
            uninit = {x.decode() for x in sess.run(V1.report_uninitialized_variables())}
            assert uninit == {"model/w", "model/b", "q/part_0", "q/part_1", "q/part_2"}
            saver_a.restore(sess)
            saver_b.restore(sess)
            assert saver_a.report.applied
            np.testing.assert_array_equal(sess.run(v["w"]), W)
            np.testing.assert_array_equal(sess.run(p.as_tensor()), P)
            np.testing.assert_array_equal(sess.run(other), [4.0])


def test_restore_saver_refuses_one_key_into_two_variables(pre):
    with tf.Graph().as_default():
        a = V1.get_variable("a", [3])
        b = V1.get_variable("b", [3])
        with pytest.raises(AssignmentMapError, match="loads into two variables"):
            tv1.restore_saver(pre, [("pretrained/w", a), ("pretrained/w", b)])
        # init_from_checkpoint does it, with one read.
        tv1.init_from_checkpoint(pre, [("pretrained/w", a), ("pretrained/w", b)])
        got = _run_init([a, b])
    np.testing.assert_array_equal(got[0], W)
    np.testing.assert_array_equal(got[1], W)


# -- warm_start: against TF where TF succeeds -------------------------------------------


def _ws_graph(use_resource, call):
    """The same graph each time, deterministic initial values; returns what ``call`` loads."""
    with tf.Graph().as_default():
        for name in ("pretrained/w", "alt/w"):
            V1.get_variable(
                name,
                [3],
                initializer=V1.constant_initializer(-1.0),
                trainable=name != "alt/w",
                use_resource=use_resource,
            )
        V1.get_variable(
            "pretrained/b", [2], initializer=V1.ones_initializer(), use_resource=use_resource
        )
        V1.get_variable(
            "step", [], tf.int64, V1.zeros_initializer(), trainable=False, use_resource=use_resource
        )
        V1.get_variable(
            "p",
            [6, 2],
            initializer=V1.zeros_initializer(),
            partitioner=V1.fixed_size_partitioner(3),
            use_resource=use_resource,
        )
        call()
        with V1.Session() as sess:
            sess.run(V1.initializers.variables(V1.global_variables()))
            return {v.op.name: sess.run(v) for v in V1.global_variables()}


def _objects():
    return [v for v in V1.global_variables() if v.op.name == "pretrained/b" or "part_" in v.name]


WS_CASES = {
    "default": lambda: ((".*",), {}),
    "prefix_regex": lambda: (("pretrained/",), {}),
    "none": lambda: ((None,), {}),
    "list_of_strings": lambda: ((["pretrained/w", "p/", "step"],), {}),
    "renames": lambda: (
        (["alt/w", "pretrained/b"],),
        {"var_name_to_prev_var_name": {"alt/w": "pretrained/w"}},
    ),
    "variables": lambda: ((_objects(),), {}),
}


@pytest.mark.parametrize("use_resource", [True, False], ids=["resource", "ref"])
@pytest.mark.parametrize("case", list(WS_CASES))
def test_warm_start_matches_tensorflow(pre, case, use_resource):
    def run(fn):
        def call():
            args, kwargs = WS_CASES[case]()
            fn(pre, *args, **kwargs)

        return _ws_graph(use_resource, call)

    theirs = run(V1.train.warm_start)
    ours = run(tv1.warm_start)
    assert theirs.keys() == ours.keys()
    for k in theirs:
        np.testing.assert_array_equal(ours[k], theirs[k], err_msg=k)


def test_warm_start_from_object_based_checkpoint_matches_tensorflow(tmp_path):
    # TF maps each variable name to its object-graph key (``.ATTRIBUTES/VARIABLE_VALUE``).
    module = tf.Module()
    module.w = tf.Variable(W, name="pretrained/w")
    module.b = tf.Variable(B, name="pretrained/b")
    prefix = tf.train.Checkpoint(model=module).write(str(tmp_path / "obj"))

    def run(fn):
        with tf.Graph().as_default():
            w = V1.get_variable("pretrained/w", [3], initializer=V1.zeros_initializer())
            b = V1.get_variable("pretrained/b", [2], initializer=V1.zeros_initializer())
            fn(prefix, ".*")
            return _run_init([w, b])

    theirs, ours = run(V1.train.warm_start), run(tv1.warm_start)
    for t, o in zip(theirs, ours, strict=True):
        np.testing.assert_array_equal(o, t)
    np.testing.assert_array_equal(ours[0], W)


def test_warm_start_one_partition_is_refused_before_any_change(pre):
    # TF: ValueError: Shape of variable p/part_1:0 ((2, 2)) doesn't match ... ([6, 2])
    with tf.Graph().as_default():
        p = V1.get_variable("p", [6, 2], partitioner=V1.fixed_size_partitioner(3))
        initializers = [v.initializer for v in p]
        with pytest.raises(TargetError, match="do not tile its full shape"):
            tv1.warm_start(pre, ["p/part_1"])
        assert [v.initializer for v in p] == initializers


def test_warm_start_checks_before_changing_anything(pre):
    with tf.Graph().as_default() as g:
        _vars(scope="pretrained")
        initializers = [v.initializer for v in V1.global_variables()]
        n_ops = len(g.get_operations())
        # TF: "kernel" silently matches nothing (re.match is anchored at the start).
        with pytest.raises(
            AssignmentMapError, match=r"'kernel' matches no trainable.*'\.\*kernel'"
        ):
            tv1.warm_start(pre, "kernel")
        # TF raises this only after replacing the initializers.
        with pytest.raises(AssignmentMapError, match="Perhaps you misspelled them"):
            tv1.warm_start(pre, ".*", var_name_to_prev_var_name={"pretrained/ww": "pretrained/w"})
        with pytest.raises(AssignmentMapError, match="not a valid regex"):
            tv1.warm_start(pre, ["pretrained/w("])
        with pytest.raises(TypeError, match="vars_to_warm_start"):
            tv1.warm_start(pre, 3)
        assert len(g.get_operations()) == n_ops
        assert [v.initializer for v in V1.global_variables()] == initializers
        report = tv1.warm_start(pre, None)
        assert not report.loaded


def test_warm_start_optional_training_state(pre):
    with tf.Graph().as_default():
        gs = V1.train.get_or_create_global_step()
        v = _vars(scope="pretrained")
        report = tv1.warm_start(pre, [".*"])  # global variables: global_step included
        assert report.optional == ["global_step"] and report.missing == {
            "global_step": "global_step"
        }
        got = _run_init([v["w"], gs])
    np.testing.assert_array_equal(got[0], W)


# -- examples ----------------------------------------------------------------------------


def _example_env():
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


@pytest.mark.parametrize(
    "name", ["compose_submodels.py", "scaffold_init_fn.py", "estimator_hooks.py"]
)
def test_examples_run(name):
    if name == "estimator_hooks.py" and not hasattr(tf, "estimator"):
        pytest.importorskip("tf1compat_init.estimator", exc_type=ImportError)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_example_env(),
        cwd=str(ROOT),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert re.search(r"\bOK\b", proc.stdout), proc.stdout[-2000:]
