# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``Estimator.export_saved_model``: a TF1 SavedModel of the serving graph (tf.estimator 2.15).

The serving graph is the ``serving_input_receiver_fn``'s placeholders fed into
``model_fn(mode=PREDICT)``; the latest (or given) checkpoint is restored into it and
saved with ``tf.compat.v1.saved_model.Builder``: one SignatureDef per ``export_outputs``
entry (``serving_default`` always among them), assets from the ``ASSET_FILEPATHS``
collection, ``assets_extra`` copied beside them. It is written to
``<base>/temp-<timestamp>`` and renamed to ``<base>/<timestamp>`` when complete; on any
error the temporary directory (and ``<base>``, if this call created it) is removed, so
nothing half-written stays on disk. ``experimental_export_all_saved_models`` adds the
TRAIN and EVAL graphs as MetaGraphs tagged ``train`` / ``eval`` (variables saved once,
from the first of TRAIN, EVAL, PREDICT), as tf.estimator does.
"""

from __future__ import annotations

import collections
import os
import time
from typing import Any

import tensorflow as tf

from ._estimator_train import create_global_step
from ._export_output import get_export_outputs
from ._export_supervised import EvalOutput, TrainOutput
from ._fn_calls import call_model_fn
from ._log import logger
from ._receiver import SINGLE_RECEIVER_DEFAULT_NAME
from ._spec import ModeKeys

__all__ = [
    "build_all_signature_defs",
    "export_all_saved_models",
    "get_temp_export_dir",
    "get_timestamped_export_dir",
]


_MAX_ATTEMPTS = 10
_RECEIVER_ADVICE = (
    "tf1compat_init: serving_input_receiver_fn must return "
    "tf1compat_init.estimator.export.ServingInputReceiver(features, receiver_tensors) "
    "(or TensorServingInputReceiver when model_fn takes one tensor); it returned {what}. "
    "build_raw_serving_input_receiver_fn / build_parsing_serving_input_receiver_fn make "
    "such a function."
)


def get_timestamped_export_dir(export_dir_base: Any) -> bytes:
    """``<base>/<seconds since the epoch>``, a name not yet taken (waits up to 10 s for one)."""
    for attempt in range(1, _MAX_ATTEMPTS + 1):
        result = os.path.join(
            tf.compat.as_bytes(export_dir_base), tf.compat.as_bytes(str(int(time.time())))
        )
        if not tf.io.gfile.exists(result):
            return result
        time.sleep(1)
        logger.warning(
            "Directory %s already exists; retrying (attempt %d/%d)",
            tf.compat.as_str(result),
            attempt,
            _MAX_ATTEMPTS,
        )
    raise RuntimeError(
        f"Failed to obtain a unique export directory name after {_MAX_ATTEMPTS} attempts."
    )


def get_temp_export_dir(timestamped_export_dir: bytes) -> bytes:
    """The sibling ``temp-<timestamp>`` (TF Serving ignores names that are not numbers)."""
    dirname, basename = os.path.split(timestamped_export_dir)
    return os.path.join(
        tf.compat.as_bytes(dirname), tf.compat.as_bytes("temp-" + tf.compat.as_str(basename))
    )


def _unfed_placeholder(inputs: Any, outputs: Any) -> Any:
    """The first Placeholder the outputs need that is not among the inputs, or ``None``."""
    fed = {t.name for t in inputs}
    todo = [t.op for t in outputs]
    seen: set = set()
    while todo:
        op = todo.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type == "Placeholder" and not all(o.name in fed for o in op.outputs):
            return op
        todo.extend(t.op for t in op.inputs if t.name not in fed)
    return None


def _tensor_names(info: Any) -> list[str]:
    kind = info.WhichOneof("encoding")
    if kind == "name":
        return [info.name]
    if kind == "coo_sparse":
        c = info.coo_sparse
        return [c.values_tensor_name, c.indices_tensor_name, c.dense_shape_tensor_name]
    return [n for part in info.composite_tensor.components for n in _tensor_names(part)]


def _check_servable(inputs: dict, signature: Any) -> None:
    graph = tf.compat.v1.get_default_graph()
    names = {k: _tensor_names(v) for k, v in signature.outputs.items()}
    outputs = [graph.get_tensor_by_name(n) for ns in names.values() for n in ns]
    flat_inputs = tf.nest.flatten(list(inputs.values()), expand_composites=True)
    op = _unfed_placeholder(flat_inputs, outputs)
    if op is not None:
        raise ValueError(
            f"The signature's input tensors {[t.name for t in flat_inputs]} are "
            f"insufficient to compute its output keys {list(names)} (respectively, "
            f"tensors {[t.name for t in outputs]}) because of the dependency on "
            f"`{op.name}` which is not given as a signature input."
        )


def _signature_report(signatures: dict, excluded: dict) -> None:
    by_method: dict = collections.defaultdict(list)
    for name, sig in signatures.items():
        by_method[sig.method_name].append(name)
    for method, friendly in (
        ("tensorflow/serving/classify", "Classify"),
        ("tensorflow/serving/regress", "Regress"),
        ("tensorflow/serving/predict", "Predict"),
        ("tensorflow/supervised/training", "Train"),
        ("tensorflow/supervised/eval", "Eval"),
    ):
        logger.info("Signatures INCLUDED in export for %s: %s", friendly, by_method[method] or None)
    if excluded:
        logger.info(
            "Signatures EXCLUDED from export because they cannot be be served via "
            "TensorFlow Serving APIs:"
        )
        for name, message in excluded.items():
            logger.info("'%s' : %s", name, message)
    if not signatures:
        logger.warning("Export includes no signatures!")
    elif tf.compat.v1.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in signatures:
        logger.warning("Export includes no default signature!")


def build_all_signature_defs(
    receiver_tensors: Any,
    export_outputs: dict,
    receiver_tensors_alternatives: Any = None,
    serving_only: bool = True,
) -> dict:
    """One SignatureDef per export output (and per alternative receiver), servable ones only.

    An output that cannot be served from these inputs (wrong input type for
    Classify / Regress, or a placeholder the inputs do not feed) is left out and logged,
    as tf.estimator does.
    """
    if not isinstance(receiver_tensors, dict):
        receiver_tensors = {SINGLE_RECEIVER_DEFAULT_NAME: receiver_tensors}
    if export_outputs is None or not isinstance(export_outputs, dict):
        raise ValueError(
            f"`export_outputs` must be a dict. Received {export_outputs} with type "
            f"{type(export_outputs).__name__}."
        )
    groups = [(None, receiver_tensors)]
    for name, alternative in (receiver_tensors_alternatives or {}).items():
        if not isinstance(alternative, dict):
            alternative = {SINGLE_RECEIVER_DEFAULT_NAME: alternative}
        groups.append((name, alternative))
    signatures, excluded = {}, {}
    for group, inputs in groups:
        for key, export_output in export_outputs.items():
            name = f"{key or 'None'}"
            if group is not None:
                name = f"{group or 'None'}:{name}"
            try:
                signature = export_output.as_signature_def(inputs)
                _check_servable(inputs, signature)
                signatures[name] = signature
            except ValueError as e:
                excluded[name] = str(e)
    _signature_report(signatures, excluded)
    if not serving_only:
        return signatures
    is_valid = tf.compat.v1.saved_model.is_valid_signature
    return {k: v for k, v in signatures.items() if is_valid(v)}


def _checkpoint_to_export(est: Any, checkpoint_path: Any) -> Any:
    checkpoint_path = checkpoint_path or est.latest_checkpoint()
    if checkpoint_path:
        return checkpoint_path
    if not est._warm_start_settings:
        raise ValueError(f"Couldn't find trained model at {est._model_dir}.")
    path = est._warm_start_settings.ckpt_to_initialize_from
    if tf.io.gfile.isdir(path):
        path = tf.train.latest_checkpoint(path)
    return path


def _receiver(receiver_fn: Any) -> Any:
    receiver = receiver_fn()
    for field in ("features", "receiver_tensors"):
        if not hasattr(receiver, field):
            what = f"a {type(receiver).__name__}"
            raise AttributeError(
                f"'{type(receiver).__name__}' object has no attribute '{field}'\n"
                + _RECEIVER_ADVICE.format(what=what)
            )
    return receiver


def _graph_saver(scaffold: Any) -> Any:
    if isinstance(scaffold.saver, tf.train.Checkpoint):
        raise NotImplementedError(
            "tf1compat_init: a Scaffold whose saver is a tf.train.Checkpoint cannot be "
            "exported; give the Scaffold a tf.compat.v1.train.Saver (or none)."
        )
    return scaffold.saver or tf.compat.v1.train.Saver(sharded=True)


_TAGS = {ModeKeys.TRAIN: "train", ModeKeys.EVAL: "eval", ModeKeys.PREDICT: "serve"}
_SIGNATURE_KEYS = {ModeKeys.TRAIN: "train", ModeKeys.EVAL: "eval"}


def _export_outputs_for_mode(spec: Any) -> dict:
    if spec.mode == ModeKeys.PREDICT:
        return get_export_outputs(spec.export_outputs, spec.predictions)
    output = TrainOutput if spec.mode == ModeKeys.TRAIN else EvalOutput
    return {_SIGNATURE_KEYS[spec.mode]: output(spec.loss, spec.predictions, spec.eval_metric_ops)}


def _add_meta_graph_for_mode(
    est: Any,
    builder: Any,
    receiver_fn: Any,
    checkpoint_path: Any,
    save_variables: bool,
    mode: str,
    strip_default_attrs: bool,
) -> None:
    with tf.Graph().as_default() as g:
        create_global_step(g)
        tf.compat.v1.random.set_random_seed(est._config.tf_random_seed)
        receiver = _receiver(receiver_fn)
        spec = call_model_fn(
            est._model_fn,
            receiver.features,
            getattr(receiver, "labels", None),
            mode,
            est.params,
            est.config,
        )
        signatures = build_all_signature_defs(
            receiver.receiver_tensors,
            _export_outputs_for_mode(spec),
            getattr(receiver, "receiver_tensors_alternatives", None),
            serving_only=mode == ModeKeys.PREDICT,
        )
        with tf.compat.v1.Session(config=est._session_config) as session:
            local_init_op = spec.scaffold.local_init_op
            if local_init_op is None:
                local_init_op = tf.compat.v1.train.Scaffold.default_local_init_op()
            saver = _graph_saver(spec.scaffold)
            try:
                saver.restore(session, checkpoint_path)
            except tf.errors.NotFoundError as e:
                raise ValueError(
                    "Could not load all requested variables from checkpoint. Please make "
                    "sure your model_fn does not expect variables that were not saved in "
                    "the checkpoint.\n\nEncountered error with mode `"
                    f"{mode}` while restoring checkpoint from: `{checkpoint_path}`. "
                    f"Full Traceback:\n\n{e}"
                ) from e
            if spec.train_op is not None:  # what the Builder's _add_train_op records
                tf.compat.v1.add_to_collection("saved_model_train_op", spec.train_op)
            kwargs = dict(
                tags=[_TAGS[mode]],
                signature_def_map=signatures,
                assets_collection=tf.compat.v1.get_collection(
                    tf.compat.v1.GraphKeys.ASSET_FILEPATHS
                ),
                main_op=local_init_op,
                saver=saver,
                strip_default_attrs=strip_default_attrs,
            )
            if save_variables:
                builder.add_meta_graph_and_variables(session, **kwargs)
            else:
                builder.add_meta_graph(**kwargs)


def _copy_assets_extra(temp_dir: bytes, assets_extra: dict) -> None:
    base = os.path.join(temp_dir, b"assets.extra")
    for dest_relative, source in assets_extra.items():
        dest = os.path.join(base, tf.compat.as_bytes(dest_relative))
        tf.io.gfile.makedirs(os.path.dirname(dest))
        tf.io.gfile.copy(source, dest)


def _modes(input_receiver_fn_map: dict) -> list:
    """The modes to export, TRAIN first: the first one saves the variables."""
    modes = [
        m for m in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT) if input_receiver_fn_map.get(m)
    ]
    if not modes:
        raise ValueError(f"No valid modes for exporting found. Got {input_receiver_fn_map.keys()}.")
    return modes


def export_all_saved_models(
    est: Any,
    export_dir_base: Any,
    input_receiver_fn_map: dict,
    assets_extra: dict | None = None,
    as_text: bool = False,
    checkpoint_path: Any = None,
    strip_default_attrs: bool = True,
) -> bytes:
    """Writes the SavedModel; returns its directory (bytes, as tf.estimator returns it)."""
    checkpoint_path = _checkpoint_to_export(est, checkpoint_path)
    modes = _modes(input_receiver_fn_map)
    export_dir = get_timestamped_export_dir(os.fspath(export_dir_base))
    temp_dir = get_temp_export_dir(export_dir)
    base = os.path.dirname(temp_dir)
    created = [p for p in (base, temp_dir) if not tf.io.gfile.exists(p)]
    try:
        builder = tf.compat.v1.saved_model.Builder(temp_dir)
        for i, mode in enumerate(modes):
            fn = input_receiver_fn_map[mode]
            _add_meta_graph_for_mode(
                est, builder, fn, checkpoint_path, i == 0, mode, strip_default_attrs
            )
        builder.save(as_text)
        if assets_extra:
            _copy_assets_extra(temp_dir, assets_extra)
        tf.io.gfile.rename(temp_dir, export_dir)
    except BaseException:
        # Remove what this call made: the temporary directory, and the base if it was new.
        if temp_dir in created and tf.io.gfile.exists(temp_dir):
            tf.io.gfile.rmtree(temp_dir)
        if base in created and tf.io.gfile.isdir(base) and not tf.io.gfile.listdir(base):
            tf.io.gfile.rmtree(base)
        raise
    logger.info("SavedModel written to: %s", tf.compat.as_str(export_dir))
    return export_dir
