# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``remap_vocab`` in a TF1 graph: TensorFlow's vocabulary-remapping kernels.

The graph form of :class:`~tf1compat_init.transforms.RemapVocab` (a map's route) and the
backup initializer that ``warm_start``'s ``VocabInfo`` initializers share. Imports
TensorFlow; graph mode only.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ..reading.vocab import VocabRemap

__all__ = ["backup_initializer", "remap_ops"]


def backup_initializer(remap: VocabRemap) -> Any:
    """The backup initializer as TF's warm-start calls it: ``shape -> tensor``."""
    init = remap.backup_initializer
    if init is None:
        return tf.compat.v1.zeros_initializer()
    if not callable(init):  # a number; constant_initializer cannot take TF's tensor shapes
        return lambda shape: tf.fill(shape, tf.constant(init, tf.float32))
    return init


def remap_ops(remap: VocabRemap, value: Any, shape: tuple[int, ...]) -> Any:
    """``remap_vocab`` on a tensor already read (a map's route in a TF1 graph).

    The vocabulary files are read when the ops run, by TF's ``GenerateVocabRemapping``;
    the backup initializer is called as TF's warm-start calls it (missing entries as
    ``[n, 1]``, row-major, then the OOV block), so a seeded one gives TF's values.
    """
    init = backup_initializer(remap)
    n_new = remap.out_shape(shape)[remap.axis] - remap.num_oov_buckets
    old_size = remap.old_vocab_size if remap.axis == 0 else -1  # TF: rows only
    index, present = tf.raw_ops.GenerateVocabRemapping(
        new_vocab_file=remap.new_vocab,
        old_vocab_file=remap.old_vocab,
        new_vocab_offset=0,
        num_new_vocab=n_new,
        old_vocab_size=old_size,
    )
    x = value if remap.axis == 0 else tf.transpose(value)
    if len(shape) == 1:
        x = tf.reshape(x, [-1, 1])
    width = int(x.shape[1]) if remap.axis == 0 else int(shape[0])
    n_old = tf.shape(x, out_type=tf.int64)[0]
    lost = index < 0
    n_missing = tf.reduce_sum(tf.cast(lost, tf.int64))
    backup = tf.convert_to_tensor(init([n_missing * width, 1]))
    if remap.axis == 1:  # TF fills missing cells row-major over [rows, new columns]
        fill = tf.transpose(tf.reshape(backup, [width, -1]))
    else:
        fill = tf.reshape(backup, [-1, width])
    blocks = [x, tf.cast(fill, x.dtype)]
    if remap.num_oov_buckets:
        oov_shape = (
            [remap.num_oov_buckets, width] if remap.axis == 0 else [width, remap.num_oov_buckets]
        )
        oov = tf.convert_to_tensor(init(oov_shape))
        blocks.append(tf.cast(oov if remap.axis == 0 else tf.transpose(oov), x.dtype))
    # One gather from [old rows; backup rows; OOV rows]: the read, one joined copy, the
    # output (a scatter into the gathered rows would copy the table once more).
    missing_at = n_old + tf.cumsum(tf.cast(lost, tf.int64)) - 1
    full = tf.concat(
        [
            tf.where(lost, missing_at, index),
            n_old + n_missing + tf.range(remap.num_oov_buckets, dtype=tf.int64),
        ],
        0,
    )
    out = tf.gather(tf.concat(blocks, 0), full)
    if len(shape) == 1:
        out = tf.reshape(out, [-1])
    return out if remap.axis == 0 else tf.transpose(out)
