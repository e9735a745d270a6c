# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``graph.pbtxt`` where TensorFlow cannot write it: TensorFlow 2.20 with protobuf >= 7.

:func:`can_save_graph_def` probes the environment once (see :mod:`tf1compat_init._tfcompat`
for the breakage). Where it is False, :class:`CheckpointSaverHook` writes ``graph.pbtxt``
itself, with the text TensorFlow 2.21 writes under the same protobuf; everywhere else it is
TensorFlow's hook unchanged. TensorFlow itself is never patched.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import sys
from typing import Any

import tensorflow as tf
from google.protobuf import text_format

from ..engine.basics.tfcompat import GRAPH_TEXT_ADVICE, graph_text_writable

__all__ = ["CheckpointSaverHook", "adopt_saver_hooks", "can_save_graph_def", "warn_once"]

logger = logging.getLogger("tf1compat_init.v1._graph_def")  # stable name (the old path)
_warned = False


def _protobuf_takes_float_format() -> bool:
    try:
        params = inspect.signature(text_format.MessageToString).parameters
    except (TypeError, ValueError):  # pragma: no cover - a C implementation without a signature
        return True
    return "float_format" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


@functools.cache
def can_save_graph_def() -> bool:
    """Whether TensorFlow's ``CheckpointSaverHook`` can save ``graph.pbtxt`` here.

    False only on TensorFlow 2.15 to 2.20 with protobuf >= 7 (pip's default pairing for
    TensorFlow 2.20), where TensorFlow's graph writer raises ``TypeError``. Pass the
    answer as ``save_graph_def`` to ``MonitoredTrainingSession`` or TensorFlow's
    ``CheckpointSaverHook`` to run everywhere; where it is False that also skips the
    ``.meta`` files. :class:`CheckpointSaverHook` keeps both.

    Returns:
        True where TensorFlow writes ``graph.pbtxt`` without error.

    Example:
        >>> import tensorflow as tf
        >>> from tf1compat_init import v1 as tv1
        >>> with tf.compat.v1.train.MonitoredTrainingSession(  # doctest: +SKIP
        ...     checkpoint_dir="run/", save_graph_def=tv1.can_save_graph_def()
        ... ) as sess: ...
    """
    return graph_text_writable(tf.__version__, _protobuf_takes_float_format())


def warn_once() -> None:
    """Logs :data:`GRAPH_TEXT_ADVICE` once per process where TensorFlow cannot write it."""
    global _warned
    if _warned or can_save_graph_def():
        return
    _warned = True
    import google.protobuf

    logger.warning(GRAPH_TEXT_ADVICE, tf.__version__, google.protobuf.__version__)


def write_graph_text(graph_def: Any, logdir: str, name: str) -> str:
    """Writes ``graph_def`` as a text proto, as ``tf.io.write_graph`` of TensorFlow 2.21 does.

    Args:
        graph_def: a ``GraphDef``.
        logdir: the directory (local or any filesystem TensorFlow knows); created if missing.
        name: the file name, ``graph.pbtxt`` for a ``CheckpointSaverHook``.

    Returns:
        The path written.
    """
    from tensorflow.python.lib.io import file_io

    if sys.byteorder == "big":  # pragma: no cover - graph files are little-endian on disk
        from tensorflow.python.framework import byte_swap_tensor

        byte_swap_tensor.swap_tensor_content_in_graph_node(graph_def, "big", "little")
    if not logdir.startswith("gs:"):  # GCS has no directories to create
        file_io.recursive_create_dir(logdir)
    path = os.path.join(logdir, name)
    file_io.atomic_write_string_to_file(path, text_format.MessageToString(graph_def))
    return path


class CheckpointSaverHook(tf.compat.v1.train.CheckpointSaverHook):
    """TensorFlow's ``CheckpointSaverHook``, which also saves its graph on TF 2.20 + protobuf 7.

    Same arguments and behaviour as ``tf.compat.v1.train.CheckpointSaverHook``. Where
    :func:`can_save_graph_def` is False, it writes ``graph.pbtxt`` itself instead of
    calling TensorFlow's broken writer, and still writes the ``.meta`` files and the
    summaries TensorFlow's hook writes.

    Example:
        >>> from tf1compat_init import v1 as tv1
        >>> hook = tv1.CheckpointSaverHook("run/", save_steps=100)
        >>> with tf.compat.v1.train.MonitoredTrainingSession(  # doctest: +SKIP
        ...     checkpoint_dir="run/", save_checkpoint_secs=None, chief_only_hooks=[hook]
        ... ) as sess: ...
    """

    def after_create_session(self, session: Any, coord: Any) -> None:
        if not self._save_graph_def or can_save_graph_def():
            super().after_create_session(session, coord)
            return
        from tensorflow.python.framework import meta_graph

        # TensorFlow's hook does these steps, in this order, with its own graph writer.
        step = session.run(self._global_step_tensor)
        graph = tf.compat.v1.get_default_graph()
        write_graph_text(graph.as_graph_def(add_shapes=True), self._checkpoint_dir, "graph.pbtxt")
        saver = self._get_saver()
        meta_graph_def = meta_graph.create_meta_graph_def(
            graph_def=graph.as_graph_def(add_shapes=True),
            saver_def=saver.saver_def if saver else None,
        )
        self._summary_writer.add_graph(graph)
        self._summary_writer.add_meta_graph(meta_graph_def)
        self._save(session, step)
        self._timer.update_last_triggered_step(step)


def adopt_saver_hooks(hooks: list) -> None:
    """Lets TensorFlow's own ``CheckpointSaverHook`` objects in ``hooks`` save their graph.

    Where :func:`can_save_graph_def` is False, each hook that is exactly TensorFlow's class
    becomes a :class:`CheckpointSaverHook` (same state, the graph written by us). A
    subclass is left alone: it may have its own ``after_create_session``.
    """
    if can_save_graph_def():
        return
    for hook in hooks:
        if type(hook) is tf.compat.v1.train.CheckpointSaverHook and hook._save_graph_def:
            hook.__class__ = CheckpointSaverHook
            logger.info(
                "TensorFlow %s cannot write graph.pbtxt with this protobuf; the "
                "CheckpointSaverHook for %s writes it through tf1compat_init instead.",
                tf.__version__,
                hook._checkpoint_dir,
            )
