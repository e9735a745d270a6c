"""Migrating TF1 sub-model checkpoints with the tf1compat-init CLI.

The story: two sub-models were trained separately in TF1. ``sub_model_1`` saved its
layers at the root (``fc1/kernel``), ``sub_model_2`` under ``model/`` (``model/fc1/kernel``),
both with Adam slots and a ``global_step``. The new TF2 code builds one network holding
both, under ``sub_model_1/`` and ``sub_model_2/``. Instead of carrying assignment maps
around forever, we migrate each checkpoint once:

1. ``inspect`` both checkpoints (no TensorFlow needed);
2. ``migrate`` each into a name-based checkpoint with the new scopes, optimizer state
   dropped, and ``diff`` the result against its source;
3. ``plan`` a restore of the new network's checkpoint layout from a source;
4. ``migrate`` to safetensors for PyTorch / JAX users, and load it with ``safetensors``.

Every command runs as a user would run it (a subprocess). Run:
``python examples/migrate_submodels.py``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1
SRC = str(Path(__file__).resolve().parents[1] / "src")


def train_sub_model(path: str, scope: str, seed: int) -> str:
    """A TF1 graph: two dense layers made with get_variable, one Adam step, Saver.save."""
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(seed)
        x = tf.constant(np.random.default_rng(seed).standard_normal((8, 4)), tf.float32)
        with v1.variable_scope(scope or v1.get_variable_scope()):
            h = x
            for name, n_in, n_out in (("fc1", 4, 3), ("fc2", 3, 2)):
                w = v1.get_variable(f"{name}/kernel", [n_in, n_out])
                b = v1.get_variable(f"{name}/bias", [n_out], initializer=v1.zeros_initializer())
                h = tf.nn.relu(h @ w + b)
        step = v1.train.get_or_create_global_step()
        train = v1.train.AdamOptimizer(0.01).minimize(tf.reduce_sum(h * h), global_step=step)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return v1.train.Saver().save(sess, path, global_step=step)


def cli(command: str, expect: int = 0) -> str:
    """Runs ``tf1compat-init COMMAND`` (as ``python -m tf1compat_init``) and echoes it."""
    print(f"\n$ tf1compat-init {command}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "tf1compat_init", *shlex.split(command)],
        capture_output=True,
        text=True,
        env=env,
    )
    if run.stdout:
        print(run.stdout.rstrip())
    if run.stderr:
        print(run.stderr.rstrip())
    if run.returncode != expect:
        raise SystemExit(f"exit code {run.returncode}, expected {expect}")
    return run.stdout


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="migrate_submodels_"))
    here = os.getcwd()
    os.chdir(work)
    try:
        run_story(work)
    finally:
        os.chdir(here)
        shutil.rmtree(work, ignore_errors=True)


def run_story(work: Path) -> None:
    ckpt_1 = train_sub_model("pretrained/sub_model_1/model.ckpt", "", seed=1)
    ckpt_2 = train_sub_model("pretrained/sub_model_2/model.ckpt", "model", seed=2)
    print(f"trained: {ckpt_1}, {ckpt_2} (in {work})")

    # 1. What is in there? A directory resolves to its latest checkpoint.
    cli("inspect pretrained/sub_model_1")
    cli("inspect pretrained/sub_model_2")

    # 2. Rename the scopes once, drop the optimizer state, and check the result.
    cli(
        "migrate pretrained/sub_model_1 migrated/sub_model_1.ckpt "
        "--map /=sub_model_1/ --drop-optimizer --exclude '^global_step$'"
    )
    cli(
        "migrate pretrained/sub_model_2 migrated/sub_model_2.ckpt "
        "--map model/=sub_model_2/ --drop-optimizer --exclude '^global_step$'"
    )
    cli("inspect migrated/sub_model_2.ckpt")
    cli(
        "diff pretrained/sub_model_2 migrated/sub_model_2.ckpt "
        "--map model/=sub_model_2/ --exclude 'Adam|beta|global_step'"
    )
    # A second run refuses to overwrite the output; --force replaces it.
    cli("migrate pretrained/sub_model_2 migrated/sub_model_2.ckpt", expect=1)

    # 3. Dry run: would the original sub_model_2 checkpoint fill the migrated layout?
    cli("plan pretrained/sub_model_2 --target migrated/sub_model_2.ckpt --map model/=sub_model_2/")

    # 4. safetensors, for PyTorch and JAX users.
    cli(
        "migrate pretrained/sub_model_1 migrated/sub_model_1.safetensors --format safetensors "
        "--map /=sub_model_1/ --drop-optimizer --exclude '^global_step$'"
    )

    # TensorFlow's own reader and the safetensors library see the same bits.
    reader = tf.train.load_checkpoint("migrated/sub_model_2.ckpt")
    original = tf.train.load_checkpoint(ckpt_2)
    for key in ("fc1/kernel", "fc2/bias"):
        new, old = reader.get_tensor(f"sub_model_2/{key}"), original.get_tensor(f"model/{key}")
        assert new.tobytes() == old.tobytes(), key
    try:
        from safetensors.numpy import load_file
    except ImportError:
        print("\n(safetensors is not installed: skipped loading the .safetensors file)")
    else:
        tensors = load_file("migrated/sub_model_1.safetensors")
        first = tf.train.load_checkpoint(ckpt_1)
        assert all(
            tensors[k].tobytes() == first.get_tensor(k.removeprefix("sub_model_1/")).tobytes()
            for k in tensors
        )
        print(f"\nsafetensors.numpy.load_file: {sorted(tensors)}")
    print("\nmigrate_submodels: every migrated value is bit-identical to its source")


if __name__ == "__main__":
    main()
