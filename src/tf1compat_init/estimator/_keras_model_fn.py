# Copyright 2018 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================
# Modified from `tensorflow_estimator/python/estimator/keras_lib.py` (v2.15.0) for tf1compat_init.
# Changes: Keras 2 is `tf.keras` on TF 2.15 and `tf_keras` after it, imported only when
# called; f-strings, shorter docstrings; this library's EstimatorSpec and PredictOutput;
# split from model_to_estimator (`_keras_lib.py`). Checkpoint names are upstream's.
"""The ``model_fn`` of ``model_to_estimator``: a Keras 2 model cloned into each mode's graph.

Split from ``_keras_lib`` (which serves these names at upstream's module path too).
"""

from __future__ import annotations

import collections
import re
from typing import Any

import tensorflow as tf

from ._export_output import PredictOutput
from ._keras2 import keras2
from ._log import logger
from ._spec import EstimatorSpec, ModeKeys

__all__ = ["FormattedKeyError", "standardize_sample_weights"]

_DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


class FormattedKeyError(KeyError):
    """KeyError whose message keeps its newlines (see https://bugs.python.org/issue2651)."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __str__(self) -> str:
        return self.message


def _cast_tensor_to_floatx(x: Any) -> Any:
    """Cast tensor to keras's floatx dtype if it is not already the same dtype."""
    floatx = keras2().backend.floatx()
    return x if x.dtype == floatx else tf.cast(x, floatx)


def _convert_tensor(x: Any) -> Any:
    """Create or cast tensor if needed."""
    if not tf.is_tensor(x):  # x is a numpy array
        x = tf.compat.v1.convert_to_tensor_or_sparse_tensor(x)
    return x


def _any_weight_initialized(keras_model: Any) -> bool:
    """Whether any weight of the Keras model has been initialized."""
    if keras_model is None:
        return False
    if tf.compat.v1.executing_eagerly_outside_functions():
        return True
    for layer in keras_model.layers:
        for weight in layer.weights:
            if hasattr(weight, "_keras_initialized"):
                return True
    return False


def _missing_keys_error(obj_name: Any, order_name: Any, key_order: Any, obj_keys: Any) -> Any:
    different_keys = set(key_order) - set(obj_keys)
    return FormattedKeyError(
        f"The dictionary passed into {obj_name} does not cover requested "
        f"{order_name} keys defined in the keras model."
        f"\n\tExpected keys: {set(key_order)}"
        f"\n\t{obj_name} keys: {set(obj_keys)}"
        f"\n\tMissed keys: {different_keys}"
    )


def _convert_estimator_io_to_keras(keras_model: Any, features: Any, labels: Any) -> tuple:
    """Estimator features and labels -> (Keras inputs, targets, sample weights), model order."""

    def _to_ordered_tensor_list(obj: Any, key_order: Any, obj_name: str, order_name: str) -> Any:
        if obj is None:
            return None
        if isinstance(obj, (list, tuple)):
            return [_convert_tensor(x) for x in obj]
        if isinstance(obj, dict):
            # More keys than the model asks for are fine; fewer are not.
            if set(key_order) - set(obj.keys()):
                raise _missing_keys_error(obj_name, order_name, key_order, obj.keys())
            return [_convert_tensor(obj[key]) for key in key_order]
        return [_convert_tensor(obj)]  # a single tensor

    features, sample_weight_tensors = _extract_sample_weight_tensors(features)
    input_names = None
    output_names = None
    if isinstance(features, dict):
        input_names = (
            keras_model.input_names
            if keras_model._is_graph_network
            else [f"input_{i}" for i in range(1, len(features) + 1)]
        )
    if isinstance(labels, dict):
        output_names = (
            keras_model.output_names
            if keras_model._is_graph_network
            else [f"output_{i}" for i in range(1, len(labels) + 1)]
        )

    if isinstance(keras_model.inputs, dict):
        # Keep input tensors as a dict if keras_model is built with dict input.
        input_tensors = {k: _convert_tensor(features[k]) for k in keras_model.inputs}
    elif keras_model.inputs is None and isinstance(features, dict):
        # Keep input tensors as a dict if keras_model input structure is unknown.
        input_tensors = {k: _convert_tensor(v) for k, v in features.items()}
    else:
        input_tensors = _to_ordered_tensor_list(features, input_names, "features", "inputs")
    target_tensors = _to_ordered_tensor_list(labels, output_names, "labels", "outputs")
    return input_tensors, target_tensors, sample_weight_tensors


def _extract_sample_weight_tensors(features: Any) -> tuple:
    if isinstance(features, dict) and set(features.keys()) == {"features", "sample_weights"}:
        return features["features"], features["sample_weights"]
    return features, None


def _clone_and_build_model(
    mode: str,
    keras_model: Any,
    custom_objects: Any,
    features: Any = None,
    labels: Any = None,
    optimizer_config: Any = None,
) -> Any:
    """Clone and build ``keras_model`` in the current graph for ``mode``.

    ``optimizer_config`` is taken beforehand in the model's own context: serializing the
    optimizer's hyperparameters in the Estimator's graph and session can fail.
    """
    keras = keras2()
    keras.backend.set_learning_phase(mode == ModeKeys.TRAIN)
    input_tensors, target_tensors, sample_weight_tensors = _convert_estimator_io_to_keras(
        keras_model, features, labels
    )
    compile_clone = mode != ModeKeys.PREDICT
    global_step = None
    if compile_clone:
        # The optimizer's iterations are the Estimator's global step.
        global_step = tf.compat.v1.train.get_or_create_global_step()
        keras.__internal__.backend.track_variable(global_step)

    clone = keras.__internal__.models.clone_and_build_model(
        keras_model,
        input_tensors,
        target_tensors,
        custom_objects,
        compile_clone=compile_clone,
        in_place_reset=(not keras_model._is_graph_network),
        optimizer_iterations=global_step,
        optimizer_config=optimizer_config,
    )
    if sample_weight_tensors is not None:
        sample_weight_tensors = standardize_sample_weights(
            sample_weight_tensors, clone.output_names
        )
        # Update calculated loss (model.total_loss) to include sample weights.
        clone._compile_weights_loss_and_weighted_metrics(sample_weight_tensors)
    return clone


def _convert_keras_metrics_to_estimator(model: Any, metric_names_map: Any = None) -> Any:
    """The model's compiled metrics by name (or by ``metric_names_map``), ``None`` if none."""
    if not getattr(model, "_compile_metrics", None):
        return None
    # Not model.metrics: metrics added with `add_metric` stay out.
    compiled_metrics = model._compile_metric_functions
    if metric_names_map:
        custom_map_keys = set(metric_names_map.keys())
        expected_keys = {m.name for m in compiled_metrics}
        unknown = expected_keys.difference(custom_map_keys)
        if unknown:
            raise ValueError(
                "Invalid `metric_names_map`. "
                f'The following keras model metric names:"{list(unknown)}" do not exist in '
                "the `metric_names_map` dictionary"
            )
        extra = custom_map_keys.difference(expected_keys)
        if extra:
            raise ValueError(
                "Invalid `metric_names_map`. "
                "There are unexpected keys in the `metric_names_map` "
                f"dictionary. Expected keys: {list(expected_keys)}, Received: {list(extra)}"
            )
        return {metric_names_map[m.name]: m for m in compiled_metrics}
    return {m.name: m for m in compiled_metrics}


def _create_keras_model_fn(
    keras_model: Any,
    custom_objects: Any = None,
    save_object_ckpt: bool = False,
    metric_names_map: Any = None,
    export_outputs: Any = None,
) -> Any:
    """The ``model_fn`` of a Keras Estimator: the model cloned into each mode's graph."""
    keras = keras2()
    if isinstance(keras_model.optimizer, keras.optimizers.experimental.Optimizer):
        # The new optimizers cannot run in a graph: convert to the legacy one.
        if tf.executing_eagerly():
            logger.warning(
                "You are using `tf.keras.optimizers.experimental.Optimizer` in TF "
                "estimator, which only supports "
                "`tf.keras.optimizers.legacy.Optimizer`. Automatically converting "
                "your optimizer to `tf.keras.optimizers.legacy.Optimizer`."
            )
            opt = keras.__internal__.optimizers.convert_to_legacy_optimizer(keras_model.optimizer)
            keras_model.optimizer = opt
        else:
            raise ValueError(
                "Please set your optimizer as an instance of "
                "`tf.keras.optimizers.legacy.Optimizer`, e.g., "
                "`tf.keras.optimizers.legacy.Adam`. Received optimizer "
                f"type: {type(keras_model.optimizer)}."
            )
    # The optimizer config is taken here, in the model's context (see _clone_and_build_model).
    try:
        if isinstance(keras_model.optimizer, (tuple, list)):
            optimizer_config = [opt.get_config() for opt in keras_model.optimizer]
        else:
            optimizer_config = keras_model.optimizer.get_config()
    except (NotImplementedError, AttributeError):
        optimizer_config = None  # TFOptimizers and custom optimizers have no config.

    def model_fn(features: Any, labels: Any, mode: str) -> EstimatorSpec:
        """model_fn for keras Estimator."""
        model = _clone_and_build_model(
            mode=mode,
            keras_model=keras_model,
            custom_objects=custom_objects,
            features=features,
            labels=labels,
            optimizer_config=optimizer_config,
        )
        # The output names must agree across replicas for a mirrored strategy's regroup.
        if tf.distribute.has_strategy():
            model_output_names = [re.compile(r"_\d$").sub("", n) for n in model.output_names]
        else:
            model_output_names = model.output_names
        predictions = dict(zip(model_output_names, model.outputs, strict=False))

        loss = None
        train_op = None
        eval_metric_ops = None
        if mode is not ModeKeys.PREDICT:
            if mode is ModeKeys.TRAIN:
                model._make_train_function()
            else:
                model._make_test_function()
            loss = model.total_loss
            eval_metric_ops = _convert_keras_metrics_to_estimator(model, metric_names_map)
        if mode is ModeKeys.TRAIN:
            train_op = model.train_function.updates_op

        if (
            not model._is_graph_network
            and hasattr(keras_model, "_original_attributes_cache")
            and keras_model._original_attributes_cache is not None
        ):
            # To avoid `model_fn` being destructive for the initial model argument.
            keras.__internal__.models.in_place_subclassed_model_state_restoration(keras_model)

        scaffold = None
        if save_object_ckpt:
            from tensorflow.python.checkpoint import checkpoint as trackable_util

            model._track_trackable(tf.compat.v1.train.get_global_step(), "estimator_global_step")
            # A Saver that maps variable names to object-checkpoint keys.
            object_graph = tf.compat.v2.__internal__.tracking.ObjectGraphView(model)
            var_list = object_graph.frozen_saveable_objects()
            saver = tf.compat.v1.train.Saver(var_list=var_list, sharded=True)
            saver._object_restore_saver = trackable_util.frozen_saver(model)
            scaffold = tf.compat.v1.train.Scaffold(saver=saver)

        final_export_outputs = {_DEFAULT_SERVING_KEY: PredictOutput(predictions)}
        if export_outputs is not None:
            different_keys = set(export_outputs.keys()) - set(model.output_names)
            if different_keys:
                # Upstream's message, its odd argument order included.
                raise FormattedKeyError(
                    f"The list passed into {model.output_names} does not cover requested "
                    f"{export_outputs} keys defined in the keras model."
                    f"\n\tExpected keys: {set(export_outputs.keys())}"
                    f"\n\t{model.output_names} keys: {set(model.output_names)}"
                    f"\n\tMissed keys: {different_keys}"
                )
            for key, export_output_cls in export_outputs.items():
                final_export_outputs[key] = export_output_cls(predictions[key])

        return EstimatorSpec(
            mode=mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=final_export_outputs,
            scaffold=scaffold,
        )

    return model_fn


def standardize_sample_weights(x_weight: Any, output_names: list) -> list:
    """Maps a ``sample_weight`` argument to one entry per model output."""
    if x_weight is None or (isinstance(x_weight, (list, tuple)) and len(x_weight) == 0):
        return [None for _ in output_names]
    if len(output_names) == 1:
        if isinstance(x_weight, (list, tuple)) and len(x_weight) == 1:
            return x_weight
        if isinstance(x_weight, dict) and output_names[0] in x_weight:
            return [x_weight[output_names[0]]]
        return [x_weight]
    if isinstance(x_weight, (list, tuple)):
        if len(x_weight) != len(output_names):
            raise ValueError(
                f"Provided `sample_weights` was a list of {len(x_weight)} elements, but the "
                f"model has {len(output_names)} outputs. You should provide one "
                "`sample_weights`array per model output."
            )
        return x_weight
    if isinstance(x_weight, collections.abc.Mapping):
        unknown = set(x_weight.keys()).difference(output_names)
        if unknown:
            raise ValueError(
                f"Unknown entries in sample_weights dictionary: {list(unknown)}. "
                f"Only expected following keys: {output_names}"
            )
        return [x_weight.get(name) for name in output_names]
    raise TypeError(
        "The model has multiple outputs, so `sample_weights` "
        "should be either a list or a dict. "
        "Provided `sample_weights` type not understood: " + str(x_weight)
    )
