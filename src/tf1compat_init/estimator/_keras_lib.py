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
# called; a Keras 3 model is refused with advice; f-strings, shorter docstrings; the
# Estimator classes and config are this library's. Warm start, checkpoint names and the
# model_dir layout (`keras/keras_model.ckpt`) are upstream's.
"""``model_to_estimator``: a compiled Keras 2 model as an Estimator, as tf.estimator 2.15 did.

Reached as ``tensorflow_estimator.python.estimator.keras_lib`` after
``tf1compat_init.estimator.install()``, which is how ``tf_keras.estimator.model_to_estimator``
finds it.
"""

from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from ._keras2 import keras2
from ._keras_model_fn import (
    _DEFAULT_SERVING_KEY,
    FormattedKeyError,
    ModeKeys,
    _any_weight_initialized,
    _cast_tensor_to_floatx,
    _clone_and_build_model,
    _convert_estimator_io_to_keras,
    _convert_keras_metrics_to_estimator,
    _convert_tensor,
    _create_keras_model_fn,
    _extract_sample_weight_tensors,
    standardize_sample_weights,
)
from ._log import logger

# The rest of upstream's module: served at tensorflow_estimator's keras_lib path too.
_UPSTREAM_NAMES = (
    _DEFAULT_SERVING_KEY,
    ModeKeys,
    _cast_tensor_to_floatx,
    _convert_estimator_io_to_keras,
    _convert_keras_metrics_to_estimator,
    _convert_tensor,
    _extract_sample_weight_tensors,
)

__all__ = ["FormattedKeyError", "model_to_estimator", "standardize_sample_weights"]

_KERAS3_ADVICE = (
    "model_to_estimator needs a Keras 2 model, and {cls} is a Keras 3 model (TensorFlow "
    "{tf}'s tf.keras is Keras 3, which has no graph mode). Build the model with tf_keras: "
    "`import tf_keras` (or set TF_USE_LEGACY_KERAS=1 before importing TensorFlow so that "
    "tf.keras is tf_keras) and call tf_keras.estimator.model_to_estimator."
)


def _set_session(sess: Any) -> None:
    if tf.__version__.startswith("2.15."):
        tf.compat.v1.keras.backend.set_session(sess)
    else:
        from tf_keras.src import backend

        backend.set_session(sess)


def _save_first_checkpoint(
    keras_model: Any, custom_objects: Any, config: Any, save_object_ckpt: bool
) -> str:
    """Writes the model's weights to ``<model_dir>/keras/keras_model.ckpt`` (for warm start).

    Returns:
        The checkpoint's path; an existing one is kept.
    """
    keras_model_dir = os.path.join(config.model_dir, "keras")
    latest_path = tf.train.latest_checkpoint(keras_model_dir)
    if not latest_path:
        keras_weights = None
        if _any_weight_initialized(keras_model):
            keras_weights = keras_model.get_weights()
        if not tf.compat.v1.gfile.IsDirectory(keras_model_dir):
            tf.compat.v1.gfile.MakeDirs(keras_model_dir)
        with tf.Graph().as_default():
            tf.compat.v1.random.set_random_seed(config.tf_random_seed)
            tf.compat.v1.train.create_global_step()
            model = _clone_and_build_model(ModeKeys.TRAIN, keras_model, custom_objects)
            # The train function adds to the graph, so it is made before the session
            # (https://github.com/tensorflow/tensorflow/issues/27750).
            model._make_train_function()
            with tf.compat.v1.Session(config=config.session_config) as sess:
                if keras_weights:
                    model.set_weights(keras_weights)
                # The train function may have created optimizer variables too.
                keras2().__internal__.backend.initialize_variables(sess)
                latest_path = os.path.join(keras_model_dir, "keras_model.ckpt")
                if save_object_ckpt:
                    model._track_trackable(
                        tf.compat.v1.train.get_global_step(), "estimator_global_step"
                    )
                    model.save_weights(latest_path)
                else:
                    tf.compat.v1.train.Saver().save(sess, latest_path)
    return latest_path


def _get_file_from_google_storage(keras_model_path: str, model_dir: str) -> str:
    """Downloads a ``gs://`` Keras model to ``<model_dir>/keras/keras_model.h5``."""
    try:
        from google.cloud import storage
    except ImportError:
        raise TypeError(
            "Could not save model to Google cloud storage; please "
            "install `google-cloud-storage` via "
            "`pip install google-cloud-storage`."
        ) from None
    storage_client = storage.Client()
    path, blob_name = os.path.split(keras_model_path)
    _, bucket_name = os.path.split(path)
    keras_model_dir = os.path.join(model_dir, "keras")
    if not tf.compat.v1.gfile.Exists(keras_model_dir):
        tf.compat.v1.gfile.MakeDirs(keras_model_dir)
    file_name = os.path.join(keras_model_dir, "keras_model.h5")
    try:
        blob = storage_client.get_bucket(bucket_name).blob(blob_name)
        blob.download_to_filename(file_name)
    except Exception:
        raise ValueError(
            "Failed to download keras model, please check "
            "environment variable GOOGLE_APPLICATION_CREDENTIALS "
            "and model path storage.googleapis.com/{bucket}/{object}."
        ) from None
    logger.info(f"Saving model to {file_name}")
    del storage_client
    return file_name


def _refuse_keras3(keras_model: Any) -> None:
    module = type(keras_model).__module__ or ""
    if module.split(".")[0] == "keras" and not tf.__version__.startswith("2.15."):
        if not isinstance(keras_model, keras2().Model):
            raise TypeError(
                _KERAS3_ADVICE.format(cls=type(keras_model).__name__, tf=tf.__version__)
            )


def model_to_estimator(
    keras_model: Any = None,
    keras_model_path: Any = None,
    custom_objects: Any = None,
    model_dir: Any = None,
    config: Any = None,
    checkpoint_format: Any = "checkpoint",
    use_v2_estimator: bool = False,
    metric_names_map: Any = None,
    export_outputs: Any = None,
) -> Any:
    """An Estimator from a compiled Keras 2 model, warm-started from its current weights.

    As ``tf.keras.estimator.model_to_estimator`` in TF 2.15: the weights go to
    ``<model_dir>/keras/keras_model.ckpt`` first; ``checkpoint_format`` ``"checkpoint"``
    (object-based names, Functional and Sequential models only) or ``"saver"`` (variable
    names); ``use_v2_estimator`` picks the v2 Estimator over the v1 one.

    Raises:
        ValueError: neither or both of ``keras_model`` and ``keras_model_path``; a model
            that is not compiled; an unknown ``checkpoint_format``.
        TypeError: a Keras 3 model (build it with tf_keras).
    """
    from ._estimator import Estimator as EstimatorV2
    from ._estimator import _config_with_model_dir
    from .v1._estimator import Estimator

    if not (keras_model or keras_model_path):
        raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
    if keras_model and keras_model_path:
        raise ValueError("Please specity either `keras_model` or `keras_model_path`, but not both.")
    if keras_model:
        _refuse_keras3(keras_model)
        _assert_valid_model(keras_model, custom_objects)
    config = _config_with_model_dir(config, model_dir)
    if not keras_model:
        if keras_model_path.startswith("gs://") or "storage.googleapis.com" in keras_model_path:
            keras_model_path = _get_file_from_google_storage(keras_model_path, config.model_dir)
        logger.info("Loading models from %s", keras_model_path)
        keras_model = keras2().models.load_model(keras_model_path)
    else:
        logger.info("Using the Keras model provided.")

    if checkpoint_format is None or checkpoint_format == "checkpoint":
        if not (
            keras_model._is_graph_network or isinstance(keras_model, keras2().models.Sequential)
        ):
            raise ValueError(
                "Object-based checkpoints are currently not supported with subclassed models."
            )
        save_object_ckpt = True
    elif checkpoint_format == "saver":
        save_object_ckpt = False
    else:
        raise ValueError(
            f'Checkpoint format must be one of "checkpoint" or "saver". Got {checkpoint_format}'
        )

    if not hasattr(keras_model, "optimizer") or not keras_model.optimizer:
        raise ValueError(
            "The given keras model has not been compiled yet. "
            "Please compile the model with `model.compile()` "
            "before calling `model_to_estimator()`."
        )
    keras_model_fn = _create_keras_model_fn(
        keras_model, custom_objects, save_object_ckpt, metric_names_map, export_outputs
    )
    if _any_weight_initialized(keras_model):
        # The first session's GPUOptions stick.
        if config.session_config.HasField("gpu_options"):
            logger.warning(
                "The Keras backend session has already been set. "
                "The _session_config passed to model_to_estimator will not be used."
            )
    else:
        # Pass the config into keras backend's default session.
        _set_session(tf.compat.v1.Session(config=config.session_config))

    warm_start_path = None
    if keras_model._is_graph_network and config.is_chief:
        warm_start_path = _save_first_checkpoint(
            keras_model, custom_objects, config, save_object_ckpt
        )
    elif keras_model.built:
        logger.warning(
            "You are creating an Estimator from a Keras model manually "
            "subclassed from `Model`, that was already called on some "
            "inputs (and thus already had weights). We are currently "
            "unable to preserve the model's state (its weights) as "
            "part of the estimator in this case. Be warned that the "
            "estimator has been created using a freshly initialized "
            "version of your model.\n"
            "Note that this doesn't affect the state of the model "
            "instance you passed as `keras_model` argument."
        )
    estimator_cls = EstimatorV2 if use_v2_estimator else Estimator
    return estimator_cls(keras_model_fn, config=config, warm_start_from=warm_start_path)


def _assert_valid_model(model: Any, custom_objects: Any = None) -> None:
    keras = keras2()
    is_subclass = not model._is_graph_network and not isinstance(model, keras.models.Sequential)
    if is_subclass:
        try:
            with keras.utils.CustomObjectScope(custom_objects or {}):
                model.__class__.from_config(model.get_config())
        except NotImplementedError:
            raise ValueError(
                "Subclassed `Model`s passed to `model_to_estimator` must "
                "implement `Model.get_config` and `Model.from_config`."
            ) from None
