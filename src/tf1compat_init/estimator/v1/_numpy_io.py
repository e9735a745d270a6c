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
# Modified from `tensorflow_estimator/python/estimator/inputs/numpy_io.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""``numpy_input_fn`` (``tf.compat.v1.estimator.inputs``, TF 2.15): numpy arrays, queue-fed."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from ._feeding import dequeue_batch

__all__ = ["numpy_input_fn"]

_TARGET_KEY = "__target_key__"


def _unique_target_key(features: dict) -> str:
    key = _TARGET_KEY
    while key in features:
        key += "_n"
    return key


def _features_as_ordered_dict(x: Any) -> collections.OrderedDict:
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return collections.OrderedDict(sorted(x.items(), key=lambda t: t[0]))
    if isinstance(x, np.ndarray):
        if x.size == 0:
            raise ValueError("x cannot be an empty array")
        return collections.OrderedDict({"__direct_np_input__": x})
    raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def numpy_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int = 1000,
    num_threads: int = 1,
) -> Any:
    """An ``input_fn`` that feeds a dict of numpy arrays (or one array) in batches.

    As ``tf.compat.v1.estimator.inputs.numpy_input_fn``: features keep ``x``'s keys (or
    are one tensor when ``x`` is an array), targets ``y``'s; ``num_epochs=None`` repeats
    forever with full batches (``dequeue_many``), otherwise the last batch may be short
    and the input ends after ``num_epochs`` passes. ``shuffle`` must be given.

    Raises:
        ValueError: ``shuffle`` is not a bool (at once); when the ``input_fn`` is called:
            empty ``x`` or ``y``, keys in both, or lengths that differ.
        TypeError: ``x`` is neither a dict nor an array (when called).

    Example:
        >>> fn = numpy_input_fn({"x": np.arange(4.0)}, np.arange(4), batch_size=2,
        ...                     shuffle=False)  # doctest: +SKIP
    """
    if not isinstance(shuffle, bool):
        raise ValueError(
            "shuffle must be provided and explicitly set as boolean "
            "(it is recommended to set it as True for training); "
            f"got {shuffle}"
        )

    def input_fn() -> Any:
        data = _features_as_ordered_dict(x)
        feature_keys = list(data.keys())
        if y is None:
            target_keys = None
        elif isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            ordered_y = collections.OrderedDict(sorted(y.items(), key=lambda t: t[0]))
            target_keys = list(ordered_y.keys())
            duplicate_keys = set(feature_keys).intersection(set(target_keys))
            if duplicate_keys:
                raise ValueError(
                    f"{len(duplicate_keys)} duplicate keys are found in both x and y: "
                    f"{duplicate_keys}"
                )
            data.update(ordered_y)
        else:
            target_keys = _unique_target_key(data)
            data[target_keys] = y
        if len({v.shape[0] for v in data.values()}) != 1:
            x_shapes = {k: data[k].shape for k in feature_keys}
            if target_keys is None:
                y_shapes = None
            elif isinstance(target_keys, str):
                y_shapes = y.shape
            else:
                y_shapes = {k: data[k].shape for k in target_keys}
            raise ValueError(
                "Length of tensors in x and y is mismatched. All "
                "elements in x and y must have the same length.\n"
                f"Shapes in x: {x_shapes}\n"
                f"Shapes in y: {y_shapes}\n"
            )
        batch = dequeue_batch(data, queue_capacity, batch_size, shuffle, num_threads, num_epochs)
        if batch:
            batch.pop(0)  # the row numbers
        if isinstance(x, np.ndarray):
            features = batch[0]
        else:
            features = dict(zip(feature_keys, batch[: len(feature_keys)], strict=True))
        if target_keys is None:
            return features
        if isinstance(target_keys, str):
            return features, batch[-1]
        return features, dict(zip(target_keys, batch[-len(target_keys) :], strict=True))

    return input_fn
