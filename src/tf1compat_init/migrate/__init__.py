# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Migrating checkpoints: rename keys, change format, stream, verify, then install atomically.

:func:`migrate` writes a renamed copy of a checkpoint (TF1 name-based or TF2
object-based) as

- ``"tf1"``: a name-based checkpoint (``tf.compat.v1.train.Saver`` format), written
  natively, no TensorFlow;
- ``"safetensors"``: a ``.safetensors`` file for PyTorch / JAX users, no TensorFlow;
- ``"tf2"``: an object-based checkpoint of a model (``tf.train.Checkpoint(model=m)``);
- ``"keras"``: a Keras ``.weights.h5`` file of a model.

Names are renamed forward, from the source key to the new name, with the grammar of
the Python API (``{checkpoint_key_or_scope: new_name_or_scope}``, regex keys, a
callable); a key that no rule matches keeps its name, and ``exclude`` patterns drop
keys. Object-based sources are named by their readable object paths.

Tensors stream: ``"tf1"`` and ``"safetensors"`` read the source once, the next tensors
(at most a 64 MiB window, or one larger tensor) while the current one is written, and
record each tensor's CRC32C as written; verifying reads the output back once and compares
checksums. The output is written into a hidden temporary directory next to
the destination, read back and compared bit for bit with the source, and only then
renamed into place. An exclusive lock file makes a second concurrent migrate to the same
destination fail cleanly. The source is only ever read.

The modules, one job each: ``_rename`` (the renamed view; ``_routes`` for rules with
transforms), ``_loaders`` (map files, model factories), ``_destination`` (checks,
leftovers, the install), ``_lock``, the output formats ``_tf1``, ``_safetensors`` and
``_model`` (``tf2``, ``keras``), ``_stream`` (read-ahead, room on disk), and ``_migrate``,
which runs them in order (bitwise comparison and byte counts: the engine's
:mod:`tf1compat_init.engine.basics.tensor_bytes`).
"""

from __future__ import annotations

from ..errors import DiskFullError as DiskFullError
from ._loaders import load_factory, load_map_file
from ._lock import MigrationLockedError as MigrationLockedError
from ._migrate import FORMATS, MigrateResult, migrate
from ._rename import OPTIMIZER_PATTERNS, RenamedCheckpoint, rename_checkpoint

__all__ = [
    "DiskFullError",
    "FORMATS",
    "OPTIMIZER_PATTERNS",
    "MigrateResult",
    "RenamedCheckpoint",
    "load_factory",
    "load_map_file",
    "migrate",
    "rename_checkpoint",
]
