# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``LinearModel``: the V2 linear model (a weighted sum of feature columns plus a bias).

What ``LinearClassifier`` / ``LinearRegressor`` / ``LinearEstimator`` and the linear part
of ``DNNLinearCombined*`` build: one ``<column>/weights`` variable per column and a
``bias_weights``, under ``linear/linear_model``, with TF 2.15's names and initial values.
"""

from __future__ import annotations

import collections.abc
import re
from typing import Any

import tensorflow as tf

from ._columns import CategoricalColumn, DenseColumn, FeatureColumn, FeatureTransformationCache

__all__ = ["LinearModel", "is_feature_column_v2"]

_FeatureColumn = FeatureColumn
_DenseColumn = DenseColumn
_FeatureTransformationCache = FeatureTransformationCache
_CategoricalColumn = CategoricalColumn


def is_feature_column_v2(feature_columns: Any) -> bool:
    """Whether every column is a ``tf.feature_column`` v2 column (TF 2.15's check)."""
    return all(
        isinstance(column, _FeatureColumn) and column._is_v2_column  # noqa: SLF001
        for column in feature_columns
    )


def _normalize_feature_columns(feature_columns: Any) -> list:
    # tf.feature_column's own rules and messages for a model's columns.
    if isinstance(feature_columns, _FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, collections.abc.Iterator):
        feature_columns = list(feature_columns)
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    for column in feature_columns:
        if not isinstance(column, _FeatureColumn):
            raise ValueError(
                "Items of feature_columns must be a FeatureColumn. "
                f"Given (type {type(column)}): {column}."
            )
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    by_name: dict = {}
    for column in feature_columns:
        if column.name in by_name:
            raise ValueError(
                f"Duplicate feature column name found for columns: {column} "
                f"and {by_name[column.name]}. This usually means that these columns refer to "
                "same base feature. Either one must be discarded or a "
                "duplicated but renamed item must be inserted in "
                "features dict."
            )
        by_name[column.name] = column
    return sorted(feature_columns, key=lambda column: column.name)


def _scope_name(column_name: str) -> str:
    """A column's name as a variable scope: characters TF refuses there become ``_``."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", column_name)


class _StateManager:
    """Creates and keeps the columns' variables and resources (lookup tables).

    What ``tf.__internal__.feature_column.StateManager`` does for a Keras layer, with
    ``tf.compat.v1.get_variable``, so the variables take the enclosing variable scope's
    name and partitioner as in TF 2.15.
    """

    def __init__(self, trainable: bool) -> None:
        self._trainable = trainable
        self._variables: dict = collections.defaultdict(dict)
        self._resources: dict = collections.defaultdict(dict)

    def create_variable(
        self,
        feature_column: Any,
        name: str,
        shape: Any,
        dtype: Any = None,
        trainable: bool = True,
        use_resource: bool = True,
        initializer: Any = None,
    ) -> Any:
        if name in self._variables[feature_column]:
            raise ValueError("Variable already exists.")
        var = tf.compat.v1.get_variable(
            name,
            shape=shape,
            dtype=dtype or tf.float32,
            initializer=initializer,
            trainable=self._trainable and trainable,
            use_resource=use_resource,
        )
        self._variables[feature_column][name] = var
        return var

    def get_variable(self, feature_column: Any, name: str) -> Any:
        if name in self._variables[feature_column]:
            return self._variables[feature_column][name]
        raise ValueError("Variable does not exist.")

    def add_variable(self, feature_column: Any, var: Any) -> None:
        self._variables[feature_column][var.name] = var

    def add_resource(self, feature_column: Any, resource_name: str, resource: Any) -> None:
        self._resources[feature_column][resource_name] = resource

    def has_resource(self, feature_column: Any, resource_name: str) -> bool:
        return resource_name in self._resources[feature_column]

    def get_resource(self, feature_column: Any, resource_name: str) -> Any:
        if resource_name not in self._resources[feature_column]:
            raise ValueError("Resource does not exist.")
        return self._resources[feature_column][resource_name]


class LinearModel:
    """The linear model of TF 2.15's V2 linear estimators: ``sum(x W) + b`` over columns.

    Args:
        feature_columns: ``tf.feature_column`` v2 columns, dense or categorical.
        units: the logits' size.
        sparse_combiner: ``'sum'``, ``'mean'`` or ``'sqrtn'``: how a multivalent
            categorical column's weights combine within an example.
        trainable: whether the variables are trainable.
        name: the variable scope, ``'linear/linear_model'`` in the linear estimators.

    Raises:
        ValueError: a column that is neither dense nor categorical (TF 2.15's message),
            no columns, or two with one name.

    Example:
        >>> model = LinearModel([tf.feature_column.numeric_column("x")])  # doctest: +SKIP
        >>> logits = model({"x": x})  # in a graph  # doctest: +SKIP
    """

    def __init__(
        self,
        feature_columns: Any,
        units: int = 1,
        sparse_combiner: str = "sum",
        trainable: bool = True,
        name: str = "linear_model",
    ) -> None:
        self._feature_columns = _normalize_feature_columns(feature_columns)
        for column in self._feature_columns:
            if not isinstance(column, (_DenseColumn, _CategoricalColumn)):
                raise ValueError(
                    "Items of feature_columns must be either a "
                    f"DenseColumn or CategoricalColumn. Given: {column}"
                )
        self._units = units
        self._sparse_combiner = sparse_combiner
        self._trainable = trainable
        self.name = name
        self._state_manager = _StateManager(trainable)
        self.bias: Any = None
        self._variables: list = []

    @property
    def feature_columns(self) -> list:
        return list(self._feature_columns)

    @property
    def variables(self) -> list:
        """Every variable: each column's state and weights (sorted by column), then the bias."""
        return list(self._variables)

    @property
    def state_manager(self) -> _StateManager:
        return self._state_manager

    def _build(self) -> None:
        # No name scope here: TF 2.15 opened only variable scopes for the variables.
        with tf.compat.v1.variable_scope(self.name, auxiliary_name_scope=False):
            for column in self._feature_columns:
                with tf.compat.v1.variable_scope(
                    _scope_name(column.name), auxiliary_name_scope=False
                ):
                    column.create_state(self._state_manager)
                    if isinstance(column, _CategoricalColumn):
                        first_dim = column.num_buckets
                    else:
                        first_dim = column.variable_shape.num_elements()
                    self._state_manager.create_variable(
                        column,
                        name="weights",
                        dtype=tf.float32,
                        shape=(first_dim, self._units),
                        initializer=tf.compat.v1.zeros_initializer(),
                        trainable=self._trainable,
                    )
                    self._variables.extend(self._state_manager._variables[column].values())  # noqa: SLF001
            self.bias = tf.compat.v1.get_variable(
                "bias_weights",
                shape=[self._units],
                dtype=tf.float32,
                initializer=tf.compat.v1.zeros_initializer(),
                trainable=self._trainable,
                use_resource=True,
            )
            self._variables.append(self.bias)

    def __call__(self, features: Any) -> tf.Tensor:
        """The logits, ``[batch_size, units]`` float32; creates the variables on first call.

        Raises:
            ValueError: ``features`` is not a dict, an unknown ``sparse_combiner``, or
                columns whose batch sizes differ (TF 2.15's messages).
        """
        if self.bias is None:
            self._build()
        if not isinstance(features, dict):
            raise ValueError(f"We expected a dictionary here. Instead we got: {features}")
        # TF 2.15's model was a Keras 2 layer, which cast floating inputs to float32 first.
        features = {key: _to_float32(value) for key, value in features.items()}
        with tf.name_scope(self.name.replace("/", "_")):
            cache = _FeatureTransformationCache(features)
            weighted_sums = []
            for column in self._feature_columns:
                with tf.name_scope(_scope_name(column.name)):
                    weights = self._state_manager.get_variable(column, "weights")
                    weighted_sums.append(self._weighted_sum(column, cache, weights))
            _check_batch_sizes(weighted_sums, self._feature_columns)
            no_bias = tf.math.add_n(weighted_sums, name="weighted_sum_no_bias")
            return tf.nn.bias_add(no_bias, self.bias, name="weighted_sum")

    def _weighted_sum(self, column: Any, cache: Any, weights: Any) -> tf.Tensor:
        if isinstance(column, _CategoricalColumn):
            # Each id selects its row of weights: an embedding lookup, combined per example.
            pair = column.get_sparse_tensors(cache, self._state_manager)
            ids = tf.sparse.reshape(pair.id_tensor, [tf.shape(pair.id_tensor)[0], -1])
            id_weights = pair.weight_tensor
            if id_weights is not None:
                id_weights = tf.sparse.reshape(id_weights, [tf.shape(id_weights)[0], -1])
            return tf.compat.v1.nn.safe_embedding_lookup_sparse(
                weights,
                ids,
                sparse_weights=id_weights,
                combiner=self._sparse_combiner,
                name="weighted_sum",
            )
        tensor = column.get_dense_tensor(cache, self._state_manager)
        num_elements = column.variable_shape.num_elements()
        tensor = tf.reshape(tensor, (tf.shape(tensor)[0], num_elements))
        return tf.linalg.matmul(tensor, weights, name="weighted_sum")


def _to_float32(value: Any) -> Any:
    if (
        isinstance(value, (tf.Tensor, tf.SparseTensor, tf.RaggedTensor))
        and value.dtype.is_floating
        and value.dtype != tf.float32
    ):
        return tf.cast(value, tf.float32)
    return value


def _check_batch_sizes(tensors: list, columns: list) -> None:
    expected, first = None, 0
    for i, tensor in enumerate(tensors):
        size = tf.compat.v1.Dimension(tf.compat.dimension_value(tensor.shape[0]))
        if size.value is None:
            continue
        if expected is None:
            expected, first = size, i
        elif not expected.is_compatible_with(size):
            raise ValueError(
                "Batch size (first dimension) of each feature must be same. "
                f"Batch size of columns ({columns[first].name}, {columns[i].name}): "
                f"({expected}, {size})"
            )
