# Copyright 2016 The TensorFlow Authors. All Rights Reserved.
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
# Modified from `tensorflow_estimator/python/estimator/inputs/queues/feeding_functions.py` and
# `tensorflow_estimator/python/estimator/inputs/queues/feeding_queue_runner.py` (v2.15.0) for
# tf1compat_init.
# Changes: type hints, f-strings, reformatting and new docstrings; runs on TF >= 2.16's
# tf.compat.v1 without tensorflow_estimator.
"""Queue-fed input: numpy arrays or a pandas DataFrame fed batch by batch through a queue.

TF 2.15's ``estimator/inputs/queues`` behaviour: a ``FIFOQueue`` (or, with ``shuffle``, a
``RandomShuffleQueue`` seeded from the graph seed) filled by queue-runner threads. Each
thread walks the rows in order from a start row (random with ``shuffle``, drawn from
Python's ``random`` module after ``random.seed(seed)``, as TF did) and enqueues
``enqueue_size`` rows at a time; after ``num_epochs`` passes it closes the queue, so
``dequeue_up_to`` ends the input with ``OutOfRangeError``. The first queue component is
the row number (numpy) or the index (pandas).
"""

from __future__ import annotations

import collections
import random
import threading
from typing import Any

import numpy as np
import tensorflow as tf

from .._log import logger

__all__ = ["dequeue_batch", "enqueue_data"]


def _next_batch_indices(
    start: int, batch_size: int, epoch_end: int, length: int, epoch: int, total_epochs: Any
) -> tuple:
    """Row numbers of the next batch, and the epoch count after it.

    The last batch of the last epoch stops at ``epoch_end`` (it may be short).
    """
    if total_epochs is not None and epoch >= total_epochs:
        raise tf.errors.OutOfRangeError(None, None, f"Already emitted {epoch} epochs.")
    indices = [j % length for j in range(start, start + batch_size)]
    epoch_ends = [i for i, x in enumerate(indices) if x == epoch_end]
    epoch += len(epoch_ends)
    if total_epochs is None or epoch < total_epochs:
        return indices, epoch
    last = epoch_ends[-(epoch - total_epochs + 1)]
    return indices[: last + 1], total_epochs


class _RowFeeder:
    """Feeds ``enqueue_size`` rows per call; subclasses say how rows become a feed dict."""

    def __init__(
        self,
        placeholders: list,
        length: int,
        batch_size: int,
        random_start: bool,
        seed: Any,
        num_epochs: Any,
    ) -> None:
        self._placeholders = placeholders
        self._max = length
        self._batch_size = batch_size
        self._num_epochs = num_epochs
        self._epoch = 0
        # TF seeds the process-wide generator here; doing the same keeps start rows equal.
        random.seed(seed)
        self._trav = random.randrange(self._max) if random_start else 0
        self._epoch_end = (self._trav - 1) % self._max

    def _next(self) -> list:
        indices, self._epoch = _next_batch_indices(
            self._trav,
            self._batch_size,
            self._epoch_end,
            self._max,
            self._epoch,
            self._num_epochs,
        )
        self._trav = (indices[-1] + 1) % self._max
        return indices


class _ArrayFeeder(_RowFeeder):
    def __init__(self, placeholders, array, batch_size, random_start=False, seed=None,
                 num_epochs=None) -> None:  # fmt: skip
        if len(placeholders) != 2:
            raise ValueError(f"_array_feed_fn expects 2 placeholders; got {len(placeholders)}.")
        super().__init__(placeholders, len(array), batch_size, random_start, seed, num_epochs)
        self._array = array

    def __call__(self) -> dict:
        indices = self._next()
        return {self._placeholders[0]: indices, self._placeholders[1]: self._array[indices]}


class _OrderedDictFeeder(_RowFeeder):
    def __init__(self, placeholders, arrays, batch_size, random_start=False, seed=None,
                 num_epochs=None) -> None:  # fmt: skip
        if len(placeholders) != len(arrays) + 1:
            raise ValueError(f"Expected {len(arrays)} placeholders; got {len(placeholders)}.")
        length = len(next(iter(arrays.values())))
        for v in arrays.values():
            if len(v) != length:
                raise ValueError("Array lengths must match.")
        super().__init__(placeholders, length, batch_size, random_start, seed, num_epochs)
        self._arrays = arrays

    def __call__(self) -> dict:
        indices = self._next()
        feed = {self._placeholders[0]: indices}
        for placeholder, column in zip(self._placeholders[1:], self._arrays.values(), strict=True):
            feed[placeholder] = column[indices]
        return feed


class _PandasFeeder(_RowFeeder):
    def __init__(self, placeholders, dataframe, batch_size, random_start=False, seed=None,
                 num_epochs=None) -> None:  # fmt: skip
        if len(placeholders) != len(dataframe.columns) + 1:
            raise ValueError(
                f"Expected {len(dataframe.columns) + 1} placeholders; got {len(placeholders)}."
            )
        super().__init__(placeholders, len(dataframe), batch_size, random_start, seed, num_epochs)
        self._dataframe = dataframe

    def __call__(self) -> dict:
        rows = self._dataframe.iloc[self._next()]
        feed = {
            p: _column_values(rows[col])
            for p, col in zip(self._placeholders[1:], rows.columns, strict=True)
        }
        feed[self._placeholders[0]] = rows.index.values
        return feed


class FeedingQueueRunner(tf.compat.v1.train.QueueRunner):
    """A ``QueueRunner`` whose enqueue ops are fed by Python callables (one per thread).

    When a feeder runs out (``OutOfRangeError``), its thread ends; the last thread to end
    closes the queue, so readers drain what is left and then see the end of input.
    """

    def __init__(self, queue: Any, enqueue_ops: list, feed_fns: list) -> None:
        super().__init__(
            queue,
            enqueue_ops,
            queue_closed_exception_types=(tf.errors.OutOfRangeError, tf.errors.CancelledError),
        )
        if len(feed_fns) != len(enqueue_ops):
            raise ValueError(
                "If feed_fns is not None, it must have the same length as enqueue_ops."
            )
        self._feed_fns = feed_fns

    def _run(self, sess: Any, enqueue_op: Any, feed_fn: Any, coord: Any = None) -> None:
        if coord:
            coord.register_thread(threading.current_thread())
        decremented = False
        try:
            while True:
                if coord and coord.should_stop():
                    break
                try:
                    sess.run(enqueue_op, feed_dict=feed_fn())
                except (tf.errors.OutOfRangeError, tf.errors.CancelledError):
                    with self._lock:
                        self._runs_per_session[sess] -= 1
                        decremented = True
                        if self._runs_per_session[sess] == 0:
                            try:
                                sess.run(self._close_op)
                            except Exception as e:  # the session may be closing already
                                logger.debug("Ignored exception: %s", e)
                        return
        except Exception as e:
            if coord:
                coord.request_stop(e)
            else:
                logger.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
        finally:
            if not decremented:
                with self._lock:
                    self._runs_per_session[sess] -= 1

    def create_threads(
        self, sess: Any, coord: Any = None, daemon: bool = False, start: bool = False
    ) -> list:
        with self._lock:
            if self._runs_per_session.get(sess, 0) > 0:
                return []
            self._runs_per_session[sess] = len(self._enqueue_ops)
            self._exceptions_raised = []
        threads = [
            threading.Thread(target=self._run, args=(sess, op, feed_fn, coord))
            for op, feed_fn in zip(self._enqueue_ops, self._feed_fns, strict=True)
        ]
        if coord:
            threads.append(
                threading.Thread(target=self._close_on_stop, args=(sess, self._cancel_op, coord))
            )
        for t in threads:
            if daemon:
                t.daemon = True
            if start:
                t.start()
        return threads

    def to_proto(self, export_scope: Any = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not support serialization to proto.")


def _column_dtype(dtype: Any) -> Any:
    """A DataFrame column's TF dtype; pandas' string dtype (pandas 3's default) is tf.string.

    TF 2.15 fed string columns as numpy ``object`` arrays (``tf.string``); pandas 3 stores
    them as ``StringDtype``, which ``tf.as_dtype`` does not know. Other extension dtypes
    are fed as their numpy dtype.
    """
    if isinstance(dtype, np.dtype):
        return tf.as_dtype(dtype)
    if getattr(dtype, "kind", None) in ("O", "U", "S") or getattr(dtype, "name", "") in (
        "str",
        "string",
    ):
        return tf.string
    return tf.as_dtype(getattr(dtype, "numpy_dtype", dtype))


def _column_values(column: Any) -> np.ndarray:
    """A column's values as numpy (``object`` for pandas' string dtype), for feeding."""
    values = column.values
    return values if isinstance(values, np.ndarray) else column.to_numpy()


def _is_dataframe(data: Any) -> bool:
    try:
        import pandas as pd
    except ImportError:
        return False
    return isinstance(data, pd.DataFrame)


def enqueue_data(
    data: Any,
    capacity: int,
    shuffle: bool = False,
    min_after_dequeue: Any = None,
    num_threads: int = 1,
    seed: Any = None,
    name: str = "enqueue_input",
    enqueue_size: int = 1,
    num_epochs: Any = None,
) -> Any:
    """A queue filled with the rows of ``data`` (an ``OrderedDict`` of arrays, an array or a
    DataFrame) by a queue runner added to the graph; the first component is the row index.

    Raises:
        TypeError: ``data`` is none of those.
    """
    with tf.compat.v1.name_scope(name):
        if isinstance(data, np.ndarray):
            types = [tf.int64, tf.as_dtype(data.dtype)]
            shapes = [(), data.shape[1:]]
            feeder = _ArrayFeeder
        elif isinstance(data, collections.OrderedDict):
            types = [tf.int64] + [tf.as_dtype(col.dtype) for col in data.values()]
            shapes = [()] + [col.shape[1:] for col in data.values()]
            feeder = _OrderedDictFeeder
        elif _is_dataframe(data):
            types = [_column_dtype(dt) for dt in [data.index.dtype, *list(data.dtypes)]]
            shapes = [() for _ in types]
            feeder = _PandasFeeder
        else:
            raise TypeError(
                "data must be either a numpy array or pandas DataFrame if pandas is "
                f"installed; got {type(data).__name__}"
            )
        if num_threads > 1 and num_epochs is not None:
            logger.warning(
                "enqueue_data was called with num_epochs and num_threads > 1. "
                "num_epochs is applied per thread, so this will produce more "
                "epochs than you probably intend. "
                "If you want to limit epochs, use one thread."
            )
        if shuffle and num_threads > 1 and num_epochs is not None:
            logger.warning(
                "enqueue_data was called with shuffle=True, num_threads > 1, and "
                "num_epochs. This will create multiple threads, all reading the "
                "array/dataframe in order adding to the same shuffling queue; the "
                "results will likely not be sufficiently shuffled."
            )
        if not shuffle and num_threads > 1:
            logger.warning(
                "enqueue_data was called with shuffle=False and num_threads > 1. "
                "This will create multiple threads, all reading the "
                "array/dataframe in order. If you want examples read in order, use"
                " one thread; if you want multiple threads, enable shuffling."
            )
        if shuffle:
            min_after_dequeue = int(
                capacity / 4 if min_after_dequeue is None else min_after_dequeue
            )
            queue = tf.queue.RandomShuffleQueue(
                capacity, min_after_dequeue, dtypes=types, shapes=shapes, seed=seed
            )
        else:
            min_after_dequeue = 0
            queue = tf.queue.FIFOQueue(capacity, dtypes=types, shapes=shapes)
        enqueue_ops, feed_fns = [], []
        for i in range(num_threads):
            placeholders = [tf.compat.v1.placeholder(t) for t in types]
            enqueue_ops.append(queue.enqueue_many(placeholders))
            seed_i = None if seed is None else (i + 1) * seed
            feed_fns.append(
                feeder(
                    placeholders,
                    data,
                    enqueue_size,
                    random_start=shuffle,
                    seed=seed_i,
                    num_epochs=num_epochs,
                )
            )
        runner = FeedingQueueRunner(queue=queue, enqueue_ops=enqueue_ops, feed_fns=feed_fns)
        tf.compat.v1.train.add_queue_runner(runner)
        full = tf.cast(tf.math.maximum(0, queue.size() - min_after_dequeue), tf.float32) * (
            1.0 / (capacity - min_after_dequeue)
        )
        summary_name = (
            f"queue/{queue.name}fraction_over_{min_after_dequeue}_of_"
            f"{capacity - min_after_dequeue}_full"
        )
        tf.compat.v1.summary.scalar(summary_name, full)
        return queue


def dequeue_batch(
    data: Any,
    capacity: int,
    batch_size: int,
    shuffle: bool,
    num_threads: int,
    num_epochs: Any,
    min_after_dequeue: Any = None,
) -> Any:
    """One batch of ``data`` through an :func:`enqueue_data` queue: ``[row numbers, *columns]``.

    Full batches (``dequeue_many``) when the data repeats forever (``num_epochs=None``),
    otherwise the last batch may be short (``dequeue_up_to``).
    """
    queue = enqueue_data(
        data,
        capacity,
        shuffle=shuffle,
        min_after_dequeue=min_after_dequeue,
        num_threads=num_threads,
        enqueue_size=batch_size,
        num_epochs=num_epochs,
    )
    if num_epochs is None:
        return queue.dequeue_many(batch_size)
    return queue.dequeue_up_to(batch_size)
