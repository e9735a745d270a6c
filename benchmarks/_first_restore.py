"""First restore, end to end: what a program that warm-starts once pays, per front end.

Each scenario runs in a fresh process (``restore_speed.py --probe first:<scenario>``)
that has imported TensorFlow and numpy, as the user's program has. Timed from there:
importing the front end (ours only; TensorFlow's restores come with ``import
tensorflow``), building the variables, and the one restore, with whatever
construction it needs (a graph ``Saver`` and its ``Session``, a
``tf.train.Checkpoint``, a Keras model). The page cache is hot. The values are
checked afterwards, against the CRC32C the checkpoint stores for each tensor.

Front ends and TensorFlow's own way for each:

- ``v1 graph``: ``tf.compat.v1.train.Saver(var_list).restore(session, prefix)`` and
  ``tf.compat.v1.train.init_from_checkpoint`` + the variables' initializer, against
  ``tf1compat_init.v1.init_from_checkpoint`` + the initializer;
- ``eager``: ``tf.train.Checkpoint(...).restore(prefix)`` against
  ``tf1compat_init.checkpoint.restore``;
- ``keras``: Keras 3 cannot read a TensorFlow checkpoint, so its own way is
  ``model.load_weights`` of a ``.weights.h5`` file holding the same values (written
  once by the parent, untimed) against ``tf1compat_init.keras.load_checkpoint`` of
  the checkpoint. Skipped above 1 GiB.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MiB = 1 << 20
KERAS_MAX_BYTES = 1 << 30


@dataclass(frozen=True)
class Scenario:
    name: str
    front_end: str
    ours: bool
    label: str


SCENARIOS = [
    Scenario("graph_saver", "v1 graph", False, "Saver + Session + restore"),
    Scenario("graph_tf_init", "v1 graph", False, "tf init_from_checkpoint + initializer"),
    Scenario("graph_ours", "v1 graph", True, "tf1compat_init.v1.init_from_checkpoint"),
    Scenario("eager_tf", "eager", False, "tf.train.Checkpoint.restore"),
    Scenario("eager_ours", "eager", True, "tf1compat_init.checkpoint.restore"),
    Scenario("keras_tf", "keras", False, "Keras load_weights (.weights.h5)"),
    Scenario("keras_ours", "keras", True, "tf1compat_init.keras.load_checkpoint"),
]
BY_NAME = {s.name: s for s in SCENARIOS}


def _key(attr: str) -> str:
    return f"{attr}/.ATTRIBUTES/VARIABLE_VALUE"


def _holder_class(keras: Any) -> Any:
    class Holder(keras.Model):
        """A model that only holds weights, one per checkpoint tensor."""

        def __init__(self, shapes: dict[str, tuple[int, ...]]) -> None:
            super().__init__(name="holder")
            self.ws = {
                attr: self.add_weight(name=attr, shape=shape, initializer="zeros", dtype="float32")
                for attr, shape in shapes.items()
            }
            self.built = True  # weights made: saving and loading need no call first

        def call(self, x: Any) -> Any:
            return x

    return Holder


def write_weights_h5(shapes: dict[str, tuple[int, ...]], prefix: str, directory: Path) -> str:
    """Writes (or reuses) a ``.weights.h5`` of the checkpoint's values for Keras."""
    import tensorflow as tf

    path = directory / "holder.weights.h5"
    stamp = directory / "holder.json"
    described = json.dumps({"prefix": prefix, "version": 1})
    if path.exists() and stamp.exists() and stamp.read_text() == described:
        return str(path)
    reader = tf.train.load_checkpoint(prefix)
    with tf.device("/CPU:0"):
        model = _holder_class(tf.keras)(shapes)
        for attr, w in model.ws.items():
            w.assign(reader.get_tensor(_key(attr)))
    model.save_weights(str(path))
    del model
    gc.collect()
    stamp.write_text(described)
    return str(path)


def _graph_variables(tf: Any, shapes: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    return {
        _key(attr): tf.compat.v1.get_variable(
            attr, shape=shape, dtype=tf.float32, initializer=tf.compat.v1.zeros_initializer()
        )
        for attr, shape in shapes.items()
    }


def _run_graph(tf: Any, shapes: dict, prefix: str, device: str, how: str) -> tuple[dict, float]:
    graph = tf.Graph()
    with graph.as_default(), tf.device(device):
        variables = _graph_variables(tf, shapes)
        if how == "saver":
            saver = tf.compat.v1.train.Saver(var_list=variables)
        elif how == "tf_init":
            tf.compat.v1.train.init_from_checkpoint(prefix, dict(variables))
            init = tf.compat.v1.global_variables_initializer()
        else:
            from tf1compat_init import v1

            v1.init_from_checkpoint(prefix, dict(variables))
            init = tf.compat.v1.global_variables_initializer()
    session = tf.compat.v1.Session(graph=graph)
    t0 = time.perf_counter()
    with graph.as_default():
        if how == "saver":
            saver.restore(session, prefix)
        else:
            session.run(init)
    restore = time.perf_counter() - t0
    keys = list(variables)
    values = dict(zip(keys, session.run([variables[k] for k in keys]), strict=True))
    session.close()
    return values, restore


def _eager_variables(tf: Any, shapes: dict, device: str) -> dict[str, Any]:
    with tf.device(device):
        return {
            attr: tf.Variable(tf.zeros(shape, tf.float32), name=attr)
            for attr, shape in shapes.items()
        }


def _run_eager(tf: Any, shapes: dict, prefix: str, device: str, ours: bool) -> tuple[dict, float]:
    if ours:
        from tf1compat_init import checkpoint
    variables = _eager_variables(tf, shapes, device)
    root = tf.train.Checkpoint(**variables)
    t0 = time.perf_counter()
    if ours:
        checkpoint.restore(root, prefix)
    else:
        root.restore(prefix).expect_partial()  # as the warm benchmark; values checked after
    restore = time.perf_counter() - t0
    return {_key(a): v.numpy() for a, v in variables.items()}, restore


def _run_keras(
    tf: Any, shapes: dict, prefix: str, device: str, ours: bool, h5: str | None
) -> tuple[dict, float]:
    if ours:
        from tf1compat_init import keras as front
    with tf.device(device):
        model = _holder_class(tf.keras)(shapes)
    t0 = time.perf_counter()
    if ours:
        front.load_checkpoint(model, prefix, {attr: w for attr, w in model.ws.items()})
    else:
        model.load_weights(h5)
    restore = time.perf_counter() - t0
    return {_key(a): w.numpy() for a, w in model.ws.items()}, restore


def run_child(
    scenario: str, shapes: dict[str, tuple[int, ...]], prefix: str, device: str, h5: str | None
) -> dict[str, Any]:
    """One first restore in this (fresh) process; returns its times and whether it was right."""
    import tensorflow as tf

    s = BY_NAME[scenario]
    gc.collect()
    t0 = time.perf_counter()
    if s.front_end == "v1 graph":
        how = {"graph_saver": "saver", "graph_tf_init": "tf_init"}.get(scenario, "ours")
        values, restore = _run_graph(tf, shapes, prefix, device, how)
    elif s.front_end == "eager":
        values, restore = _run_eager(tf, shapes, prefix, device, s.ours)
    else:
        if h5 is None and not s.ours:
            raise SystemExit("Keras' own load_weights needs the .weights.h5 file")
        values, restore = _run_keras(tf, shapes, prefix, device, s.ours, h5)
    total = time.perf_counter() - t0
    return {"time_s": total, "restore_s": restore, "wrong": _wrong(prefix, values)}


def _wrong(prefix: str, values: dict[str, np.ndarray]) -> list[str]:
    from tf1compat_init import open_checkpoint
    from tf1compat_init.bundle.crc import crc32c, unmask_crc

    entries = open_checkpoint(prefix).bundle.entries
    return [
        k
        for k, v in values.items()
        if crc32c(np.ascontiguousarray(v)) != unmask_crc(entries[k].crc32c)
    ][:5]


def scenarios_for(nbytes: int) -> list[Scenario]:
    return [s for s in SCENARIOS if s.front_end != "keras" or nbytes <= KERAS_MAX_BYTES]


def measure(
    nbytes: int,
    repeats: int,
    probe: Callable[[str], dict[str, Any] | None],
    log: Callable[[str], None],
) -> dict[str, Any]:
    """``repeats`` fresh processes per scenario, round-robin; medians and ratios."""
    chosen = scenarios_for(nbytes)
    out: dict[str, Any] = {
        s.name: {
            "label": s.label,
            "front_end": s.front_end,
            "ours": s.ours,
            "times_s": [],
            "restore_s": [],
            "verified": True,
        }
        for s in chosen
    }
    for rep in range(repeats):
        for s in chosen:
            got = probe(s.name)
            r = out[s.name]
            if got is None:
                r["failed"] = True
                continue
            r["times_s"].append(got["time_s"])
            r["restore_s"].append(got["restore_s"])
            if got["wrong"]:
                r["verified"] = False
                r["wrong_values"] = got["wrong"]
            log(
                f"  [first restore, end to end {rep + 1}/{repeats}] {s.name:<14}"
                f" {got['time_s'] * 1e3:9.1f} ms (restore {got['restore_s'] * 1e3:.1f} ms)"
                f"{'  WRONG VALUES' if got['wrong'] else ''}"
            )
    for r in out.values():
        if r["times_s"]:
            r["median_s"] = statistics.median(r["times_s"])
            r["restore_median_s"] = statistics.median(r["restore_s"])
    return {"scenarios": out, "ratios": ratios(out)}


def ratios(out: dict[str, Any]) -> dict[str, float]:
    """TensorFlow's time / ours, per front end (above 1: ours is faster)."""
    result = {}
    for name, r in out.items():
        if r["ours"] or not r.get("median_s") or not r["verified"]:
            continue
        for other, o in out.items():
            if (
                o["ours"]
                and o["front_end"] == r["front_end"]
                and o.get("median_s")
                and o["verified"]
            ):
                result[f"{other}_vs_{name}"] = r["median_s"] / o["median_s"]
    return result


def table(result: dict[str, Any]) -> str:
    """Markdown: end-to-end first restores per size and front end (ms, median)."""
    lines = [
        "| checkpoint | front end | TensorFlow's way | ms | ours | ms | speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for size, entry in result["sizes"].items():
        first = entry.get("first_restore")
        if not first:
            continue
        sc = first["scenarios"]
        for tf_name, r in sc.items():
            if r["ours"]:
                continue
            for ours_name, o in sc.items():
                if not o["ours"] or o["front_end"] != r["front_end"]:
                    continue
                ratio = first["ratios"].get(f"{ours_name}_vs_{tf_name}")
                lines.append(
                    f"| {size} | {r['front_end']} | {r['label']} | {_ms(r)} | {o['label']}"
                    f" | {_ms(o)} | {f'{ratio:.2f}x' if ratio else '-'} |"
                )
    return "\n".join(lines)


def _ms(r: dict[str, Any]) -> str:
    if not r.get("median_s") or not r.get("verified"):
        return "-"
    return f"{r['median_s'] * 1e3:.0f}"


def draw(ax: Any, result: dict[str, Any]) -> None:
    """Bars of end-to-end first-restore time (ms) per size and front end."""
    groups = []
    for size, entry in result["sizes"].items():
        first = entry.get("first_restore")
        if not first:
            continue
        scenarios = first["scenarios"]
        for fe in dict.fromkeys(r["front_end"] for r in scenarios.values()):
            groups.append((size, fe, [r for r in scenarios.values() if r["front_end"] == fe]))
    if not groups:
        ax.set_visible(False)
        return
    palette = ["tab:blue", "tab:cyan", "tab:green", "tab:olive", "tab:purple"]
    colors: dict[str, str] = {}
    x = 0.0
    ticks, labels, shown = [], [], set()
    for size, fe, scenarios in groups:
        n = len(scenarios)
        for i, r in enumerate(scenarios):
            if not r.get("median_s"):
                continue
            if r["ours"]:
                color = "tab:red"
            else:
                color = colors.setdefault(r["label"], palette[len(colors) % len(palette)])
            ax.bar(
                x + i * 0.8 / n,
                r["median_s"] * 1e3,
                0.8 / n,
                color=color,
                edgecolor="black" if r["ours"] else None,
                label=None if r["label"] in shown else r["label"],
            )
            shown.add(r["label"])
        ticks.append(x + 0.4 - 0.4 / n)
        labels.append(f"{size}\n{fe}")
        x += 1.2
    ax.set_xticks(ticks)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("first restore, end to end, ms (median)")
    ax.set_yscale("log")
    ax.set_title(
        "First restore in a fresh process: front-end import + variables + restore"
        " (red: tf1compat_init)",
        fontsize=9,
    )
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
