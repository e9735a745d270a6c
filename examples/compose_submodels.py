"""Compose two pretrained sub-models into one TF1 graph: three ways, done right.

Two sub-models were trained separately. The first saved its variables at the root of
its checkpoint (``fc1/kernel``, ...); the second under ``model/`` (``model/fc1/kernel``).
The new graph holds both, under ``sub_model_1/`` and ``sub_model_2/``, plus a new head.

The assignment-map grammar is ``{checkpoint_key_or_scope: target_scope}``:

1. maps: ``init_from_checkpoint(ckpt_1, {"/": "sub_model_1/"})`` and
   ``init_from_checkpoint(ckpt_2, {"model/": "sub_model_2/"})``;
2. a Saver from a checked plan, for a hand-written Session loop;
3. a hook, for MonitoredTrainingSession: warm start on the first run, resume after.

It also shows what the tutorial's reversed maps get: TensorFlow fails with a confusing
message or silently loads nothing; here the error names the fix.

Run: ``python examples/compose_submodels.py`` (writes only to a temporary directory).
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf1compat_init import AssignmentMapError  # noqa: E402
from tf1compat_init import v1 as tv1  # noqa: E402

V1 = tf.compat.v1
V1.logging.set_verbosity(V1.logging.ERROR)  # TF's deprecation notices are not the point here


def dense(x, units, scope):
    with V1.variable_scope(scope):
        kernel = V1.get_variable("kernel", [x.shape[-1], units])
        bias = V1.get_variable("bias", [units], initializer=V1.zeros_initializer())
    return tf.matmul(x, kernel) + bias


def sub_model(x):
    return dense(tf.nn.relu(dense(x, 8, "fc1")), 2, "fc2")


def pretrain(prefix, scope, seed):
    """Stands in for a real training run: a sub-model with distinct values, saved."""
    with tf.Graph().as_default():
        V1.set_random_seed(seed)
        x = V1.placeholder(tf.float32, [None, 4])
        if scope:
            with V1.variable_scope(scope):
                sub_model(x)
        else:
            sub_model(x)
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            for v in V1.global_variables():  # biases too, so every value is recognisable
                sess.run(v.assign(v + seed))
            return V1.train.Saver().save(sess, prefix)


def build_composite():
    x = V1.placeholder(tf.float32, [None, 4], name="x")
    with V1.variable_scope("sub_model_1"):
        y1 = sub_model(x)
    with V1.variable_scope("sub_model_2"):
        y2 = sub_model(x)
    global_step = V1.train.get_or_create_global_step()
    logits = dense(tf.concat([y1, y2], axis=1), 3, "head")
    loss = tf.reduce_mean(tf.square(logits))
    train_op = V1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step)
    return x, loss, train_op


def expected(ckpt_1, ckpt_2):
    """What each composed variable must hold: target name -> the checkpoint's value."""
    r1, r2 = tf.train.load_checkpoint(ckpt_1), tf.train.load_checkpoint(ckpt_2)
    out = {f"sub_model_1/{k}": r1.get_tensor(k) for k in r1.get_variable_to_shape_map()}
    for k in r2.get_variable_to_shape_map():
        out["sub_model_2/" + k.removeprefix("model/")] = r2.get_tensor(k)
    return out


def check(sess, want):
    values = sess.run({v.op.name: v for v in V1.global_variables() if v.op.name in want})
    assert values.keys() == want.keys(), sorted(set(want) - set(values))
    for name, value in values.items():
        np.testing.assert_array_equal(value, want[name], err_msg=name)
    return len(values)


def method_maps(ckpt_1, ckpt_2, want):
    print("\n1. init_from_checkpoint with maps")
    with tf.Graph().as_default():
        build_composite()
        r1 = tv1.init_from_checkpoint(ckpt_1, {"/": "sub_model_1/"})
        r2 = tv1.init_from_checkpoint(ckpt_2, {"model/": "sub_model_2/"})
        print("  ", r1.summary(), "|", r2.summary())
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())  # the initializers read the checkpoints
            print(f"   {check(sess, want)} variables hold their pretrained values")


def method_saver(ckpt_1, ckpt_2, want):
    print("\n2. Savers from checked plans, in a hand-written Session loop")
    with tf.Graph().as_default():
        build_composite()
        saver_1 = tv1.restore_saver(ckpt_1, {"/": "sub_model_1/"})
        saver_2 = tv1.restore_saver(ckpt_2, {"model/": "sub_model_2/"})
        init_rest = tv1.init_unrestored(saver_1, saver_2)  # the head, global_step, ...
        with V1.Session() as sess:
            sess.run(init_rest)
            saver_1.restore(sess)
            saver_2.restore(sess)
            print(f"   {check(sess, want)} variables restored; the head was initialized")


def method_hook(ckpt_1, ckpt_2, want, run_dir):
    print("\n3. CheckpointInitHook with MonitoredTrainingSession (run twice)")
    for run, last_step in ((1, 3), (2, 6)):
        with tf.Graph().as_default():
            x, loss, train_op = build_composite()
            hooks = [
                tv1.CheckpointInitHook(ckpt_1, {"/": "sub_model_1/"}),
                tv1.CheckpointInitHook(ckpt_2, {"model/": "sub_model_2/"}),
                V1.train.StopAtStepHook(last_step=last_step),
            ]
            with V1.train.MonitoredTrainingSession(
                checkpoint_dir=run_dir,
                hooks=hooks,
                save_summaries_steps=None,
                log_step_count_steps=None,
                # TF 2.20 with protobuf >= 7 cannot write graph.pbtxt (TF 2.21 can): skip it there.
                save_graph_def=tv1.can_save_graph_def(),
            ) as sess:
                start = sess.run({k: v for k, v in _named(want).items()})
                warm = all(np.array_equal(start[k], want[k]) for k in start)
                print(
                    f"   run {run}: starts at step {sess.run(V1.train.get_global_step())}, "
                    f"{'warm-started from the pretrained checkpoints' if warm else 'resumed its own checkpoint'}"
                )
                assert warm == (run == 1)
                batch = np.ones((2, 4), np.float32)
                while not sess.should_stop():
                    sess.run(train_op, {x: batch})


def _named(want):
    return {v.op.name: v for v in V1.global_variables() if v.op.name in want}


def reversed_maps(ckpt_1, ckpt_2):
    print("\nThe tutorial's reversed maps, and what they get here:")
    cases = [
        (ckpt_1, {"sub_model_1/": ""}, "TF: Tensor sub_model_1/ense/bias ... is not found"),
        (ckpt_2, {"sub_model_2/": "model/"}, "TF: silently loads nothing"),
    ]
    for ckpt, amap, tf_does in cases:
        with tf.Graph().as_default():
            build_composite()
            try:
                tv1.init_from_checkpoint(ckpt, amap)
            except AssignmentMapError as e:
                print(f"   {amap}  ({tf_does})\n     AssignmentMapError: {e}")
            else:
                raise AssertionError(f"{amap} should have been refused")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_1 = pretrain(os.path.join(tmp, "sub1", "model.ckpt"), None, seed=1)
        ckpt_2 = pretrain(os.path.join(tmp, "sub2", "model.ckpt"), "model", seed=2)
        print(
            "checkpoint 1 keys:",
            sorted(tf.train.load_checkpoint(ckpt_1).get_variable_to_shape_map()),
        )
        print(
            "checkpoint 2 keys:",
            sorted(tf.train.load_checkpoint(ckpt_2).get_variable_to_shape_map()),
        )
        want = expected(ckpt_1, ckpt_2)
        method_maps(ckpt_1, ckpt_2, want)
        method_saver(ckpt_1, ckpt_2, want)
        method_hook(ckpt_1, ckpt_2, want, os.path.join(tmp, "run"))
        reversed_maps(ckpt_1, ckpt_2)
    print("\nOK")


if __name__ == "__main__":
    main()
