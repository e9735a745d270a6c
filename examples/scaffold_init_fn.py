"""The ``gen_init_fn`` pattern with a Scaffold: warm start on the first run, resume after.

TF1 code often builds ``Scaffold(init_fn=gen_init_fn())`` where ``gen_init_fn`` returns a
function that restores a pretrained encoder. Written by hand it usually creates a
``Saver`` inside ``init_fn`` and fails with ``RuntimeError: Graph is finalized and
cannot be modified``. ``scaffold_init_fn`` checks the plan and builds the restore ops
when it is called (while the graph is still open); the ``init_fn`` it returns only runs
them. ``SessionManager`` calls ``init_fn`` only when the run's own directory has no
checkpoint, so the second run resumes and the warm start is skipped.

Run: ``python examples/scaffold_init_fn.py`` (writes only to a temporary directory).
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tf1compat_init import v1 as tv1  # noqa: E402

V1 = tf.compat.v1
V1.logging.set_verbosity(V1.logging.ERROR)  # TF's deprecation notices are not the point here


def encoder(x):
    with V1.variable_scope("encoder"):
        kernel = V1.get_variable("kernel", [4, 3])
        bias = V1.get_variable("bias", [3], initializer=V1.zeros_initializer())
    return tf.nn.relu(tf.matmul(x, kernel) + bias)


def _variable(name):
    (v,) = [v for v in V1.global_variables() if v.op.name == name]
    return v


def pretrain(prefix):
    """Stands in for a pretraining run: an encoder with recognisable values."""
    with tf.Graph().as_default():
        encoder(V1.placeholder(tf.float32, [None, 4]))
        with V1.Session() as sess:
            sess.run(V1.global_variables_initializer())
            sess.run(_variable("encoder/bias").assign([0.5, 0.25, 0.125]))
            return V1.train.Saver().save(sess, prefix)


def gen_init_fn(pretrained):
    # allow_missing: without a pretrained checkpoint, train from scratch (with a warning).
    return tv1.scaffold_init_fn(pretrained, {"encoder/": "encoder/"}, allow_missing=True)


def run(run_dir, pretrained, last_step):
    with tf.Graph().as_default():
        x = V1.placeholder(tf.float32, [None, 4])
        features = encoder(x)
        with V1.variable_scope("head"):
            w = V1.get_variable("w", [3, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - 1.0))
        global_step = V1.train.get_or_create_global_step()
        train_op = V1.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)

        calls = []
        init_fn = gen_init_fn(pretrained)

        def counting_init_fn(scaffold, session):
            calls.append(1)
            init_fn(scaffold, session)

        scaffold = V1.train.Scaffold(init_fn=counting_init_fn if init_fn else None)
        bias = _variable("encoder/bias")
        with V1.train.MonitoredTrainingSession(
            checkpoint_dir=run_dir,
            scaffold=scaffold,
            hooks=[V1.train.StopAtStepHook(last_step=last_step)],
            save_summaries_steps=None,
            log_step_count_steps=None,
            # TF 2.20 with protobuf >= 7 cannot write graph.pbtxt (TF 2.21 can): skip it there.
            save_graph_def=tv1.can_save_graph_def(),
        ) as sess:
            start = sess.run({"step": global_step, "bias": bias})
            batch = np.ones((8, 4), np.float32)
            while not sess.should_stop():
                sess.run(train_op, {x: batch})
    end = tf.train.load_checkpoint(run_dir).get_tensor("encoder/bias")  # saved at the end
    print(
        f"  init_fn called {len(calls)} time(s); started at step {start['step']} with "
        f"encoder/bias = {np.round(start['bias'], 4)}; ended with {np.round(end, 4)}"
    )
    return len(calls), start, end


def main():
    with tempfile.TemporaryDirectory() as tmp:
        pretrained = pretrain(os.path.join(tmp, "pretrained", "model.ckpt"))
        run_dir = os.path.join(tmp, "run")
        print("first run (no checkpoint in the run directory): warm start")
        calls, start, end_1 = run(run_dir, pretrained, last_step=5)
        assert calls == 1 and start["step"] == 0
        np.testing.assert_array_equal(start["bias"], [0.5, 0.25, 0.125])

        print("second run (the run directory has model.ckpt-5): resume, no warm start")
        calls, start, _ = run(run_dir, pretrained, last_step=10)
        assert calls == 0 and start["step"] == 5
        np.testing.assert_array_equal(start["bias"], end_1)

        print("a run without the pretrained checkpoint, allow_missing=True: from scratch")
        calls, start, _ = run(os.path.join(tmp, "run2"), os.path.join(tmp, "absent"), 1)
        assert calls == 0 and not np.array_equal(start["bias"], [0.5, 0.25, 0.125])
    print("\nOK")


if __name__ == "__main__":
    main()
