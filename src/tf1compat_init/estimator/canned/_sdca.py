# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``tf.estimator.experimental.LinearSDCA``: Stochastic Dual Coordinate Ascent for linear models.

As tensorflow-estimator 2.15: ``LinearClassifier`` (binary) and ``LinearRegressor``
(one-dimensional label) given ``optimizer=LinearSDCA(...)`` train with TensorFlow's SDCA
kernels (``SdcaOptimizerV2``, ``SdcaFprint``, still in TensorFlow 2.21). Each step:

- every categorical column's ids of the batch, pruned of out-of-vocabulary ids (< 0)
  and made unique per example (their weights summed), and every dense column's values
  plus a column of ones for the bias, go to one ``SdcaOptimizerV2`` call;
- it reads and writes each example's dual state (4 floats) in a dense hash table keyed
  by the example id's fingerprint, saved as ``ShardedMutableHashTable-<i>-of-<n>-keys``
  / ``-values``;
- its weight deltas go to ``<weight>_unshrunk`` variables, which a chief hook then
  copies to the model's weights (shrunk by ``l1 / l2`` where ``l1 > 0``).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.python.training.saving import saveable_object

from .._log import logger
from ._columns import CategoricalColumn, DenseColumn, FeatureTransformationCache

__all__ = ["LinearSDCA", "UpdateWeightsHook"]


_TABLE_NAME = "ShardedMutableHashTable"
_STATE_SIZE = 4  # the kernel's per-example state: dual, primal loss, dual loss, weight


class LinearSDCA:
    """SDCA for ``LinearClassifier`` / ``LinearRegressor`` (``tf.estimator.experimental.LinearSDCA``).

    Usable with v2 feature columns, ``sparse_combiner="sum"``, a binary classifier or a
    one-dimensional regressor. The ``input_fn`` gives ``example_id_column``: one string
    id per example, the same on every pass over the data.

    Args:
        example_id_column: the feature holding the example ids.
        num_loss_partitions: the number of workers training at once.
        num_table_shards: the number of shards of the example-state table.
        symmetric_l1_regularization: >= 0.
        symmetric_l2_regularization: > 0, typically > 1.
        adaptive: whether to sample examples adaptively.

    Example:
        >>> sdca = LinearSDCA(example_id_column="id", symmetric_l2_regularization=2.0)
        >>> est = LinearClassifier(columns, optimizer=sdca)  # doctest: +SKIP
    """

    def __init__(
        self,
        example_id_column: str,
        num_loss_partitions: int = 1,
        num_table_shards: int | None = None,
        symmetric_l1_regularization: float = 0.0,
        symmetric_l2_regularization: float = 1.0,
        adaptive: bool = False,
    ) -> None:
        self._example_id_column = example_id_column
        self._num_loss_partitions = num_loss_partitions
        self._num_table_shards = num_table_shards
        self._symmetric_l1_regularization = symmetric_l1_regularization
        self._symmetric_l2_regularization = symmetric_l2_regularization
        self._adaptive = adaptive

    def get_train_step(
        self,
        state_manager: Any,
        weight_column_name: Any,
        loss_type: str,
        feature_columns: Any,
        features: dict,
        targets: Any,
        bias_var: Any,
        global_step: Any,
    ) -> tuple:
        """``(sdca model, train op)`` for one batch (TF 2.15's signature)."""
        batch_size = tf.shape(targets)[0]
        cache = FeatureTransformationCache(features)
        dense, dense_weights, sparse, sparse_weights = [], [], [], []
        for column in sorted(feature_columns, key=lambda c: c.name):
            if isinstance(column, CategoricalColumn):
                pair = column.get_sparse_tensors(cache, state_manager)
                sparse.append(_unique_valid_ids(pair))
                sparse_weights.append(state_manager.get_variable(column, "weights"))
            elif isinstance(column, DenseColumn):
                if column.variable_shape.ndims != 1:
                    raise ValueError(
                        f"Column {type(column).__name__} has rank "
                        f"{column.variable_shape.ndims}, larger than 1."
                    )
                dense.append(column.get_dense_tensor(cache, state_manager))
                dense_weights.append(state_manager.get_variable(column, "weights"))
            else:
                raise ValueError(
                    f"LinearSDCA does not support column type {type(column).__name__}."
                )
        dense.append(tf.ones([batch_size, 1]))
        dense_weights.append(bias_var)
        if weight_column_name:
            example_weights = tf.reshape(features[weight_column_name], shape=[-1])
        else:
            example_weights = tf.ones([batch_size])
        model = _SdcaModel(
            sparse=sparse,
            dense=dense,
            labels=tf.cast(tf.reshape(targets, shape=[-1]), tf.float32),
            example_weights=example_weights,
            example_ids=features[self._example_id_column],
            sparse_weights=sparse_weights,
            dense_weights=dense_weights,
            loss_type=loss_type,
            l1=self._symmetric_l1_regularization,
            l2=self._symmetric_l2_regularization,
            num_loss_partitions=self._num_loss_partitions,
            num_table_shards=self._num_table_shards or 1,
            adaptive=self._adaptive,
        )
        return model, model.minimize(global_step)


def _unique_valid_ids(pair: Any) -> tuple:
    """``(example index, feature id, weight)`` of each distinct valid id of each example."""
    ids = pair.id_tensor
    if pair.weight_tensor is not None:
        weights = pair.weight_tensor.values
    else:
        weights = tf.ones([tf.shape(ids.indices)[0]], tf.float32)
    examples = tf.reshape(ids.indices[:, 0], [-1])
    flat = tf.cast(tf.reshape(ids.values, [-1]), tf.int64)
    # Out-of-vocabulary lookups give -1: no weight to train.
    valid = tf.math.greater_equal(flat, 0)
    flat = tf.boolean_mask(flat, valid)
    examples = tf.boolean_mask(examples, valid)
    weights = tf.boolean_mask(weights, valid)
    # One key per (example, id) pair, so repeats within an example merge.
    span = tf.math.reduce_max(flat) + 1
    keys, index = tf.unique(span * examples + flat)
    count = tf.shape(keys)[0]
    example_of_key = tf.math.unsorted_segment_min(examples, index, count)
    ids_of_key = keys - span * example_of_key
    summed = tf.reshape(tf.math.unsorted_segment_sum(weights, index, count), [-1])
    return example_of_key, ids_of_key, summed


class _TableSaveable(saveable_object.SaveableObject):
    """Saves an example-state table as ``<name>-keys`` and ``<name>-values`` (TF 2.15's keys)."""

    def __init__(self, handle: Any, keys: Any, values: Any, name: str) -> None:
        self._handle = handle
        specs = [
            saveable_object.SaveSpec(keys, "", name + "-keys"),
            saveable_object.SaveSpec(values, "", name + "-values"),
        ]
        super().__init__(handle, specs, name)

    def restore(self, restored_tensors: Any, restored_shapes: Any) -> Any:
        del restored_shapes
        with tf.compat.v1.colocate_with(self._handle):
            return tf.raw_ops.LookupTableImportV2(
                table_handle=self._handle, keys=restored_tensors[0], values=restored_tensors[1]
            )


class _StateTable:
    """The examples' SDCA state: ``num_shards`` dense hash tables, int64[2] -> float32[4]."""

    def __init__(self, num_shards: int) -> None:
        self._default = tf.constant([0.0] * _STATE_SIZE, tf.float32, name="default_value")
        self._handles = []
        self._num_shards = num_shards
        with tf.name_scope(_TABLE_NAME):
            for i in range(num_shards):
                name = f"{_TABLE_NAME}-{i + 1}-of-{num_shards}"
                handle = tf.raw_ops.MutableDenseHashTableV2(
                    empty_key=tf.constant([0, 0], tf.int64, name="empty_key"),
                    deleted_key=tf.constant([1, 1], tf.int64, name="deleted_key"),
                    shared_name="",
                    use_node_name_sharing=True,
                    value_dtype=tf.float32,
                    value_shape=[_STATE_SIZE],
                    name=name,
                )
                self._handles.append(handle)
                keys, values = self._export(handle)
                tf.compat.v1.add_to_collection(
                    tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS,
                    _TableSaveable(handle, keys, values, name),
                )

    @staticmethod
    def _export(handle: Any) -> tuple:
        with tf.compat.v1.colocate_with(handle):
            return tf.raw_ops.LookupTableExportV2(
                table_handle=handle, Tkeys=tf.int64, Tvalues=tf.float32
            )

    def _shards(self, keys: Any) -> Any:
        first = tf.reshape(tf.slice(keys, [0, 0], [-1, 1]), [-1])
        return tf.cast(tf.math.floormod(tf.math.abs(first), self._num_shards), tf.int32)

    def size(self) -> Any:
        return tf.math.add_n([tf.raw_ops.LookupTableSizeV2(table_handle=h) for h in self._handles])

    def lookup(self, keys: Any) -> Any:
        if self._num_shards == 1:
            return tf.raw_ops.LookupTableFindV2(
                table_handle=self._handles[0], keys=keys, default_value=self._default
            )
        shards = self._shards(keys)
        key_parts = tf.dynamic_partition(keys, shards, self._num_shards)
        values = [
            tf.raw_ops.LookupTableFindV2(table_handle=h, keys=k, default_value=self._default)
            for h, k in zip(self._handles, key_parts, strict=True)
        ]
        positions = tf.dynamic_partition(tf.range(tf.shape(keys)[0]), shards, self._num_shards)
        return tf.dynamic_stitch(positions, values)

    def insert(self, keys: Any, values: Any) -> Any:
        if self._num_shards == 1:
            return tf.raw_ops.LookupTableInsertV2(
                table_handle=self._handles[0], keys=keys, values=values
            )
        shards = self._shards(keys)
        key_parts = tf.dynamic_partition(keys, shards, self._num_shards)
        value_parts = tf.dynamic_partition(values, shards, self._num_shards)
        return tf.group(
            *[
                tf.raw_ops.LookupTableInsertV2(table_handle=h, keys=k, values=v)
                for h, k, v in zip(self._handles, key_parts, value_parts, strict=True)
            ]
        )

    def exported_values(self) -> list:
        return [self._export(h)[1] for h in self._handles]


def _unshrunk(var: Any) -> Any:
    """The variable SDCA accumulates into, named ``<var>_unshrunk``, starting at ``var``'s shape."""
    with tf.compat.v1.device(var.device):
        start = tf.compat.v1.cond(
            tf.compat.v1.is_variable_initialized(var), var.read_value, lambda: var.initial_value
        )
        return tf.Variable(tf.zeros_like(start, tf.float32), name=var.op.name + "_unshrunk")


class _SdcaModel:
    """One batch's SDCA step over the given weights, and the weight update after it."""

    def __init__(
        self,
        sparse: list,
        dense: list,
        labels: Any,
        example_weights: Any,
        example_ids: Any,
        sparse_weights: list,
        dense_weights: list,
        loss_type: str,
        l1: float,
        l2: float,
        num_loss_partitions: int,
        num_table_shards: int,
        adaptive: bool,
    ) -> None:
        if l2 <= 0.0:
            raise ValueError("symmetric_l2_regularization should be positive.")
        if l2 <= 1.0:
            logger.warning(
                "symmetric_l2_regularization for SDCA should typically be larger than for "
                "online optimization methods. Recommended value is of the order of the "
                "average L2 norm of the training examples."
            )
        if l1 < 0.0:
            raise ValueError("symmetric_l1_regularization should be non-negative.")
        self._sparse, self._dense = sparse, dense
        self._labels, self._example_weights, self._example_ids = (
            labels,
            example_weights,
            example_ids,
        )
        self._weights = list(sparse_weights) + list(dense_weights)
        self._num_sparse = len(sparse_weights)
        self._loss_type, self._l1, self._l2 = loss_type, l1, l2
        self._num_loss_partitions, self._adaptive = num_loss_partitions, adaptive
        self._unshrunk = [_unshrunk(w) for w in self._weights]
        self._table = _StateTable(num_table_shards)
        tf.compat.v1.summary.scalar("approximate_duality_gap", self.approximate_duality_gap())
        tf.compat.v1.summary.scalar("examples_seen", self._table.size())

    def _weights_sum(self, scope: str, fn: Any) -> Any:
        with tf.name_scope(scope):
            return tf.math.add_n(
                [tf.math.reduce_sum(fn(tf.cast(w, tf.float64))) for w in self._weights]
            )

    def approximate_duality_gap(self) -> Any:
        with tf.name_scope("sdca/approximate_duality_gap"):
            sums = []
            for values in self._table.exported_values():
                with tf.control_dependencies(sums):
                    sums.append(tf.math.reduce_sum(tf.cast(values, tf.float64), 0))
            total = tf.math.add_n(sums)
            l1 = self._l1 * self._weights_sum("sdca/l1_loss", tf.math.abs)
            l2 = self._l2 * self._weights_sum("sdca/l2_loss", tf.math.square) / 2.0
            return (total[1] + total[2] + l1 + 2.0 * l2) / total[3]

    def minimize(self, global_step: Any) -> Any:
        with tf.name_scope("sdca/minimize"):
            hashed_ids = tf.raw_ops.SdcaFprint(input=tf.convert_to_tensor(self._example_ids))
            state = self._table.lookup(hashed_ids)
            sparse_indices, gathered = [], []
            for unshrunk, (_, feature_ids, _) in zip(self._unshrunk, self._sparse, strict=False):
                unique = tf.cast(tf.unique(tf.cast(feature_ids, tf.int32))[0], tf.int64)
                sparse_indices.append(unique)
                gathered.append(tf.gather(unshrunk, unique))
            state_update, sparse_deltas, dense_deltas = tf.raw_ops.SdcaOptimizerV2(
                sparse_example_indices=[s[0] for s in self._sparse],
                sparse_feature_indices=[s[1] for s in self._sparse],
                sparse_feature_values=[s[2] for s in self._sparse],
                dense_features=[tf.convert_to_tensor(d) for d in self._dense],
                example_weights=tf.convert_to_tensor(self._example_weights),
                example_labels=tf.convert_to_tensor(self._labels),
                sparse_indices=sparse_indices,
                sparse_weights=gathered,
                dense_weights=[tf.convert_to_tensor(w) for w in self._unshrunk[self._num_sparse :]],
                example_state_data=state,
                loss_type=self._loss_type,
                l1=self._l1,
                l2=self._l2,
                num_loss_partitions=self._num_loss_partitions,
                num_inner_iterations=1,
                adaptive=self._adaptive,
            )
            with tf.control_dependencies([state_update]):
                updates = [self._table.insert(hashed_ids, state_update)]
                for var, idx, delta in zip(
                    self._unshrunk[: self._num_sparse], sparse_indices, sparse_deltas, strict=True
                ):
                    updates.append(tf.compat.v1.scatter_add(var, idx, delta))
                for var, delta in zip(
                    self._unshrunk[self._num_sparse :], dense_deltas, strict=True
                ):
                    updates.append(tf.compat.v1.assign_add(var, delta))
            with tf.control_dependencies(updates):
                return tf.compat.v1.assign_add(global_step, 1).op

    def update_weights(self, train_op: Any) -> Any:
        """Copies the unshrunk weights to the model's, then shrinks them by ``l1 / l2``."""
        with tf.control_dependencies([train_op]):
            updates = [w.assign(u) for w, u in zip(self._weights, self._unshrunk, strict=True)]
        if self._l1 <= 0:
            return tf.group(*updates)
        shrinkage = self._l1 / self._l2
        with tf.control_dependencies(updates):
            shrunk = [
                w.assign(tf.math.sign(w) * tf.math.maximum(0.0, tf.math.abs(w) - shrinkage))
                for w in self._weights
            ]
            return tf.group(*shrunk)


class UpdateWeightsHook(tf.compat.v1.train.SessionRunHook):
    """Runs the weight update with every training step (built in ``begin``)."""

    def __init__(self, model: _SdcaModel, train_op: Any) -> None:
        self._model = model
        self._train_op = train_op

    def begin(self) -> None:
        self._update_op = self._model.update_weights(self._train_op)

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs(self._update_op)
