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
# Modified from `tensorflow_estimator/python/estimator/inputs/pandas_io.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""``pandas_input_fn`` (``tf.compat.v1.estimator.inputs``, TF 2.15): a DataFrame, queue-fed."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np

from ._feeding import dequeue_batch

__all__ = ["pandas_input_fn"]


def _pandas() -> Any:
    try:
        import pandas as pd
    except (ImportError, OSError):
        return None
    return pd


def _unique_target_key(features: Any, name: str) -> str:
    if name in features:
        name += "_" + str(uuid.uuid4())
    return name


def pandas_input_fn(
    x: Any,
    y: Any = None,
    batch_size: int = 128,
    num_epochs: int | None = 1,
    shuffle: bool | None = None,
    queue_capacity: int | None = 1000,
    num_threads: int = 1,
    target_column: str = "target",
) -> Any:
    """An ``input_fn`` that feeds the rows of a pandas ``DataFrame`` in batches.

    As ``tf.compat.v1.estimator.inputs.pandas_input_fn``: features are ``x``'s columns;
    ``y`` (a ``Series``, or a ``DataFrame`` giving a dict of targets) must have ``x``'s
    index. ``queue_capacity=None``: ``len(x)`` (4x with ``shuffle``).

    Raises:
        TypeError: pandas is not installed, or ``target_column`` is not a string.
        ValueError: ``shuffle`` is not a bool, ``x`` has a column named
            ``target_column``, or the indexes of ``x`` and ``y`` differ.
    """
    pd = _pandas()
    if pd is None:
        raise TypeError(
            "pandas_input_fn should not be called without pandas installed"
            "\ntf1compat_init: `pip install pandas`, or use numpy_input_fn with the "
            "DataFrame's columns as a dict of arrays."
        )
    if not isinstance(shuffle, bool):
        raise ValueError(
            "shuffle must be provided and explicitly set as boolean "
            "(it is recommended to set it as True for training); "
            f"got {shuffle}"
        )
    if not isinstance(target_column, str):
        raise TypeError("target_column must be a string type")
    x = x.copy()
    y_columns = None
    if y is not None:
        if target_column in x:
            raise ValueError(
                f"Cannot use name {target_column} for target column: DataFrame already has a "
                f"column with that name: {x.columns}"
            )
        if not np.array_equal(x.index, y.index):
            raise ValueError(
                "Index for x and y are mismatched.\n"
                f"Index for x: {x.index}\n"
                f"Index for y: {y.index}\n"
            )
        if isinstance(y, pd.DataFrame):
            y_columns = [(column, _unique_target_key(x, column)) for column in list(y)]
            target_column = [v for _, v in y_columns]
            x[target_column] = y
        else:
            x[target_column] = y
    if queue_capacity is None:
        queue_capacity = 4 * len(x) if shuffle else len(x)
    min_after_dequeue = max(queue_capacity / 4, 1)

    def input_fn() -> Any:
        columns = dequeue_batch(
            x, queue_capacity, batch_size, shuffle, num_threads, num_epochs, min_after_dequeue
        )
        features = dict(zip(list(x.columns), columns[1:], strict=True))
        if y is None:
            return features
        if isinstance(target_column, list):
            keys = [k for k, _ in y_columns]
            values = [features.pop(column) for column in target_column]
            return features, dict(zip(keys, values, strict=True))
        return features, features.pop(target_column)

    return input_fn
