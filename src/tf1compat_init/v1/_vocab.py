# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``warm_start(var_name_to_vocab_info=...)``: vocabulary remapping in a TF1 graph.

Everything is checked first, from the checkpoint index and the vocabulary files (the
key, its shape against the vocabularies and the variable, dtype, partitioning, the
files themselves), so a bad ``VocabInfo`` changes nothing. Then each variable (each
partition) gets an initializer that remaps when it runs, as TF's does: TensorFlow's
``GenerateVocabRemapping`` and ``LoadAndRemapMatrix`` kernels, the backup initializer
called with the same shapes in the same order, OOV entries appended. So the graph
reads the checkpoint and the vocabularies when the initializer runs (values never
enter the GraphDef) and a seeded backup initializer gives TF's values, partition by
partition.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import tensorflow as tf

from ..engine.reading.reader import CheckpointInfo
from ..engine.reading.vocab import VocabError, VocabRemap
from ..engine.targets.variables import TargetVariable
from ..engine.targets.vocab_graph import backup_initializer, remap_ops
from ..errors import AssignmentMapError

__all__ = ["VocabPlan", "build_vocab_initializers", "plan_vocab", "remap_ops"]


@dataclass(frozen=True)
class VocabPlan:
    """One variable to remap: its target, checkpoint key and remapping, all checked."""

    name: str
    target: TargetVariable
    key: str
    remap: VocabRemap
    new_vocab_size: int

    @property
    def text(self) -> str:
        """How the report shows the remapping (the transform's text form)."""
        return self.remap.text


def _remap_of(name: str, info: Any) -> VocabRemap:
    fields = ("new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab", "old_vocab_size")
    if not all(hasattr(info, f) for f in fields):
        raise AssignmentMapError(
            f"var_name_to_vocab_info[{name!r}] must be a tf.compat.v1.train.VocabInfo (or "
            f"tf1compat_init.estimator.VocabInfo), got {type(info).__name__}"
        )
    if not (info.new_vocab and info.new_vocab_size and info.old_vocab):
        raise ValueError(
            "Invalid args: Must provide all of [current_vocab_path, current_vocab_size, "
            "prev_ckpt, prev_vocab_path}.\ntf1compat_init: var_name_to_vocab_info"
            f"[{name!r}] is {info}"
        )
    try:
        return VocabRemap(
            info.old_vocab,
            info.new_vocab,
            axis=getattr(info, "axis", 0),
            num_oov_buckets=info.num_oov_buckets,
            new_vocab_size=info.new_vocab_size,
            old_vocab_size=info.old_vocab_size,
            backup_initializer=getattr(info, "backup_initializer", None),
        )
    except VocabError as e:
        raise AssignmentMapError(f"var_name_to_vocab_info[{name!r}]: {e}") from None


def plan_vocab(
    checkpoint: CheckpointInfo,
    targets: Mapping[str, TargetVariable],
    infos: Mapping[str, Any],
    renames: Mapping[str, str],
) -> list[VocabPlan]:
    """Checks every ``VocabInfo`` against its variable, key and files; changes nothing.

    Raises:
        AssignmentMapError: a key, file or size that does not fit, naming the variable
            and the file.
        TypeError: a variable that is not float32 (TF's remapping kernels are float32).
    """
    out = []
    for name in sorted(infos):
        target = targets[name]
        remap = _remap_of(name, infos[name])
        where = f"var_name_to_vocab_info[{name!r}]"
        key = renames.get(name, name)
        info = checkpoint.variables.get(key)
        if info is None:
            raise AssignmentMapError(
                f"{where}: checkpoint key {key!r} is not in {checkpoint.prefix} (pass "
                f"var_name_to_prev_var_name={{{name!r}: '<key>'}} if it was renamed). Nothing "
                f"was changed."
            )
        if target.dtype != "float32":
            raise TypeError(
                f"Currently, only float32 is supported. Received dtype: {target.dtype}\n"
                f"tf1compat_init: {where}: variable {name!r} is {target.dtype}; TensorFlow's "
                f"remapping kernels take float32 only (the remap_vocab transform of an eager "
                f"front end takes any dtype)"
            )
        if len(info.shape) != 2 or target.shape is None or len(target.shape) != 2:
            raise AssignmentMapError(
                f"{where}: in a TF1 graph a vocabulary remaps a 2-D variable (TensorFlow's "
                f"warm_start fails on a 1-D one with an IndexError); {name!r} is "
                f"{list(target.shape or ())} and checkpoint key {key!r} {list(info.shape)}. "
                f"Reshape it to [n, 1], or use the remap_vocab transform with an eager front "
                f"end. Nothing was changed."
            )
        try:
            shape = remap.out_shape(info.shape)
        except VocabError as e:
            raise AssignmentMapError(
                f"{where} (checkpoint key {key!r}): {e}. Nothing was changed."
            ) from None
        if tuple(shape) != tuple(target.shape):
            axis = remap.axis
            raise AssignmentMapError(
                f"{where}: variable {name!r} is {list(target.shape)}, but new_vocab_size "
                f"{shape[axis] - remap.num_oov_buckets} + num_oov_buckets "
                f"{remap.num_oov_buckets} along axis {axis} of checkpoint key {key!r} "
                f"{list(info.shape)} gives {list(shape)} (new vocabulary {remap.new_vocab}). "
                f"Nothing was changed."
            )
        for part in target.parts:
            if tuple(part.offset or (0, 0))[1] != 0 or tuple(part.shape)[1] != target.shape[1]:
                raise AssignmentMapError(
                    f"{where}: {name!r} is partitioned along axis 1; TensorFlow's vocabulary "
                    f"remapping supports partitions along axis 0 only"
                )
        n_new = shape[remap.axis] - remap.num_oov_buckets
        out.append(VocabPlan(name, target, key, remap, n_new))
    return out


def build_vocab_initializers(plans: list[VocabPlan], checkpoint: CheckpointInfo) -> int:
    """Gives each planned variable (partition) a remapping initializer; returns how many."""
    n = 0
    for plan in plans:
        for part in plan.target.parts:
            value = _part_value(plan, part, checkpoint.prefix)
            part.variable._initializer_op = tf.compat.v1.assign(part.variable, value)
            n += 1
    return n


def _part_value(plan: VocabPlan, part: Any, prefix: str) -> Any:
    remap, n_new = plan.remap, plan.new_vocab_size
    init = backup_initializer(remap)
    rows, cols = part.shape
    offset = (part.offset or (0, 0))[0]
    raw = tf.raw_ops
    if remap.axis == 0:
        oov_here = min(rows, max(0, offset + rows - n_new))
        to_load = rows - oov_here
        if offset > n_new:  # a partition of OOV rows only
            return tf.convert_to_tensor(init([rows, cols]))
        row_map, present = raw.GenerateVocabRemapping(
            new_vocab_file=remap.new_vocab,
            old_vocab_file=remap.old_vocab,
            new_vocab_offset=offset,
            num_new_vocab=to_load,
            old_vocab_size=remap.old_vocab_size,
        )
        backup = init([to_load * cols - present * cols, 1])
        value = raw.LoadAndRemapMatrix(
            ckpt_path=prefix,
            old_tensor_name=plan.key,
            row_remapping=row_map,
            col_remapping=tf.constant([], tf.int64),
            initializing_values=backup,
            num_rows=to_load,
            num_cols=cols,
        )
        if oov_here:
            value = tf.concat([value, tf.convert_to_tensor(init([oov_here, cols]))], 0)
        return value
    new_cols = n_new
    col_map, present = raw.GenerateVocabRemapping(
        new_vocab_file=remap.new_vocab,
        old_vocab_file=remap.old_vocab,
        new_vocab_offset=0,
        num_new_vocab=new_cols,
    )
    backup = init([rows * new_cols - rows * present, 1])
    value = raw.LoadAndRemapMatrix(
        ckpt_path=prefix,
        old_tensor_name=plan.key,
        row_remapping=tf.range(offset, offset + rows, dtype=tf.int64),
        col_remapping=col_map,
        initializing_values=backup,
        num_rows=rows,
        num_cols=new_cols,
    )
    if remap.num_oov_buckets:
        value = tf.concat([value, tf.convert_to_tensor(init([rows, remap.num_oov_buckets]))], 1)
    return value
