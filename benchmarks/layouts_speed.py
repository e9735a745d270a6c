"""Restore and migrate speed on real model layouts (issue 28), against TensorFlow's ways.

    python benchmarks/layouts_speed.py                      # all layouts, full size
    python benchmarks/layouts_speed.py --quick --out /tmp/q.json   # BERT with 2 layers, 1 run

The checkpoints (``benchmarks/model_layouts.py``: BERT-base with Adam slots, slim ResNet-50
with Momentum, GPT-2 124M, a wide-and-deep model with a 1M x 64 embedding; random values,
real names, shapes and dtypes) are written once into ``--workdir`` (outside the
repository; ``--clean`` deletes it afterwards), read once so the page cache is hot, then,
per layout:

- **warm** (one process, ``--repeats`` timed runs after a warm-up, round-robin): the raw
  read of the ``.data`` file into a preallocated buffer; TensorFlow's restores into
  existing variables, one per checkpoint key (eager ``Saver.restore``, graph ``Saver.restore``
  with its session built, ``tf.train.Checkpoint.restore`` (name-based), graph
  ``init_from_checkpoint`` + initializer, a ``get_tensor`` + ``assign`` loop); ours
  (``open_checkpoint`` + ``plan_restore`` + ``apply_plan``, default and ``staging="all"``;
  ``v1.init_from_checkpoint`` eager and in the graph; ``checkpoint.restore``); for BERT and
  ResNet-50 the Keras models (keras-hub's ``BertBackbone``, ``keras.applications.ResNet50``)
  loaded with the library's recipe (``keras.load_checkpoint``) and the way keras-hub's
  conversion scripts do it: ``tf.train.load_checkpoint(...).get_tensor`` per weight and
  ``set_weights`` per layer (its table of names is computed beforehand from the recipe's plan,
  untimed: the comparator gets its mapping for free). Then the peak extra anonymous memory
  of one restore each (sampled from another process) and our exact peak read-ahead.
- **first restore** (a fresh process per run, after ``import tensorflow``): per front end,
  what a program pays once: importing the front end (ours), building the variables or the
  model, and the restore (graph: ``Saver`` + ``Session``, TF's ``init_from_checkpoint`` and
  ours; eager: ``Saver``, ``Checkpoint.restore``, the ``get_tensor`` loop and
  ``checkpoint.restore``; Keras: the loop and ``keras.load_checkpoint``).
- **migrate** (a fresh process each): ``tf1compat_init.migrate.migrate`` to tf1 and safetensors
  (every layout) and, with the recipe and the Keras model, to ``.weights.h5`` and a TF2
  checkpoint (BERT, ResNet-50); against the ways people convert today: the ``get_tensor`` loop +
  ``set_weights`` + ``save_weights`` and ``safetensors.numpy.save_file`` of every
  ``get_tensor``. The Keras model is built before the start (untimed, by both ways). GB/s of
  checkpoint bytes written, peak RSS (``ru_maxrss``, which counts a memory-mapped file's
  touched pages) and peak anonymous memory above the start; each run between two ``dd`` +
  ``fsync`` copies of the output's size, the disk's limit just then. ``--rounds N`` runs the
  kinds N times interleaved (medians, every run kept); ``--only-migrate`` skips the restores.
  Issue 36's goals per layout: ours >= 0.7x that limit (median), peak anonymous memory <=
  largest tensor + 2 windows, never slower than the naive loop.

After every restore a few tensors (the largest, the first, a slot, ``global_step``; for
Keras a reshaped attention kernel) are compared bit for bit with the generator's values.

The goals of issue 28 are evaluated per layout and printed: the default restore >= 1.5x
the best of TensorFlow's restores with peak extra memory <= largest tensor + the 64 MiB
window; ``staging="all"`` >= 1.0x the raw read; first restore >= 1.5x TensorFlow's (best)
way per front end; warm >= 0.8x the graph ``Saver`` and >= 1.5x the eager ``Saver``.
Results: ``benchmarks/results/layouts_speed[_runN].json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import model_layouts as ml  # noqa: E402
import numpy as np  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
MiB = 1 << 20
WINDOW = 64 * MiB
KERAS_LAYOUTS = ("bert", "resnet50")
RECIPES = {"bert": "bert-to-keras-hub", "resnet50": "slim-resnet50-to-keras"}

TF_WARM = ("saver_eager", "saver_graph", "checkpoint_restore", "tf_init_graph")
WARM_METHODS = (
    "raw_read",
    "saver_eager",
    "saver_graph",
    "checkpoint_restore",
    "tf_init_graph",
    "get_tensor_assign",
    "ours",
    "ours_staged",
    "ours_v1_eager",
    "ours_v1_graph",
    "ours_checkpoint",
    "keras_loop",
    "keras_ours",
)
FIRST = {  # scenario -> front end, ours?
    "graph_saver": ("graph", False),
    "graph_tf_init": ("graph", False),
    "graph_ours": ("graph", True),
    "eager_saver": ("eager", False),
    "eager_checkpoint": ("eager", False),
    "eager_loop": ("eager", False),
    "eager_ours": ("eager", True),
    "keras_loop": ("keras", False),
    "keras_ours": ("keras", True),
}
MIGRATE = {  # kind -> format, ours?
    "ours_tf1": ("tf1", True),
    "ours_safetensors": ("safetensors", True),
    "loop_safetensors": ("safetensors", False),
    "ours_keras": ("keras", True),
    "loop_keras": ("keras", False),
    "ours_tf2": ("tf2", True),
}


# -- the checkpoints --------------------------------------------------------------------


def tensors_of(layout: str, bert_layers: int | None) -> list[ml.Tensor]:
    return ml.layout(layout, bert_layers=bert_layers)


def prefix_of(workdir: Path, layout: str, bert_layers: int | None) -> str:
    tag = f"{layout}_L{bert_layers}" if layout == "bert" and bert_layers else layout
    return str(workdir / tag / ml.PREFIX)


def ensure_checkpoint(workdir: Path, layout: str, bert_layers: int | None) -> str:
    prefix = prefix_of(workdir, layout, bert_layers)
    if not Path(prefix + ".index").exists():
        Path(prefix).parent.mkdir(parents=True, exist_ok=True)
        ml.write(tensors_of(layout, bert_layers), prefix)
    return prefix


def data_files(prefix: str) -> list[str]:
    return [f"{prefix}.data-00000-of-00001"]


def hot_page_cache(prefix: str) -> None:
    for path in data_files(prefix):
        with open(path, "rb", buffering=0) as f:
            while f.read(64 * MiB):
                pass


def checked_tensors(tensors: list[ml.Tensor]) -> list[ml.Tensor]:
    """The few tensors compared after each restore."""
    by_size = sorted(tensors, key=lambda t: ml.nbytes([t]))
    picks = [by_size[-1], sorted(tensors, key=lambda t: t.name)[0]]
    picks += [t for t in tensors if t.name.endswith(("adam_v", "Momentum", "accumulator"))][:1]
    picks += [t for t in tensors if t.name == "global_step"]
    out: list[ml.Tensor] = []
    for t in picks:
        if t not in out:
            out.append(t)
    return out


# -- Keras models -----------------------------------------------------------------------


def build_keras(layout: str, bert_layers: int | None) -> Any:
    if layout == "bert":
        import keras_hub

        c = dict(ml.BERT_BASE)
        if bert_layers is not None:
            c["num_hidden_layers"] = bert_layers
        return keras_hub.models.BertBackbone(
            vocabulary_size=c["vocab_size"],
            num_layers=c["num_hidden_layers"],
            num_heads=c["num_attention_heads"],
            hidden_dim=c["hidden_size"],
            intermediate_dim=c["intermediate_size"],
            max_sequence_length=c["max_position_embeddings"],
            num_segments=c["type_vocab_size"],
        )
    if layout == "resnet50":
        import keras

        return keras.applications.ResNet50(weights=None)
    raise ValueError(f"no Keras model for {layout}")


def keras_table(model: Any, prefix: str, recipe: str) -> list:
    """[layer name, [[checkpoint key or None, shape], ...]]: a conversion script's table."""
    from tf1compat_init.keras import plan_checkpoint

    plan, _ = plan_checkpoint(model, prefix, recipe=recipe)
    key_of = {p.target: p.keys[0] for p in plan.entries}
    table = []
    for layer in model.layers:
        if layer.weights:
            items = [[key_of.get(w.path), list(w.shape)] for w in layer.weights]
            if any(k for k, _ in items):
                table.append([layer.name, items])
    return table


def keras_loop(tf: Any, model: Any, prefix: str, table: list) -> None:
    """keras-hub's conversion scripts' way: get_tensor per weight, set_weights per layer."""
    reader = tf.train.load_checkpoint(prefix)
    for name, items in table:
        layer = model.get_layer(name)
        current = None
        values = []
        for i, (key, shape) in enumerate(items):
            if key is None:
                current = current if current is not None else layer.get_weights()
                values.append(current[i])
            else:
                values.append(reader.get_tensor(key).reshape(shape))
        layer.set_weights(values)


def keras_checks(table: list, tensors: list[ml.Tensor]) -> list[tuple[str, str]]:
    """(weight path, checkpoint key) of a few Keras weights to check."""
    by_name = {t.name: t for t in tensors}
    pairs = [(f"{n}/{i}", k) for n, items in table for i, (k, _) in enumerate(items) if k]
    pairs.sort(key=lambda p: ml.nbytes([by_name[p[1]]]))
    picks = [pairs[-1], pairs[0]]
    picks += [p for p in pairs if "query" in p[1] and p[1].endswith("kernel")][:1]
    return picks


def keras_values(model: Any, checks: list[tuple[str, str]]) -> dict[str, np.ndarray]:
    out = {}
    for where, key in checks:
        name, i = where.rsplit("/", 1)
        out[key] = np.asarray(model.get_layer(name).weights[int(i)].numpy())
    return out


def mismatches(values: dict[str, np.ndarray], tensors: list[ml.Tensor]) -> list[str]:
    by_name = {t.name: t for t in tensors}
    return [k for k, v in values.items() if v.tobytes() != ml.expected(by_name[k]).tobytes()]


# -- warm restores (one process per layout) ----------------------------------------------


class _ApplyLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.read_ahead: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if "peak read-ahead" in str(record.msg) and isinstance(record.args, tuple):
            self.read_ahead = int(record.args[3] * MiB)


def warm_child(layout: str, prefix: str, bert_layers: int | None, repeats: int, out: Path) -> dict:
    import tensorflow as tf
    from restore_speed import peak_extra_memory

    import tf1compat_init as tci
    from tf1compat_init import checkpoint as tck
    from tf1compat_init import keras as tk
    from tf1compat_init import v1
    from tf1compat_init.apply import apply_plan
    from tf1compat_init.variables import target_specs

    log = _ApplyLog()
    apply_logger = logging.getLogger("tf1compat_init.apply")
    apply_logger.setLevel(logging.INFO)
    apply_logger.addHandler(log)
    apply_logger.propagate = False

    tensors = tensors_of(layout, bert_layers)
    checks = checked_tensors(tensors)
    size = ml.nbytes(tensors)
    with tf.device("/CPU:0"):
        ev = {t.name: tf.Variable(tf.zeros(t.shape, t.dtype), name=t.name) for t in tensors}
    ckpt = tf.train.Checkpoint(**{f"v{i}": v for i, v in enumerate(ev.values())})
    saver_eager = tf.compat.v1.train.Saver(var_list=ev)

    graphs: dict[str, Any] = {}

    def graph_case(how: str) -> Any:
        graph = tf.Graph()
        with graph.as_default():
            gv = {
                t.name: tf.compat.v1.get_variable(
                    t.name,
                    shape=t.shape,
                    dtype=t.dtype,
                    initializer=tf.compat.v1.zeros_initializer(),
                )
                for t in tensors
            }
            if how == "saver":
                saver = tf.compat.v1.train.Saver(var_list=gv)
                init = None
            elif how == "tf_init":
                tf.compat.v1.train.init_from_checkpoint(prefix, {k: k for k in gv})
                init, saver = tf.compat.v1.global_variables_initializer(), None
            else:
                v1.init_from_checkpoint(prefix, {k: k for k in gv})
                init, saver = tf.compat.v1.global_variables_initializer(), None
            zero = tf.group(*[gv[t.name].assign(tf.zeros(t.shape, t.dtype)) for t in checks])
            first_init = init if init is not None else tf.compat.v1.global_variables_initializer()
        sess = tf.compat.v1.Session(graph=graph)
        sess.run(first_init)
        return {
            "graph": graph,
            "sess": sess,
            "vars": gv,
            "saver": saver,
            "init": init,
            "zero": zero,
        }

    for how in ("saver", "tf_init", "ours"):
        graphs[how] = graph_case(how)

    model = table = kchecks = None
    if layout in KERAS_LAYOUTS:
        with tf.device("/CPU:0"):
            model = build_keras(layout, bert_layers)
        table = keras_table(model, prefix, RECIPES[layout])
        kchecks = keras_checks(table, tensors)
        (out.parent / f"{Path(prefix).parent.name}_keras_table.json").write_text(json.dumps(table))
    from tf1compat_init.variables import collect_targets

    key_of = {id(v): k for k, v in ev.items()}
    targets = collect_targets(ev.values(), name_of=lambda v: key_of[id(v)])
    buffer = np.ones(os.path.getsize(data_files(prefix)[0]), dtype=np.uint8)

    def raw_read() -> None:
        view = memoryview(buffer)
        with open(data_files(prefix)[0], "rb", buffering=0) as f:
            got = 0
            while got < len(buffer):
                got += f.readinto(view[got:])

    def ours(staging: str) -> Callable[[], None]:
        def run() -> None:
            plan = tci.plan_restore(tci.open_checkpoint(prefix), target_specs(targets))
            apply_plan(plan, targets, staging=staging)

        return run

    def graph_run(how: str) -> Callable[[], None]:
        g = graphs[how]
        if how == "saver":

            def restore() -> None:
                with g["graph"].as_default():  # Saver.restore builds in the default graph
                    g["saver"].restore(g["sess"], prefix)

            return restore
        return lambda: g["sess"].run(g["init"])

    def loop() -> None:
        reader = tf.train.load_checkpoint(prefix)
        for k, v in ev.items():
            v.assign(reader.get_tensor(k))

    runs: dict[str, Callable[[], None]] = {
        "raw_read": raw_read,
        "saver_eager": lambda: saver_eager.restore(None, prefix),
        "saver_graph": graph_run("saver"),
        "checkpoint_restore": lambda: ckpt.restore(prefix),
        "tf_init_graph": graph_run("tf_init"),
        "get_tensor_assign": loop,
        "ours": ours("stream"),
        "ours_staged": ours("all"),
        "ours_v1_eager": lambda: v1.init_from_checkpoint(prefix, dict(ev)),
        "ours_v1_graph": graph_run("ours"),
        "ours_checkpoint": lambda: tck.restore(ckpt, prefix, dict(ev)),
    }
    if model is not None:
        runs["keras_loop"] = lambda: keras_loop(tf, model, prefix, table)
        runs["keras_ours"] = lambda: tk.load_checkpoint(model, prefix, recipe=RECIPES[layout])

    def zero(method: str) -> None:
        if method.startswith("keras"):
            for where, _ in kchecks:
                name, i = where.rsplit("/", 1)
                w = model.get_layer(name).weights[int(i)]
                w.assign(np.zeros(w.shape, w.dtype))
        elif method in ("saver_graph", "tf_init_graph", "ours_v1_graph"):
            g = graphs[{"saver_graph": "saver", "tf_init_graph": "tf_init"}.get(method, "ours")]
            g["sess"].run(g["zero"])
        elif method != "raw_read":
            for t in checks:
                ev[t.name].assign(tf.zeros(t.shape, t.dtype))

    def values(method: str) -> dict[str, np.ndarray]:
        if method.startswith("keras"):
            return keras_values(model, kchecks)
        if method.endswith("_graph"):
            g = graphs[{"saver_graph": "saver", "tf_init_graph": "tf_init"}.get(method, "ours")]
            return {t.name: g["sess"].run(g["vars"][t.name]) for t in checks}
        return {t.name: ev[t.name].numpy() for t in checks}

    times: dict[str, list[float]] = {m: [] for m in runs}
    bad: dict[str, list[str]] = {}
    loads = []
    for r in range(repeats + 1):  # the first round is the warm-up
        loads.append(os.getloadavg()[0])
        for method, fn in runs.items():
            zero(method)
            gc.collect()
            t0 = time.perf_counter()
            fn()
            took = time.perf_counter() - t0
            if method != "raw_read":
                wrong = mismatches(values(method), tensors)
                if wrong:
                    bad.setdefault(method, []).extend(wrong)
            if r:
                times[method].append(took)
    memory = {}
    for method in ("ours", "ours_staged", "saver_eager", "checkpoint_restore"):
        log.read_ahead = None
        zero(method)
        memory[method] = {"peak_extra_bytes": peak_extra_memory(runs[method])}
        if method.startswith("ours"):
            memory[method]["read_ahead_peak_bytes"] = log.read_ahead
    result: dict[str, Any] = {
        "bytes": size,
        "tensors": len(tensors),
        "largest_tensor_bytes": max(ml.nbytes([t]) for t in tensors),
        "checked": [t.name for t in checks] + ([k for _, k in kchecks] if kchecks else []),
        "keras_bytes": None,
        "load_average": loads,
        "warm": {},
        "memory": memory,
        "verified": not bad,
        "mismatches": bad,
    }
    if model is not None:
        result["keras_bytes"] = sum(
            ml.nbytes([t])
            for t in tensors
            if any(t.name == k for _, items in table for k, _ in items)
        )
    for method, ts in times.items():
        nb = result["keras_bytes"] if method.startswith("keras") else size
        med = statistics.median(ts)
        result["warm"][method] = {"times_s": ts, "median_s": med, "gbps": nb / med / 1e9}
    return result


# -- first restores (a fresh process each) ----------------------------------------------


def first_child(
    layout: str, prefix: str, bert_layers: int | None, scenario: str, workdir: Path
) -> dict:
    import tensorflow as tf

    tensors = tensors_of(layout, bert_layers)
    checks = checked_tensors(tensors)
    table = None
    if scenario.startswith("keras"):
        import keras_hub  # noqa: F401 - model code, imported before the clock like TensorFlow

        table = json.loads((workdir / f"{Path(prefix).parent.name}_keras_table.json").read_text())
    hot_page_cache(prefix)
    gc.collect()
    t0 = time.perf_counter()
    restore_start = None
    if scenario.startswith("graph"):
        if scenario == "graph_ours":
            from tf1compat_init import v1
        graph = tf.Graph()
        with graph.as_default():
            gv = {
                t.name: tf.compat.v1.get_variable(
                    t.name,
                    shape=t.shape,
                    dtype=t.dtype,
                    initializer=tf.compat.v1.zeros_initializer(),
                )
                for t in tensors
            }
            if scenario == "graph_saver":
                saver = tf.compat.v1.train.Saver(var_list=gv)
            elif scenario == "graph_tf_init":
                tf.compat.v1.train.init_from_checkpoint(prefix, {k: k for k in gv})
            else:
                v1.init_from_checkpoint(prefix, {k: k for k in gv})
            init = tf.compat.v1.global_variables_initializer()
        sess = tf.compat.v1.Session(graph=graph)
        restore_start = time.perf_counter()
        with graph.as_default():
            if scenario == "graph_saver":
                saver.restore(sess, prefix)
            else:
                sess.run(init)
        end = time.perf_counter()
        got = {t.name: sess.run(gv[t.name]) for t in checks}
    elif scenario.startswith("eager"):
        if scenario == "eager_ours":
            from tf1compat_init import checkpoint as tck
        ev = {t.name: tf.Variable(tf.zeros(t.shape, t.dtype), name=t.name) for t in tensors}
        root = tf.train.Checkpoint(**{f"v{i}": v for i, v in enumerate(ev.values())})
        restore_start = time.perf_counter()
        if scenario == "eager_saver":
            tf.compat.v1.train.Saver(var_list=ev).restore(None, prefix)
        elif scenario == "eager_checkpoint":
            root.restore(prefix)
        elif scenario == "eager_loop":
            reader = tf.train.load_checkpoint(prefix)
            for k, v in ev.items():
                v.assign(reader.get_tensor(k))
        else:
            tck.restore(root, prefix, dict(ev))
        end = time.perf_counter()
        got = {t.name: ev[t.name].numpy() for t in checks}
    else:
        if scenario == "keras_ours":
            from tf1compat_init import keras as tk
        model = build_keras(layout, bert_layers)
        restore_start = time.perf_counter()
        if scenario == "keras_loop":
            keras_loop(tf, model, prefix, table)
        else:
            tk.load_checkpoint(model, prefix, recipe=RECIPES[layout])
        end = time.perf_counter()
        got = keras_values(model, keras_checks(table, tensors))
    wrong = mismatches(got, tensors)
    return {
        "total_s": end - t0,
        "restore_s": end - restore_start,
        "verified": not wrong,
        "mismatches": wrong,
    }


# -- migrate (a fresh process each) -----------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def migrate_child(
    layout: str, prefix: str, bert_layers: int | None, kind: str, workdir: Path
) -> dict:
    import tensorflow as tf
    from restore_speed import peak_extra_memory

    t0 = time.perf_counter()
    from tf1compat_init.migrate import migrate

    import_s = time.perf_counter() - t0  # untimed below: recorded, for the first call's share

    fmt, _ours = MIGRATE[kind]
    if fmt in ("keras", "tf2"):
        import keras_hub  # noqa: F401

    out_dir = workdir / "migrated" / f"{Path(prefix).parent.name}_{kind}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    dst = out_dir / {"keras": "model.weights.h5", "safetensors": "model.safetensors"}.get(
        fmt, "model.ckpt"
    )
    tensors = tensors_of(layout, bert_layers)
    result: dict[str, Any] = {"import_s": import_s}
    model = None
    table_path = workdir / f"{Path(prefix).parent.name}_keras_table.json"
    if fmt in ("keras", "tf2"):  # built before the start, by both ways: counted once, untimed
        model = build_keras(layout, bert_layers)
        result["model_bytes"] = sum(
            int(np.prod(w.shape)) * np.dtype(str(w.dtype)).itemsize for w in model.weights
        )
        if kind == "loop_keras" and not table_path.exists():
            table_path.write_text(json.dumps(keras_table(model, prefix, RECIPES[layout])))
    hot_page_cache(prefix)

    def run() -> None:
        if kind in ("ours_safetensors", "ours_tf1"):
            result["bytes"] = migrate(prefix, dst, format=fmt).nbytes
        elif kind in ("ours_keras", "ours_tf2"):
            r = migrate(prefix, dst, format=fmt, recipe=RECIPES[layout], model=lambda: model)
            result["bytes"] = r.nbytes
        elif kind == "loop_safetensors":
            from safetensors.numpy import save_file

            reader = tf.train.load_checkpoint(prefix)
            names = reader.get_variable_to_shape_map()
            save_file({k: np.asarray(reader.get_tensor(k)) for k in names}, str(dst))
            result["bytes"] = ml.nbytes(tensors)
        else:  # loop_keras
            table = json.loads(table_path.read_text())
            keras_loop(tf, model, prefix, table)
            model.save_weights(str(dst))
            by_name = {t.name: t for t in tensors}
            result["bytes"] = sum(ml.nbytes([by_name[k]]) for _, it in table for k, _ in it if k)

    failed: list[BaseException] = []

    took = 0.0

    def guarded() -> None:  # the memory sampler must hear the end even when run() fails
        nonlocal took
        t0 = time.perf_counter()  # the sampler's start is not migrate's time
        try:
            run()
        except Exception as e:  # noqa: BLE001 - re-raised below
            failed.append(e)
        took = time.perf_counter() - t0

    gc.collect()
    base_rss = _rss()
    # Sampled every 2 ms: at 0.5 ms the sampler takes most of one of 2 cores from migrate.
    peak_anon = peak_extra_memory(guarded, interval=0.002)
    if failed:
        raise failed[0]
    result.update(
        time_s=took,
        gbps=result["bytes"] / took / 1e9,
        peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        peak_rss_extra_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base_rss,
        peak_anon_extra_bytes=peak_anon,
        output_bytes=sum(p.stat().st_size for p in out_dir.rglob("*") if p.is_file()),
    )
    if fmt == "safetensors":
        from safetensors import safe_open

        with safe_open(str(dst), framework="numpy") as f:
            got = {t.name: f.get_tensor(t.name) for t in checked_tensors(tensors)}
        result["mismatches"] = mismatches(got, tensors)
        result["verified"] = not result["mismatches"]
    else:
        result["verified"] = True if kind.startswith("ours") else None  # migrate reads back
    shutil.rmtree(out_dir, ignore_errors=True)
    return result


# -- the parent -------------------------------------------------------------------------


def run_probe(args: argparse.Namespace, what: str, layout: str) -> dict | None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--probe", what, "--layouts", layout]
    cmd += ["--workdir", str(args.workdir), "--repeats", str(args.repeats)]
    if args.bert_layers is not None:
        cmd += ["--bert-layers", str(args.bert_layers)]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(args.workdir / "pycache")  # as installed packages have
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("PROBE "):
            return json.loads(line[len("PROBE ") :])
    print(f"  probe {what} {layout} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
    return None


def settle() -> None:
    """Lets the disk finish what came before (the last run's writes, the removal of its
    output) before the next measurement starts."""
    os.sync()
    time.sleep(1.0)


def migrate_layout(args: argparse.Namespace, layout: str, prefix: str) -> dict[str, Any]:
    """Every migrate kind of ``layout``, ``--rounds`` times interleaved, each run between two
    ``dd`` + ``fsync`` copies of the output's size (the disk's write limit just then: a
    virtual disk drifts; the faster of the two counts), after a pause for the disk to
    settle; per kind the median and best ratio to that limit."""
    from migrate_scale import disk_limit

    data = Path(data_files(prefix)[0])
    size = data.stat().st_size
    ddir = args.workdir / "migrated"
    ddir.mkdir(parents=True, exist_ok=True)

    def dd_seconds(nbytes: int) -> float:  # dd copies at most the source's size: rescaled
        settle()
        n = min(nbytes, size)
        return disk_limit(ddir, n, data) * nbytes / n

    kinds = [
        k for k, (f, _) in MIGRATE.items() if f not in ("keras", "tf2") or layout in KERAS_LAYOUTS
    ]
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    for _ in range(args.rounds):
        for kind in kinds:
            before = dd_seconds(size)
            settle()
            got = run_probe(args, f"migrate:{kind}", layout)
            if not got:
                continue
            out = got["output_bytes"]
            got["disk_seconds_before"] = before * out / size
            got["disk_seconds_after"] = dd_seconds(out)
            # The faster of the two: one dd can stall (this VM's disk does, for seconds), and
            # a stalled dd would flatter the run; the faster is the stricter limit.
            got["disk_seconds"] = min(got["disk_seconds_before"], got["disk_seconds_after"])
            got["disk_gbps"] = out / got["disk_seconds"] / 1e9
            got["of_disk_limit"] = got["gbps"] / got["disk_gbps"]
            runs[kind].append(got)
            print(
                f"  migrate {kind:<17} {got['gbps']:5.2f} GB/s, dd {got['disk_gbps']:5.2f} GB/s: "
                f"{got['of_disk_limit']:.2f}x; peak anon +{(got['peak_anon_extra_bytes'] or 0) / MiB:.0f} MiB",
                flush=True,
            )
    out: dict[str, Any] = {}
    for kind, rs in runs.items():
        if not rs:
            continue
        out[kind] = {
            "gbps": statistics.median(r["gbps"] for r in rs),
            "of_disk_limit": statistics.median(r["of_disk_limit"] for r in rs),
            "of_disk_limit_best": max(r["of_disk_limit"] for r in rs),
            "peak_rss_extra_bytes": max(r["peak_rss_extra_bytes"] for r in rs),
            "peak_anon_extra_bytes": max((r["peak_anon_extra_bytes"] or 0) for r in rs),
            "model_bytes": rs[0].get("model_bytes"),
            "verified": all(r["verified"] is not False for r in rs),
            "rounds": rs,
        }
    return out


def migrate_goals(r: dict) -> dict[str, Any]:
    """Issue 36's goals for one layout: each format of ours >= 0.7x the disk limit (the
    median of the rounds), peak anonymous memory above the start (the model built before
    it) <= largest tensor + 2 windows, and never slower than the naive loop."""
    m, out = r.get("migrate", {}), {}
    bound = r["largest_tensor_bytes"] + 2 * WINDOW
    for kind, v in m.items():
        if not MIGRATE[kind][1]:
            continue
        out[f"{kind}_disk"] = {
            "goal": ">= 0.7x dd + fsync of the output's size (median of rounds)",
            "ratio": v["of_disk_limit"],
            "holds": v["of_disk_limit"] >= 0.7,
        }
        out[f"{kind}_memory"] = {
            "goal": "peak anonymous memory above start <= largest tensor + 2 windows",
            "ratio": v["peak_anon_extra_bytes"] / bound,
            "holds": v["peak_anon_extra_bytes"] <= bound,
        }
        loop = m.get(kind.replace("ours_", "loop_"))
        if loop:
            out[f"{kind}_vs_loop"] = {
                "goal": ">= the naive loop (median GB/s)",
                "ratio": v["gbps"] / loop["gbps"],
                "holds": v["gbps"] >= loop["gbps"],
            }
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else a / b


def goals(r: dict) -> dict[str, Any]:
    """The restated goals of issue 28 for one layout."""
    out: dict[str, Any] = {}
    warm = {m: v["median_s"] for m, v in r.get("warm", {}).items()}
    if warm:
        best_tf = min(TF_WARM, key=lambda m: warm[m])
        peak = r["memory"]["ours"]["peak_extra_bytes"]
        bound = r["largest_tensor_bytes"] + WINDOW
        speed = warm[best_tf] / warm["ours"]
        out["default_restore"] = {
            "goal": ">= 1.5x the best of TF's restores, peak extra <= largest + window",
            "best_tf": best_tf,
            "ratio": speed,
            "peak_extra_bytes": peak,
            "bound_bytes": bound,
            "holds": speed >= 1.5 and peak is not None and peak <= bound,
        }
        staged = warm["raw_read"] / warm["ours_staged"]
        out["staging_all"] = {"goal": ">= 1.0x raw read", "ratio": staged, "holds": staged >= 1.0}
        g, e = warm["saver_graph"] / warm["ours"], warm["saver_eager"] / warm["ours"]
        out["warm_vs_saver"] = {
            "goal": ">= 0.8x graph Saver (session built), >= 1.5x eager Saver",
            "ratio_graph": g,
            "ratio_eager": e,
            "holds": g >= 0.8 and e >= 1.5,
        }
    first = r.get("first", {})
    for front in ("graph", "eager", "keras"):
        ours = [s for s, (f, o) in FIRST.items() if f == front and o and s in first]
        theirs = [s for s, (f, o) in FIRST.items() if f == front and not o and s in first]
        if not ours or not theirs:
            continue
        best = min(theirs, key=lambda s: first[s]["median_total_s"])
        q = first[best]["median_total_s"] / first[ours[0]]["median_total_s"]
        q_restore = first[best]["median_restore_s"] / first[ours[0]]["median_restore_s"]
        out[f"first_{front}"] = {
            "goal": ">= 1.5x TF's best way, end to end",
            "best_tf": best,
            "ratio": q,
            "ratio_restore_only": q_restore,
            "holds": q >= 1.5,
        }
    return out


def machine() -> dict[str, Any]:
    import platform

    info: dict[str, Any] = {"cpu_count": os.cpu_count(), "python": platform.python_version()}
    try:
        import tensorflow as tf

        info["tensorflow"] = tf.__version__
        import keras_hub

        info["keras_hub"] = keras_hub.__version__
    except ImportError:
        pass
    with open("/proc/cpuinfo") as f:
        models = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
    info["cpu_model"] = models[0] if models else None
    info["git_commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return info


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def tables(result: dict) -> str:
    lines = []
    cols = [m for m in WARM_METHODS]
    lines.append("Warm restore, GB/s (median):\n")
    lines.append("| layout | " + " | ".join(cols) + " | load |")
    lines.append("|---" * (len(cols) + 2) + "|")
    for name, r in result["layouts"].items():
        if "bytes" not in r:
            continue
        w = r.get("warm", {})
        cells = [f"{w[m]['gbps']:.2f}" if m in w else "-" for m in cols]
        load = r.get("load_average") or [None]
        lines.append(
            f"| {name} ({r['bytes'] / MiB:.0f} MiB) | "
            + " | ".join(cells)
            + f" | {max(load):.1f} |"
        )
    lines.append("\nFirst restore in a fresh process, end to end (restore alone), median s:\n")
    scen = list(FIRST)
    lines.append("| layout | " + " | ".join(scen) + " |")
    lines.append("|---" * (len(scen) + 1) + "|")
    for name, r in result["layouts"].items():
        f = r.get("first", {})
        cells = [
            f"{f[s]['median_total_s']:.2f} ({f[s]['median_restore_s']:.2f})" if s in f else "-"
            for s in scen
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if not any(r.get("warm") or r.get("first") for r in result["layouts"].values()):
        lines = []  # --only-migrate
    lines.append(
        "\nMigrate: GB/s (median), x the dd limit (median, best), peak RSS above start / "
        "peak anonymous memory above start (MiB):\n"
    )
    kinds = list(MIGRATE)
    lines.append("| layout | " + " | ".join(kinds) + " |")
    lines.append("|---" * (len(kinds) + 1) + "|")
    for name, r in result["layouts"].items():
        m = r.get("migrate", {})
        cells = [
            f"{m[k]['gbps']:.2f}; {m[k]['of_disk_limit']:.2f}x, {m[k]['of_disk_limit_best']:.2f}x; "
            f"{m[k]['peak_rss_extra_bytes'] / MiB:.0f} / "
            f"{(m[k]['peak_anon_extra_bytes'] or 0) / MiB:.0f}"
            if k in m
            else "-"
            for k in kinds
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("\nGoals (issue 28: restores; issue 36: migrate):\n")
    lines.append("| layout | goal | measured | holds |")
    lines.append("|---|---|---|---|")
    for name, r in result["layouts"].items():
        for g, v in r.get("goals", {}).items():
            if g == "default_restore":
                got = (
                    f"{v['ratio']:.2f}x {v['best_tf']}; peak {v['peak_extra_bytes'] / MiB:.0f} MiB"
                    f" (bound {v['bound_bytes'] / MiB:.0f})"
                    if v["peak_extra_bytes"] is not None
                    else f"{v['ratio']:.2f}x"
                )
            elif g == "warm_vs_saver":
                got = f"{v['ratio_graph']:.2f}x graph, {v['ratio_eager']:.2f}x eager"
            elif g.startswith("first_"):
                got = f"{v['ratio']:.2f}x {v['best_tf']} (restore alone {v['ratio_restore_only']:.2f}x)"
            else:
                got = f"{v['ratio']:.2f}x"
            lines.append(f"| {name} | {g}: {v['goal']} | {got} | {'yes' if v['holds'] else 'NO'} |")
    return "\n".join(lines)


def draw_chart(result: dict, path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no chart"
    names = list(result["layouts"])
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
    ax = axes[0]
    show = ["raw_read", "saver_graph", "saver_eager", "checkpoint_restore", "tf_init_graph",
            "get_tensor_assign", "ours", "ours_staged"]  # fmt: skip
    width = 0.8 / len(show)
    for i, m in enumerate(show):
        vals = [result["layouts"][n].get("warm", {}).get(m, {}).get("gbps", 0) for n in names]
        ax.bar(np.arange(len(names)) + i * width, vals, width, label=m)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
    ax.set_ylabel("GB/s (warm, median)")
    ax.set_title("Warm restore")
    ax.legend(fontsize=7)
    ax = axes[1]
    fronts = ["graph", "eager", "keras"]
    width = 0.8 / len(fronts)
    for i, front in enumerate(fronts):
        vals = [result["layouts"][n].get("goals", {}).get(f"first_{front}", {}).get("ratio", 0)
                for n in names]  # fmt: skip
        ax.bar(np.arange(len(names)) + i * width, vals, width, label=front)
    ax.axhline(1.5, color="k", ls="--", lw=1, label="goal 1.5x")
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
    ax.set_ylabel("TF's best time / ours (end to end)")
    ax.set_title("First restore, fresh process")
    ax.legend(fontsize=7)
    ax = axes[2]
    kinds = list(MIGRATE)
    width = 0.8 / len(kinds)
    for i, k in enumerate(kinds):
        vals = [result["layouts"][n].get("migrate", {}).get(k, {}).get("gbps", 0) for n in names]
        ax.bar(np.arange(len(names)) + i * width, vals, width, label=k)
    ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
    ax.set_ylabel("GB/s")
    ax.set_title("Migrate (fresh process)")
    ax.legend(fontsize=7)
    loads = [max(r.get("load_average") or [0]) for r in result["layouts"].values()]
    fig.suptitle(
        f"tf1compat_init on real layouts, {result['machine'].get('cpu_model')}, "
        f"{result['machine'].get('cpu_count')} cores, load average up to {max(loads):.1f}"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layouts", default=",".join(ml.LAYOUTS))
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/tf1compat_layouts"))
    ap.add_argument("--bert-layers", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3, help="warm runs after one warm-up")
    ap.add_argument("--first", type=int, default=2, help="fresh processes per scenario")
    ap.add_argument("--no-migrate", action="store_true")
    ap.add_argument("--only-migrate", action="store_true", help="no restores: issue 36's run")
    ap.add_argument("--rounds", type=int, default=1, help="migrate runs of each kind, interleaved")
    ap.add_argument("--quick", action="store_true", help="BERT with 2 layers, 1 run of each")
    ap.add_argument("--out", type=Path, default=RESULTS / "layouts_speed.json")
    ap.add_argument("--clean", action="store_true", help="delete --workdir at the end")
    ap.add_argument("--probe", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.bert_layers = 2 if args.bert_layers is None else args.bert_layers
        args.repeats, args.first = 1, 1
    args.workdir.mkdir(parents=True, exist_ok=True)
    if args.probe:
        layout = args.layouts
        prefix = prefix_of(args.workdir, layout, args.bert_layers)
        kind, _, what = args.probe.partition(":")
        if kind == "warm":
            got = warm_child(layout, prefix, args.bert_layers, args.repeats, args.workdir / "x")
        elif kind == "first":
            got = first_child(layout, prefix, args.bert_layers, what, args.workdir)
        else:
            got = migrate_child(layout, prefix, args.bert_layers, what, args.workdir)
        print("PROBE " + json.dumps(got), flush=True)
        return 0

    started = time.time()
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "args": {"bert_layers": args.bert_layers, "repeats": args.repeats, "first": args.first},
        "load_average_start": list(os.getloadavg()),
        "layouts": {},
    }
    for layout in args.layouts.split(","):
        prefix = ensure_checkpoint(args.workdir, layout, args.bert_layers)
        hot_page_cache(prefix)
        print(f"{layout}: {prefix}", flush=True)
        r = {} if args.only_migrate else (run_probe(args, "warm", layout) or {})
        r.setdefault(
            "largest_tensor_bytes",
            max(ml.nbytes([t]) for t in tensors_of(layout, args.bert_layers)),
        )
        r["load_average"] = [os.getloadavg()[0]] + list(r.get("load_average", []))
        first: dict[str, Any] = {}
        scenarios = [s for s in FIRST if layout in KERAS_LAYOUTS or not s.startswith("keras")]
        for _ in range(0 if args.only_migrate else args.first):
            for s in scenarios:
                got = run_probe(args, f"first:{s}", layout)
                if got:
                    first.setdefault(s, []).append(got)
        r["first"] = {
            s: {
                "runs": runs,
                "median_total_s": statistics.median(x["total_s"] for x in runs),
                "median_restore_s": statistics.median(x["restore_s"] for x in runs),
                "verified": all(x["verified"] for x in runs),
            }
            for s, runs in first.items()
        }
        r["load_average"].append(os.getloadavg()[0])
        if not args.no_migrate:
            r["migrate"] = migrate_layout(args, layout, prefix)
        r["load_average"].append(os.getloadavg()[0])
        r["goals"] = goals(r) if r.get("warm") else {}
        r["goals"].update(migrate_goals(r))
        result["layouts"][layout] = r
        for g, v in r["goals"].items():
            print(f"  {g}: {'holds' if v['holds'] else 'does NOT hold'} ({v['goal']})", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))  # what is done so far
    result["load_average_end"] = list(os.getloadavg())
    result["wall_s"] = time.time() - started
    verified = [
        (args.only_migrate or r.get("verified", False))
        and all(f["verified"] for f in r.get("first", {}).values())
        and all(m.get("verified") is not False for m in r.get("migrate", {}).values())
        for r in result["layouts"].values()
    ]
    result["all_values_verified"] = all(verified)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    note = draw_chart(result, args.out.with_suffix(".png"))
    if note:
        result["chart"] = note
        args.out.write_text(json.dumps(result, indent=1))
    print(tables(result))
    print(
        f"\nvalues verified: {result['all_values_verified']}; {result['wall_s']:.0f} s; {args.out}"
    )
    if args.clean:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
