"""graph.pbtxt on TensorFlow 2.20 with protobuf >= 7 (issue 27).

TensorFlow 2.15 to 2.20 write graph.pbtxt with MessageToString(float_format=''); protobuf 7
removed the argument. The decision logic is tested on every leg, the probe against what
TensorFlow really does here, and our writer against TensorFlow's own hook (forcing our path
where TensorFlow's works). The tests marked "broken here" run only where the pairing really
breaks (scripts/compat.sh 2.20 builds such an environment).
"""

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

from google.protobuf import text_format  # noqa: E402

from tf1compat_init import _tfcompat  # noqa: E402
from tf1compat_init import v1 as tv1  # noqa: E402
from tf1compat_init.v1 import graph_def as _graph_def  # noqa: E402

V1 = tf.compat.v1
BROKEN_HERE = not tv1.can_save_graph_def()
broken_here = pytest.mark.skipif(
    not BROKEN_HERE, reason="TensorFlow writes graph.pbtxt here (not TF 2.20 + protobuf 7)"
)


# -- the decision, on version strings --------------------------------------------------


@pytest.mark.parametrize(
    ("version", "want"),
    [
        ("2.20.0", (2, 20)),
        ("2.21.0rc1", (2, 21)),
        ("2.22.0-dev20260101", (2, 22)),
        ("2.9.3", (2, 9)),
        ("v2.15.1", (2, 15)),
        ("nightly", (0, 0)),
    ],
)
def test_release(version, want):
    assert _tfcompat.release(version) == want


@pytest.mark.parametrize(
    ("tf_version", "takes_float_format", "writable"),
    [
        ("2.15.1", True, True),
        ("2.19.1", True, True),
        ("2.20.0", True, True),  # TF 2.20 with protobuf 5 or 6
        ("2.20.0", False, False),  # TF 2.20 with protobuf 7: pip's default
        ("2.20.1", False, False),
        ("2.16.2", False, False),  # protobuf 7 forced beside an older release
        ("2.21.0", False, True),  # TF 2.21 no longer passes float_format
        ("2.21.0", True, True),
        ("2.22.0-dev20260101", False, True),
        ("3.0.0", False, True),
    ],
)
def test_graph_text_writable(tf_version, takes_float_format, writable):
    assert _tfcompat.graph_text_writable(tf_version, takes_float_format) is writable


def test_advice_names_every_fix():
    text = _tfcompat.GRAPH_TEXT_ADVICE % ("2.20.0", "7.36.2")
    assert text.startswith("tf1compat_init: TensorFlow 2.20.0 cannot write graph.pbtxt")
    for fix in (
        "pip install 'protobuf<7'",
        "TensorFlow 2.21",
        "save_graph_def=tf1compat_init.v1.can_save_graph_def()",
        "tf1compat_init.v1.CheckpointSaverHook",
    ):
        assert fix in text, fix


# -- the probe, against what TensorFlow does here ----------------------------------------


def test_probe_matches_tensorflows_own_writer(tmp_path):
    graph_def = tf.Graph().as_graph_def()
    try:
        tf.io.write_graph(graph_def, str(tmp_path), "probe.pbtxt")
    except TypeError as e:
        assert "float_format" in str(e)
        writes = False
    else:
        writes = True
    assert tv1.can_save_graph_def() is writes


def test_warn_once(monkeypatch, caplog):
    monkeypatch.setattr(_graph_def, "_warned", False)
    monkeypatch.setattr(_graph_def, "can_save_graph_def", lambda: True)
    with caplog.at_level(logging.WARNING, logger=_graph_def.logger.name):
        _graph_def.warn_once()
    assert not caplog.records
    monkeypatch.setattr(_graph_def, "can_save_graph_def", lambda: False)
    with caplog.at_level(logging.WARNING, logger=_graph_def.logger.name):
        _graph_def.warn_once()
        _graph_def.warn_once()
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert message.startswith(f"tf1compat_init: TensorFlow {tf.__version__} cannot write")
    assert "pip install 'protobuf<7'" in message


# -- our hook against TensorFlow's ------------------------------------------------------


def _train(run_dir: Path, hook_class, steps: int = 2) -> None:
    """A tiny MonitoredTrainingSession run that checkpoints every step with ``hook_class``."""
    with tf.Graph().as_default():
        step = V1.train.get_or_create_global_step()
        w = V1.get_variable("w", initializer=np.array([0.1, -2.5e-8], np.float32))
        train_op = tf.group(V1.assign_add(w, [0.5, 0.5]), V1.assign_add(step, 1))
        with V1.train.MonitoredTrainingSession(
            checkpoint_dir=str(run_dir),
            chief_only_hooks=[hook_class(str(run_dir), save_steps=1)],
            hooks=[V1.train.StopAtStepHook(last_step=steps)],
            save_checkpoint_secs=None,
            save_summaries_steps=None,
            log_step_count_steps=None,
        ) as sess:
            while not sess.should_stop():
                sess.run(train_op)


def _files(run_dir: Path) -> list[str]:
    return sorted(n if not n.startswith("events.") else "events" for n in os.listdir(run_dir))


def _graph(path: Path):
    return text_format.Parse(path.read_text(), tf.compat.v1.GraphDef())


def _same_numbering(text: str, message: type | None = None) -> str:
    # Graph functions (a tf.cond's branches) get a process-wide counter in their names, and
    # the library lists them in the order of those names (9 before 10 in one process, "10"
    # before "9" as text in another): drop the counters, then list the functions by name.
    parsed = text_format.Parse(
        re.sub(r"(_cond_(?:true|false))_\d+", r"\1", text),
        (message or tf.compat.v1.GraphDef)(),
    )
    graph = parsed.graph_def if message is tf.compat.v1.MetaGraphDef else parsed
    functions = sorted(graph.library.function, key=lambda f: f.signature.name)
    del graph.library.function[:]
    graph.library.function.extend(functions)
    return text_format.MessageToString(parsed)


def test_our_writer_matches_tensorflows_hook(tmp_path, monkeypatch):
    """Our path, forced where TensorFlow's works, writes what TensorFlow's hook writes."""
    if BROKEN_HERE:
        pytest.skip("TensorFlow's hook cannot save its graph here; see the broken-here tests")
    _train(tmp_path / "tf", V1.train.CheckpointSaverHook)
    monkeypatch.setattr(_graph_def, "can_save_graph_def", lambda: False)
    _train(tmp_path / "ours", tv1.CheckpointSaverHook)
    tf_dir, our_dir = tmp_path / "tf", tmp_path / "ours"
    assert _files(our_dir) == _files(tf_dir)
    assert "graph.pbtxt" in _files(our_dir) and "model.ckpt-0.meta" in _files(our_dir)
    ours, theirs = ((d / "graph.pbtxt").read_text() for d in (our_dir, tf_dir))
    assert _graph(our_dir / "graph.pbtxt").node
    assert _same_numbering(text_format.MessageToString(_graph(our_dir / "graph.pbtxt"))) == (
        _same_numbering(text_format.MessageToString(_graph(tf_dir / "graph.pbtxt")))
    )
    if _tfcompat.release(tf.__version__) >= (2, 21):  # the same writer call: the same text
        assert _same_numbering(ours) == _same_numbering(theirs)
    for name in ("model.ckpt-0.meta", "model.ckpt-2.meta"):
        ours, theirs = (tf.compat.v1.MetaGraphDef() for _ in range(2))
        ours.ParseFromString((our_dir / name).read_bytes())
        theirs.ParseFromString((tf_dir / name).read_bytes())
        meta = tf.compat.v1.MetaGraphDef
        assert _same_numbering(str(ours), meta) == _same_numbering(str(theirs), meta), name
    for name in ("model.ckpt-1", "model.ckpt-2"):
        assert np.array_equal(
            tf.train.load_checkpoint(str(our_dir / name)).get_tensor("w"),
            tf.train.load_checkpoint(str(tf_dir / name)).get_tensor("w"),
        )


def test_our_hook_is_tensorflows_where_it_works(tmp_path):
    assert issubclass(tv1.CheckpointSaverHook, V1.train.CheckpointSaverHook)
    _train(tmp_path, tv1.CheckpointSaverHook)
    assert {"graph.pbtxt", "model.ckpt-0.meta", "model.ckpt-2.index"} <= set(_files(tmp_path))
    assert _graph(tmp_path / "graph.pbtxt").node


def test_adopt_saver_hooks(tmp_path, monkeypatch):
    class Mine(V1.train.CheckpointSaverHook):
        pass

    plain = V1.train.CheckpointSaverHook(str(tmp_path), save_steps=1)
    no_graph = V1.train.CheckpointSaverHook(str(tmp_path), save_steps=1, save_graph_def=False)
    mine = Mine(str(tmp_path), save_steps=1)
    _graph_def.adopt_saver_hooks([plain, no_graph, mine])
    assert type(plain) is V1.train.CheckpointSaverHook or BROKEN_HERE
    monkeypatch.setattr(_graph_def, "can_save_graph_def", lambda: False)
    _graph_def.adopt_saver_hooks([plain, no_graph, mine])
    assert type(plain) is tv1.CheckpointSaverHook
    assert type(no_graph) is V1.train.CheckpointSaverHook
    assert type(mine) is Mine


# -- where the pairing really breaks (TF 2.20 + protobuf >= 7) -----------------------------


@broken_here
def test_broken_here_tensorflows_hook_raises(tmp_path):
    with pytest.raises(TypeError, match="float_format"):
        _train(tmp_path, V1.train.CheckpointSaverHook)


@broken_here
def test_broken_here_our_hook_writes_the_graph(tmp_path):
    _train(tmp_path, tv1.CheckpointSaverHook)
    files = set(_files(tmp_path))
    assert {
        "graph.pbtxt",
        "checkpoint",
        "events",
        "model.ckpt-0.meta",
        "model.ckpt-2.meta",
    } <= files
    with tf.Graph().as_default() as g:  # the graph of _train, rebuilt
        step = V1.train.get_or_create_global_step()
        w = V1.get_variable("w", initializer=np.array([0.1, -2.5e-8], np.float32))
        tf.group(V1.assign_add(w, [0.5, 0.5]), V1.assign_add(step, 1))
    written = _graph(tmp_path / "graph.pbtxt")
    assert {n.name for n in g.as_graph_def().node} <= {n.name for n in written.node}
    # TF 2.21's writer: MessageToString without float_format, so it parses back exactly.
    assert (tmp_path / "graph.pbtxt").read_text() == text_format.MessageToString(written)
    assert tf.train.load_checkpoint(str(tmp_path)).get_tensor("w").tolist() == pytest.approx(
        [1.1, 1.0 - 2.5e-8]
    )


@broken_here
def test_broken_here_import_warns_once():
    code = "import tf1compat_init.v1, tf1compat_init.estimator, tf1compat_init.v1"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    src = str(Path(__file__).resolve().parents[3] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("cannot write graph.pbtxt") == 1, out.stderr


@broken_here
@pytest.mark.tf221
def test_broken_here_estimator_trains_and_resumes(tmp_path):
    from tf1compat_init import estimator as est

    def model_fn(features, labels, mode):
        w = V1.get_variable("w", initializer=np.float32(0.5))
        loss = tf.reduce_sum(w * features)
        opt = V1.train.GradientDescentOptimizer(0.1)
        return est.EstimatorSpec(
            mode, loss=loss, train_op=opt.minimize(loss, V1.train.get_global_step())
        )

    def input_fn():
        return tf.data.Dataset.from_tensors(np.float32(1.0)).repeat()

    default_dir, own_hook_dir = tmp_path / "default", tmp_path / "own_hook"
    est.Estimator(model_fn, model_dir=str(default_dir)).train(input_fn, steps=2)
    # A user's own TensorFlow CheckpointSaverHook into model_dir replaces the default one.
    user_hook = V1.train.CheckpointSaverHook(str(own_hook_dir), save_steps=1)
    estimator = est.Estimator(model_fn, model_dir=str(own_hook_dir))
    estimator.train(input_fn, steps=2, hooks=[user_hook])
    estimator.train(input_fn, steps=1)  # resumes, with the default saver hook
    for run_dir, last in ((default_dir, 2), (own_hook_dir, 3)):
        assert "graph.pbtxt" in _files(run_dir)
        assert _graph(run_dir / "graph.pbtxt").node
        assert f"model.ckpt-{last}.meta" in _files(run_dir)
        assert tf.train.load_checkpoint(str(run_dir)).get_tensor("global_step") == last
