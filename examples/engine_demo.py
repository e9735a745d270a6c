"""The engine on its own: open a TF1 checkpoint, plan a warm start, see the report.

Creates a TF1 (name-based) checkpoint of a small pretrained model, then plans
loading it into a model whose variables live under ``sub_model_1/``: first with
the reversed map a widely copied tutorial uses (a clear error with the fix),
then with the correct map. Finally applies the plan to eager variables.

Run: python examples/engine_demo.py
"""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import tf1compat_init as tci  # noqa: E402


def save_pretrained(directory: str) -> str:
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        with tf.compat.v1.variable_scope("dense"):
            tf.compat.v1.get_variable(
                "kernel", initializer=np.arange(8, dtype=np.float32).reshape(4, 2)
            )
            tf.compat.v1.get_variable("bias", initializer=np.array([0.5, -0.5], np.float32))
        tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=100)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        prefix = save_pretrained(tmp)
        info = tci.open_checkpoint(tmp)  # a directory resolves to its latest checkpoint
        print(f"checkpoint {info.prefix} ({info.format})")
        for key, (shape, dtype) in sorted(info.variables.items()):
            print(f"  {key:<14} {dtype:<8} {list(shape)}")

        targets = {
            "sub_model_1/dense/kernel": ((4, 2), "float32"),
            "sub_model_1/dense/bias": ((2,), "float32"),
            "head/w": ((2, 1), "float32"),
        }
        print("\nThe tutorial's map {'sub_model_1/': ''} is written backwards:")
        try:
            tci.plan_restore(info, targets, {"sub_model_1/": ""})
        except tci.AssignmentMapError as e:
            print(f"  AssignmentMapError: {e}")

        plan = tci.plan_restore(info, targets, {"/": "sub_model_1/"})
        print(f"\nWith {{'/': 'sub_model_1/'}}:\n{plan.report}")

        import tensorflow as tf

        from tf1compat_init.apply import apply_plan
        from tf1compat_init.variables import collect_targets

        variables = [
            tf.Variable(tf.zeros((4, 2)), name="sub_model_1/dense/kernel"),
            tf.Variable(tf.zeros((2,)), name="sub_model_1/dense/bias"),
        ]
        report = apply_plan(plan, collect_targets(variables))
        print(f"\napplied: {report.summary()}")
        np.testing.assert_array_equal(variables[1].numpy(), [0.5, -0.5])
        print(f"sub_model_1/dense/bias = {variables[1].numpy()}  (from {prefix})")


if __name__ == "__main__":
    main()
