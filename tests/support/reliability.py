"""Shared by the reliability corpus: checkpoints, a broken copy of each, and front ends.

Every checkpoint here holds a two-layer MLP under ``model/`` (``model/dense/kernel``
[4, 3], ``model/dense/bias`` [3], ``model/out/kernel`` [3, 2], ``model/out/bias`` [2]),
plus, in the name-based ones, ``model/ema/dense/bias`` [3] and ``global_step``. Every
front end builds the same model with targets named ``dense/kernel`` ... (no scope), so the
one map that fits all of them is :data:`BASE_MAP`, ``{"model/": "/"}``. Initial values
differ from the checkpoint's, so "nothing changed" is a value comparison.

Importing this module imports TensorFlow.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from support.reliability_light import same_bits, tree_digest  # noqa: F401 (re-exported)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

v1 = tf.compat.v1

#: (layer name, inputs, units) of the model every front end builds.
LAYERS = (("dense", 4, 3), ("out", 3, 2))
BASE_MAP = {"model/": "/"}


def layer_values(layers=LAYERS, dtype="float32", offset=0.0) -> dict[str, np.ndarray]:
    """``name/kernel`` and ``name/bias`` for each layer, every element distinct."""
    out = {}
    for i, (name, n_in, n_out) in enumerate(layers):
        base = offset + 100.0 * (i + 1)
        out[f"{name}/kernel"] = (base + np.arange(n_in * n_out).reshape(n_in, n_out)).astype(dtype)
        out[f"{name}/bias"] = (-base - np.arange(n_out)).astype(dtype)
    return out


#: What the checkpoints hold (model/ + these names).
CKPT_VALUES = layer_values()
#: What the freshly built targets hold before any load.
INITIAL_VALUES_OFFSET = 0.5


# -- writing checkpoints ----------------------------------------------------------------------


def write_name_based(prefix: str | Path, *, shards: int = 1, layers=LAYERS) -> str:
    """A TF1 ``Saver`` checkpoint of the MLP under ``model/``.

    With ``shards=2`` the second half of the layers goes to the second shard (for
    :data:`LAYERS`: ``out`` there, ``dense`` in the first).
    """
    prefix = str(prefix)
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    g = tf.Graph()
    values = layer_values(layers)
    second = {name for name, _, _ in layers[(len(layers) + 1) // 2 :]}

    def device_fn(op: Any) -> str:
        layer = op.name.split("/")[1] if op.name.startswith("model/") else ""
        return "/cpu:1" if shards > 1 and layer in second else "/cpu:0"

    with g.as_default(), g.device(device_fn):
        with v1.variable_scope("model"):
            for name, value in values.items():
                v1.get_variable(name, initializer=tf.constant(value))
            if "dense/bias" in values:
                v1.get_variable("ema/dense/bias", initializer=tf.constant(values["dense/bias"]))
        step = v1.train.get_or_create_global_step()
        saver = v1.train.Saver(sharded=shards > 1)
        config = v1.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=True)
        with v1.Session(graph=g, config=config) as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(step.assign(7))
            return saver.save(sess, prefix, global_step=7)


class _Dense(tf.Module):
    def __init__(self, kernel: np.ndarray, bias: np.ndarray) -> None:
        super().__init__()
        self.kernel = tf.Variable(kernel, name="kernel")
        self.bias = tf.Variable(bias, name="bias")


class MLPModule(tf.Module):
    """The MLP as a ``tf.Module``: object paths ``dense/kernel`` ... ."""

    def __init__(self, values: dict[str, np.ndarray], layers=LAYERS) -> None:
        super().__init__()
        for name, _, _ in layers:
            setattr(self, name, _Dense(values[f"{name}/kernel"], values[f"{name}/bias"]))


def write_object_based(prefix: str | Path) -> str:
    """A ``tf.train.Checkpoint(model=...)`` of the MLP: readable paths ``model/dense/kernel``."""
    prefix = str(prefix)
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    return tf.train.Checkpoint(model=MLPModule(CKPT_VALUES)).write(prefix)


# -- breaking copies -------------------------------------------------------------------------


def copy_checkpoint(prefix: str, dest: Path) -> str:
    """Copies a checkpoint's files (and its state file) into ``dest``; returns the new prefix."""
    dest.mkdir(parents=True, exist_ok=True)
    src_dir, base = os.path.split(prefix)
    for name in os.listdir(src_dir):
        if name.startswith(base + "."):
            shutil.copy(os.path.join(src_dir, name), dest / name)
    return str(dest / base)


def data_files(prefix: str) -> list[str]:
    d, base = os.path.split(prefix)
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.startswith(base + ".data-"))


def flip_byte(path: str, pos: int, mask: int = 0x10) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ mask]))


def entry(prefix: str, key: str) -> Any:
    from tf1compat_init.bundle.reader import BundleReader

    return BundleReader(prefix).entries[key]


# -- front ends ------------------------------------------------------------------------------


def initial_values(layers=LAYERS, dtype="float32") -> dict[str, np.ndarray]:
    return layer_values(layers, dtype, offset=INITIAL_VALUES_OFFSET)


@dataclass
class Spec:
    """The model a front end builds: layers and dtype; ``empty``/``unbuilt`` variants."""

    layers: tuple = LAYERS
    dtype: str = "float32"
    unbuilt: bool = False

    @property
    def empty(self) -> bool:
        return not self.layers


class Model:
    """A front end's model: ``load(path, amap)`` and ``snapshot()`` (name -> value)."""

    def snapshot(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def load(self, path: Any, amap: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


class EngineModel(Model):
    """Eager ``tf.Variable`` s named ``dense/kernel`` ...; the engine's plan and apply."""

    def __init__(self, spec: Spec) -> None:
        self.variables = {
            name: tf.Variable(value, name=name)
            for name, value in initial_values(spec.layers, spec.dtype).items()
        }

    def snapshot(self) -> dict[str, np.ndarray]:
        return {n: v.numpy() for n, v in self.variables.items()}

    def load(self, path: Any, amap: Any) -> Any:
        from tf1compat_init import open_checkpoint, plan_restore
        from tf1compat_init.apply import apply_plan
        from tf1compat_init.variables import collect_targets, target_specs

        info = open_checkpoint(path)
        targets = collect_targets(self.variables.values())
        plan = plan_restore(info, target_specs(targets), amap)
        return apply_plan(plan, targets)


class V1GraphModel(Model):
    """``get_variable`` s in a TF1 graph with a live session; load = init + run initializers."""

    def __init__(self, spec: Spec) -> None:
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.variables = {
                name: v1.get_variable(name, initializer=tf.constant(value))
                for name, value in initial_values(spec.layers, spec.dtype).items()
            }
            init = v1.global_variables_initializer()
        self.session = v1.Session(graph=self.graph)
        self.session.run(init)

    def snapshot(self) -> dict[str, np.ndarray]:
        return self.session.run(self.variables) if self.variables else {}

    def load(self, path: Any, amap: Any) -> Any:
        from tf1compat_init import v1 as tci_v1

        with self.graph.as_default():
            report = tci_v1.init_from_checkpoint(path, amap)
            init = v1.global_variables_initializer()
        self.session.run(init)
        return report

    def close(self) -> None:
        self.session.close()


class V1GraphVerifyModel(V1GraphModel):
    """The v1 graph front end with ``verify=True``: checksums checked at call time."""

    def load(self, path: Any, amap: Any) -> Any:
        from tf1compat_init import v1 as tci_v1

        with self.graph.as_default():
            report = tci_v1.init_from_checkpoint(path, amap, verify=True)
            init = v1.global_variables_initializer()
        self.session.run(init)
        return report


class V1EagerModel(EngineModel):
    """``tf1compat_init.v1.init_from_checkpoint`` in eager mode, ``var_list=`` the variables."""

    def load(self, path: Any, amap: Any) -> Any:
        from tf1compat_init import v1 as tci_v1

        return tci_v1.init_from_checkpoint(path, amap, var_list=list(self.variables.values()))


class KerasModel(Model):
    """A Sequential of Dense layers named ``dense``, ``out``; ``load_checkpoint``."""

    def __init__(self, spec: Spec) -> None:
        keras = tf.keras
        init = initial_values(spec.layers, spec.dtype)
        layers = [
            keras.layers.Dense(
                n_out,
                name=name,
                dtype=spec.dtype,
                kernel_initializer=keras.initializers.Constant(init[f"{name}/kernel"]),
                bias_initializer=keras.initializers.Constant(init[f"{name}/bias"]),
            )
            for name, _, n_out in spec.layers
        ]
        if not layers:
            layers = [keras.layers.Flatten()]  # built, but without a single weight
        n_in = spec.layers[0][1] if spec.layers else 4
        inputs = [] if spec.unbuilt else [keras.Input((n_in,))]
        self.model = keras.Sequential(inputs + layers)

    def snapshot(self) -> dict[str, np.ndarray]:
        return keras_snapshot(self.model)

    def load(self, path: Any, amap: Any) -> Any:
        from tf1compat_init.keras import load_checkpoint

        return load_checkpoint(self.model, path, amap)


class CheckpointModel(EngineModel):
    """A ``tf.Module`` (object paths ``dense/kernel`` ...); ``tf1compat_init.checkpoint.restore``."""

    def __init__(self, spec: Spec) -> None:
        if spec.unbuilt:  # restore() hands a Keras root to the Keras front end
            self.module = KerasModel(spec).model
            self.variables = {}
            return
        self.module = MLPModule(initial_values(spec.layers, spec.dtype), spec.layers)
        self.variables = {
            f"{name}/{w}": getattr(getattr(self.module, name), w)
            for name, _, _ in spec.layers
            for w in ("kernel", "bias")
        }

    def load(self, path: Any, amap: Any) -> Any:
        from tf1compat_init.checkpoint import restore

        return restore(self.module, path, amap)


def keras_snapshot(model: Any) -> dict[str, np.ndarray]:
    """Model-relative weight name -> value (empty for an unbuilt model)."""
    if not model.built or not model.weights:
        return {}
    from tf1compat_init.keras import weight_names

    return {n: np.array(w.numpy()) for n, w in weight_names(model).items()}


FRONTENDS = {
    "engine": EngineModel,
    "v1_graph": V1GraphModel,
    "v1_graph_verify": V1GraphVerifyModel,
    "v1_eager": V1EagerModel,
    "keras": KerasModel,
    "checkpoint": CheckpointModel,
}


def same_values(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype
        and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes()
        for k in a
    )


# -- the CLI ---------------------------------------------------------------------------------


@dataclass
class CliResult:
    rc: int
    stdout: str
    stderr: str


def run_cli(*args: Any, cwd: Any = None, timeout: float = 120, **kwargs: Any) -> CliResult:
    """``python -m tf1compat_init ARGS`` in a subprocess (PYTHONPATH from tests/conftest.py)."""
    proc = subprocess.run(
        [sys.executable, "-m", "tf1compat_init", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        **kwargs,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


# -- the corpus ------------------------------------------------------------------------------


def _copy(ckpts: dict, which: str, dest: Path) -> str:
    return copy_checkpoint(ckpts[which], dest)


def make_source(case_id: str, ckpts: dict, dest: Path) -> dict[str, str]:
    """Makes the (broken) checkpoint of a case under ``dest``.

    Returns:
        ``path`` (what the caller passes), ``prefix`` (the checkpoint prefix it names),
        ``dir`` (its directory), for formatting the expected messages.
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if case_id == "nonexistent":
        path = str(dest / "nope" / "model.ckpt")
        return {"path": path, "prefix": path, "dir": str(dest / "nope")}
    if case_id == "empty_dir":
        return {"path": str(dest), "prefix": "", "dir": str(dest)}
    which = "sharded" if case_id in ("missing_shard", "flipped_byte_second_shard") else "name"
    if case_id == "object_for_name":
        which = "object"
    if case_id in PRISTINE_SOURCES:
        prefix = ckpts[which]
        return {"path": prefix, "prefix": prefix, "dir": os.path.dirname(prefix)}
    prefix = _copy(ckpts, which, dest)
    path = prefix
    files = data_files(prefix)
    if case_id == "state_file_deleted":
        (dest / "checkpoint").write_text(f'model_checkpoint_path: "{os.path.basename(prefix)}"\n')
        for f in [*files, prefix + ".index"]:
            os.remove(f)
        path = str(dest)
    elif case_id == "index_without_data":
        for f in files:
            os.remove(f)
    elif case_id == "missing_shard":
        os.remove(files[1])
    elif case_id == "truncated_data":
        os.truncate(files[0], os.path.getsize(files[0]) - 5)
    elif case_id in ("flipped_byte", "flipped_byte_second_shard"):
        e = entry(prefix, "model/out/kernel")
        flip_byte(files[e.shard_id], e.offset + 3)
    elif case_id == "truncated_index":
        index = prefix + ".index"
        os.truncate(index, os.path.getsize(index) // 2)
    elif case_id == "garbage_index":
        rng = np.random.default_rng(6)
        Path(prefix + ".index").write_bytes(rng.integers(0, 256, 300, dtype=np.uint8).tobytes())
    else:
        raise ValueError(f"unknown case {case_id!r}")
    return {"path": path, "prefix": prefix, "dir": str(dest)}


#: Cases that read a pristine checkpoint (nothing to break).
PRISTINE_SOURCES = {
    "object_for_name",
    "map_typo_scope",
    "map_typo_key",
    "map_reversed",
    "map_matches_nothing",
    "map_object_keys_on_name_based",
    "two_keys_one_target",
    "shape_mismatch",
    "dtype_mismatch",
    "empty_model",
    "unbuilt_model",
}


@dataclass
class Case:
    """One bad input, what every applicable front end must raise, and what it proves.

    ``fragments`` are formatted with ``path``, ``prefix`` and ``dir`` of the source and
    must all appear in the message. ``per_frontend`` overrides ``(error, fragments)``
    where a front end words or types it differently on purpose.
    """

    id: str
    error: str
    fragments: tuple[str, ...]
    proves: str
    amap: Any = None
    spec: Spec = None  # type: ignore[assignment]
    frontends: tuple[str, ...] = (
        "engine",
        "v1_graph",
        "v1_graph_verify",
        "v1_eager",
        "keras",
        "checkpoint",
    )
    per_frontend: dict = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.amap is None:
            self.amap = BASE_MAP
        if self.spec is None:
            self.spec = Spec()
        if self.per_frontend is None:
            self.per_frontend = {}

    def expected(self, frontend: str) -> tuple[str, tuple[str, ...]]:
        return self.per_frontend.get(frontend, (self.error, self.fragments))


_NOT_BUILT = ("is not built", "model.build(")
_NOTHING_TO_RESTORE = ("no variables to restore at all",)

CASES = [
    Case(
        "nonexistent",
        "CheckpointNotFoundError",
        ("checkpoint {path} not found", "directory {dir} does not exist"),
        "a path that does not exist is named, with the first missing directory",
    ),
    Case(
        "empty_dir",
        "CheckpointNotFoundError",
        ("no checkpoint in directory {dir}", "no 'checkpoint' state file and no *.index"),
        "an empty directory is not silently 'no checkpoint, keep going'",
    ),
    Case(
        "state_file_deleted",
        "CheckpointNotFoundError",
        ("state file {dir}/checkpoint points to {prefix}", "{prefix}.index does not exist"),
        "a state file that points to a deleted checkpoint is named with its target",
    ),
    Case(
        "index_without_data",
        "CheckpointNotFoundError",
        ("{prefix} is incomplete", "missing {prefix}.data-00000-of-00001"),
        "an index without its data is found when the checkpoint is opened, not at first read",
    ),
    Case(
        "missing_shard",
        "CheckpointNotFoundError",
        ("missing {prefix}.data-00001-of-00002", "the index lists 2 data shard(s)"),
        "one missing shard of two is named at open time",
    ),
    Case(
        "truncated_data",
        "CheckpointCorruptError",
        ("{prefix} is truncated", "{prefix}.data-00000-of-00001 has", "'model/out/kernel'"),
        "a truncated data file is found at open time (a stat per shard), naming the tensor",
    ),
    Case(
        "flipped_byte",
        "CheckpointCorruptError",
        ("checksum mismatch for tensor 'model/out/kernel'", "{prefix}.data-00000-of-00001"),
        "one flipped bit in a data file is a checksum error naming the tensor and file",
        # v1 graph mode checks checksums at call time only with verify=True (the
        # v1_graph_verify front end); by default TF's RestoreV2 checks them when the
        # initializers run and assigns nothing (tests/frontends/v1/test_v1.py covers that).
        frontends=("engine", "v1_graph_verify", "v1_eager", "keras", "checkpoint"),
    ),
    Case(
        "flipped_byte_second_shard",
        "CheckpointCorruptError",
        ("checksum mismatch for tensor 'model/out/kernel'", "{prefix}.data-00001-of-00002"),
        "damage in the second shard is found before anything from the first is assigned",
        # v1 graph mode checks checksums at call time only with verify=True (the
        # v1_graph_verify front end); by default TF's RestoreV2 checks them when the
        # initializers run and assigns nothing (tests/frontends/v1/test_v1.py covers that).
        frontends=("engine", "v1_graph_verify", "v1_eager", "keras", "checkpoint"),
    ),
    Case(
        "truncated_index",
        "CheckpointCorruptError",
        ("corrupt checkpoint index {prefix}.index",),
        "a cut index is refused with its path",
    ),
    Case(
        "garbage_index",
        "CheckpointCorruptError",
        ("corrupt checkpoint index {prefix}.index",),
        "an index of random bytes is refused with its path",
    ),
    Case(
        "object_for_name",
        "CheckpointMismatchError",
        (
            "{prefix} is object-based",
            "object paths such as 'model/dense/bias/.ATTRIBUTES/VARIABLE_VALUE'",
            "tf1compat_init.checkpoint.restore()",
        ),
        "TF1 names against a tf.train.Checkpoint say which format it is and what loads it",
        frontends=("engine", "v1_graph", "v1_graph_verify", "v1_eager"),
    ),
    Case(
        "map_object_keys_on_name_based",
        "AssignmentMapError",
        ("{prefix} is name-based", "such as 'model/dense/kernel'"),
        "object-path keys against a TF1 checkpoint say which format it is",
        amap={"model/dense/kernel/.ATTRIBUTES/VARIABLE_VALUE": "dense/kernel"},
    ),
    Case(
        "map_typo_scope",
        "AssignmentMapError",
        ("rule {{'modle/': '/'}}", "no key under 'modle/'", "['global_step', 'model/']"),
        "a misspelt scope names the rule and the scopes that exist",
        amap={"modle/": "/"},
    ),
    Case(
        "map_typo_key",
        "AssignmentMapError",
        ("'model/dense/kernal' is not in the checkpoint", "did you mean 'model/dense/kernel'"),
        "a misspelt key names it and the nearest real key",
        amap={"model/": "/", "model/dense/kernal": "dense/kernel"},
    ),
    Case(
        "map_reversed",
        "AssignmentMapError",
        ("rule {{'/': 'model/'}}", "looks reversed", "did you mean {{'model/': '/'}}"),
        "a map written target-first is recognised and the corrected map shown",
        amap={"/": "model/"},
    ),
    Case(
        "map_matches_nothing",
        "AssignmentMapError",
        ("no variable to restore is under 'encoder/'", "['dense/', 'out/']"),
        "a rule that matches nothing (TF: a silent no-op) is an error",
        amap={"model/": "encoder/"},
    ),
    Case(
        "two_keys_one_target",
        "AssignmentMapError",
        (
            "target 'dense/bias' is written by two rules",
            "'model/dense/bias'",
            "'model/ema/dense/bias'",
            "on_conflict='last'",
        ),
        "two checkpoint keys for one variable (TF: last wins, silently) name both rules",
        amap={"model/": "/", "model/ema/dense/bias": "dense/bias"},
    ),
    Case(
        "shape_mismatch",
        "CheckpointMismatchError",
        (
            "dense/bias <- model/dense/bias: shape [5] vs checkpoint [3]",
            "dense/kernel <- model/dense/kernel: shape [4, 5] vs checkpoint [4, 3]",
            "Nothing was changed",
        ),
        "every mismatched shape is listed with both shapes before anything is assigned",
        spec=Spec(layers=(("dense", 4, 5), ("out", 5, 2))),
    ),
    Case(
        "dtype_mismatch",
        "CheckpointMismatchError",
        ("dense/kernel <- model/dense/kernel: dtype float64 vs checkpoint float32",),
        "a dtype mismatch (TF: found only when the initializer runs) is found at plan time",
        spec=Spec(dtype="float64"),
    ),
    Case(
        "empty_model",
        "AssignmentMapError",
        _NOTHING_TO_RESTORE,
        "a model without variables is an error, not a silent no-op",
        spec=Spec(layers=()),
        per_frontend={
            "v1_eager": ("AssignmentMapError", ("neither var_list= nor the assignment map",)),
            "keras": ("KerasModelError", ("has no weights",)),
            "checkpoint": ("TargetError", ("has no variables to restore",)),
        },
    ),
    Case(
        "unbuilt_model",
        "KerasModelError",
        _NOT_BUILT,
        "an unbuilt Keras model says how to build it",
        spec=Spec(unbuilt=True),
        frontends=("keras", "checkpoint"),
    ),
]
CASES_BY_ID = {c.id: c for c in CASES}


def check_case(case: Case, frontend: str, model: Model, src: dict, watched: Path) -> Exception:
    """Runs one corpus case on one front end and checks the three promises.

    1. the exact error type (a :class:`~tf1compat_init.errors.Tf1CompatError`);
    2. a message that names the path, key, shapes or rule (``case.fragments``);
    3. nothing changed: every variable has its value from before, and no file under
       ``watched`` (the source's directory and any output place) was added or changed.
    """
    import pytest

    from tf1compat_init.errors import Tf1CompatError

    error, fragments = case.expected(frontend)
    before = model.snapshot()
    files = tree_digest(watched)
    with pytest.raises(Tf1CompatError) as info:
        model.load(src["path"], case.amap)
    message = str(info.value)
    assert type(info.value).__name__ == error, f"{type(info.value).__name__}: {message}"
    for fragment in fragments:
        assert fragment.format(**src) in message, f"{fragment.format(**src)!r} not in {message!r}"
    assert same_values(model.snapshot(), before), "a variable changed"
    assert tree_digest(watched) == files, "a file was added or changed"
    return info.value


def write_rich(prefix: str | Path) -> str:
    """A small 2-shard ``Saver`` checkpoint with several dtypes, strings and stored slices.

    Keys: ``a/kernel`` float32 [5, 3] and ``a/step`` int64 (shard 0), ``b/table``
    float64 [6, 4] in 3 partitions (stored as slices over both shards), ``b/mask`` bool,
    ``b/vocab`` string (shard 1), ``global_step``.
    """
    prefix = str(prefix)
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    g = tf.Graph()

    def device_fn(op: Any) -> str:
        return "/cpu:1" if op.name.startswith("b/") and "part_0" not in op.name else "/cpu:0"

    with g.as_default(), g.device(device_fn):
        v1.get_variable("a/kernel", initializer=tf.constant(layer_values()["dense/kernel"][:, :3]))
        v1.get_variable(
            "a/kernel_5x3", initializer=tf.constant(np.linspace(-1, 1, 15, dtype=np.float32))
        )
        v1.get_variable("a/step", initializer=tf.constant(np.int64(2**40 + 3)))
        v1.get_variable(
            "b/table",
            initializer=tf.constant(np.arange(24, dtype=np.float64).reshape(6, 4) / 3),
            partitioner=v1.fixed_size_partitioner(3),
        )
        v1.get_variable("b/mask", initializer=tf.constant([True, False, True]))
        v1.get_variable("b/vocab", initializer=tf.constant([b"alpha", b"", "\u00fc".encode()]))
        step = v1.train.get_or_create_global_step()
        saver = v1.train.Saver(sharded=True)
        config = v1.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=True)
        with v1.Session(graph=g, config=config) as sess:
            sess.run(v1.global_variables_initializer())
            return saver.save(sess, prefix, global_step=step)
