# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
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
# Modified from `tensorflow_estimator/python/estimator/canned/dnn.py` and
# `tensorflow_estimator/python/estimator/canned/linear.py` and
# `tensorflow_estimator/python/estimator/canned/dnn_linear_combined.py` and
# `tensorflow_estimator/python/estimator/canned/baseline.py` (v2.15.0) for tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator; the helpers upstream repeats in its V2 and v1
# canned estimators written once, for both.
"""What the V2 canned estimators (``canned/``) and the v1 ones (``v1/``) share.

Argument checks, per-layer summaries and batch-size plumbing that tensorflow-estimator
2.15 runs alike in both generations. No Keras: the v1 estimators import this without
``tf_keras``.
"""

from __future__ import annotations

import math
from typing import Any

import tensorflow as tf

__all__ = [
    "NO_COLUMNS",
    "add_layer_summary",
    "batch_size_and_checks",
    "check_no_sync_replicas_optimizer",
    "check_units",
    "column_learning_rate",
    "dnn_forward",
    "fraction_of_zero",
    "init_with_model_fn",
    "ps_partitioners",
    "require_hidden_units",
    "sum_logits",
    "validate_feature_columns",
    "validate_features",
    "weight_column_key",
]

#: the error when neither part of a wide-and-deep model has feature columns.
NO_COLUMNS = "Either linear_feature_columns or dnn_feature_columns must be defined."


def validate_features(features: Any) -> None:
    """Raises TF 2.15's ``ValueError`` unless ``features`` is a dict."""
    if not isinstance(features, dict):
        raise ValueError(
            f"features should be a dictionary of `Tensor`s. Given type: {type(features)}"
        )


def check_units(units: Any) -> None:
    """The DNN's (and the RNN's) check of ``units``, with TF 2.15's message."""
    if not isinstance(units, int):
        raise ValueError(f"units must be an int.  Given type: {type(units)}")


def require_hidden_units(dnn_hidden_units: Any) -> None:
    """A wide-and-deep model with DNN columns needs hidden units (TF 2.15's message)."""
    if not dnn_hidden_units:
        raise ValueError("dnn_hidden_units must be defined when dnn_feature_columns is specified.")


def column_learning_rate(cap: float, num_columns: int) -> float:
    """The learning rate a linear part gets by default: ``min(cap, 1/sqrt(num_columns))``."""
    return min(cap, 1.0 / math.sqrt(num_columns))


def sum_logits(dnn_logits: Any, linear_logits: Any) -> Any:
    """A wide-and-deep model's logits: the sum of its parts', or the one part's."""
    if dnn_logits is not None and linear_logits is not None:
        return dnn_logits + linear_logits
    return dnn_logits if dnn_logits is not None else linear_logits


def ps_partitioners(config: Any, input_layer_partitioner: Any) -> tuple[int, Any]:
    """The v1 estimators' ``(num_ps_replicas, input layer partitioner)``.

    The partitioner given, or TF 2.15's default: at most one part per parameter server,
    parts of at least 64 MiB.
    """
    num_ps_replicas = config.num_ps_replicas if config else 0
    return num_ps_replicas, input_layer_partitioner or tf.compat.v1.min_max_variable_partitioner(
        max_partitions=num_ps_replicas, min_slice_size=64 << 20
    )


def dnn_forward(
    net: Any,
    hidden_layers: list,
    dropout_layers: list,
    batch_norm_layers: list,
    tags: list,
    logits_layer: Any,
    logits_tag: str,
    training: bool,
) -> Any:
    """The DNN's forward pass (V2 and v1 alike): each hidden layer, then its dropout (when
    training) and batch normalization (when there are such layers), then its summaries;
    last the logits layer."""
    for i, dense in enumerate(hidden_layers):
        net = dense(net)
        if dropout_layers and training:
            net = dropout_layers[i](net, training=True)
        if batch_norm_layers:
            net = batch_norm_layers[i](net, training=training)
        add_layer_summary(net, tags[i])
    logits = logits_layer(net)
    add_layer_summary(logits, logits_tag)
    return logits


def add_layer_summary(value: tf.Tensor, tag: str) -> None:
    """The two summaries TF 2.15 writes per layer: zero fraction and an activation histogram."""
    tf.compat.v1.summary.scalar(f"{tag}/fraction_of_zero_values", tf.math.zero_fraction(value))
    tf.compat.v1.summary.histogram(f"{tag}/activation", value)


def check_no_sync_replicas_optimizer(optimizer: Any) -> None:
    """The wide-and-deep models train two optimizers, which ``SyncReplicasOptimizer`` can't."""
    if isinstance(optimizer, tf.compat.v1.train.SyncReplicasOptimizer):
        raise ValueError(
            "SyncReplicasOptimizer does not support multi optimizers case. Therefore, it is "
            "not supported in DNNLinearCombined model. If you want to use this optimizer, "
            "please use either DNN or Linear model."
        )


def validate_feature_columns(linear_feature_columns: Any, dnn_feature_columns: Any) -> list:
    """Both parts' columns together; at least one part must have some."""
    columns = list(linear_feature_columns or []) + list(dnn_feature_columns or [])
    if not columns:
        raise ValueError(NO_COLUMNS)
    return columns


def fraction_of_zero(variables: list) -> tf.Tensor:
    """The share of zero weights over all ``variables`` (a summary of TF 2.15's)."""
    with tf.name_scope("zero_fraction"):
        variables = tf.nest.flatten(variables)
        with tf.name_scope("total_size"):
            sizes = [tf.size(x, out_type=tf.int64) for x in variables]
            total_size = tf.math.add_n(sizes)
        with tf.name_scope("total_zero"):
            total_zero = tf.math.add_n(
                [
                    tf.compat.v1.cond(
                        tf.math.equal(size, tf.constant(0, dtype=tf.int64)),
                        true_fn=lambda: tf.constant(0, dtype=tf.float32),
                        false_fn=lambda x=x, size=size: (
                            tf.math.zero_fraction(x) * tf.cast(size, tf.float32)
                        ),
                        name="zero_count",
                    )
                    for x, size in zip(variables, sizes, strict=True)
                ]
            )
        with tf.name_scope("compute"):
            fraction = total_zero / tf.cast(total_size, tf.float32, name="float32_size")
        return tf.identity(fraction, name="zero_fraction_or_nan")


def weight_column_key(
    weight_column: Any, numeric_type: type | None = None, type_name: str = "NumericColumn"
) -> str | None:
    """The weight feature's key (baselines); the v1 one passes its column type and its name."""
    if weight_column is None:
        return None
    if isinstance(weight_column, str):
        return weight_column
    numeric = numeric_type or type(tf.feature_column.numeric_column("x"))
    if not isinstance(weight_column, numeric):
        raise TypeError(
            f"Weight column must be either a string or {type_name}. "
            f"Given type: {type(weight_column)}."
        )
    return weight_column.key()


def batch_size_and_checks(features: dict, weight_column_key: str | None) -> tuple:
    """The first feature's batch size, and asserts that every other feature has it."""
    checks, batch_size = [], None
    for key, feature in features.items():
        if key == weight_column_key:
            continue
        first_dim = tf.compat.v1.shape(feature)[0]
        if batch_size is None:
            batch_size = first_dim
        else:
            checks.append(tf.compat.v1.debugging.assert_equal(batch_size, first_dim))
    return checks, batch_size


def init_with_model_fn(
    est: Any,
    estimator_cls: type,
    model_fn: Any,
    model_dir: Any,
    config: Any,
    warm_start_from: Any,
    pass_config: bool,
    **model_fn_kwargs: Any,
) -> None:
    """``estimator_cls.__init__`` of a canned estimator ``est`` whose ``model_fn`` is fixed.

    Its ``model_fn(features, labels, mode, config)`` calls ``model_fn`` with those tensors,
    ``model_fn_kwargs`` and, for the v1 estimators (``pass_config``), the run's config
    (for partitioners; the V2 estimators build nothing from it).
    """

    def _model_fn(features: Any, labels: Any, mode: str, config: Any) -> Any:
        extra = {"config": config} if pass_config else {}
        return model_fn(features=features, labels=labels, mode=mode, **model_fn_kwargs, **extra)

    estimator_cls.__init__(
        est, model_fn=_model_fn, model_dir=model_dir, config=config, warm_start_from=warm_start_from
    )
