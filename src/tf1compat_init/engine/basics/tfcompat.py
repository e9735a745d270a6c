# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Known breakages between a TensorFlow release and what pip installs beside it.

Pure decisions on version strings and probed facts, so that each one is unit-tested on any
TensorFlow; the front ends probe their environment and act on the answer.

TensorFlow 2.15 to 2.20 write ``graph.pbtxt`` (``tf.io.write_graph(as_text=True)``, which
``CheckpointSaverHook`` calls once its session exists) with
``text_format.MessageToString(graph_def, float_format="")``. protobuf 7 (7.34 on) removed
that argument, and TensorFlow 2.20 asks for ``protobuf>=5.28`` with no upper bound, so pip
pairs it with protobuf 7 and every ``MonitoredTrainingSession`` that saves its graph raises
``TypeError``. TensorFlow 2.21 stopped passing the argument; 2.16 to 2.19 cap protobuf
below 6.
"""

from __future__ import annotations

import re

__all__ = ["GRAPH_TEXT_ADVICE", "graph_text_writable", "release"]

GRAPH_TEXT_ADVICE = (
    "tf1compat_init: TensorFlow %s cannot write graph.pbtxt with protobuf %s: its "
    "tf.io.write_graph passes MessageToString(float_format=), which protobuf 7 removed, so "
    "every MonitoredTrainingSession or CheckpointSaverHook that saves its graph raises "
    "TypeError. tf1compat_init's Estimator and tf1compat_init.v1.CheckpointSaverHook write "
    "graph.pbtxt themselves. In your own code: pip install 'protobuf<7', or upgrade to "
    "TensorFlow 2.21, or pass "
    "save_graph_def=tf1compat_init.v1.can_save_graph_def() to MonitoredTrainingSession, or "
    "give it chief_only_hooks=[tf1compat_init.v1.CheckpointSaverHook(...)] with "
    "save_checkpoint_secs=None."
)


def release(version: str) -> tuple[int, int]:
    """The ``(major, minor)`` of a version string such as ``"2.20.0"`` or ``"2.21.0rc1"``.

    Args:
        version: a PEP 440 version string; anything after the minor number is ignored.

    Returns:
        ``(major, minor)``, or ``(0, 0)`` when the string does not start with two numbers.

    Example:
        >>> release("2.20.0-dev20250101")
        (2, 20)
    """
    match = re.match(r"\s*v?(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def graph_text_writable(tf_version: str, protobuf_takes_float_format: bool) -> bool:
    """Whether TensorFlow's own ``tf.io.write_graph(as_text=True)`` works here.

    Args:
        tf_version: ``tf.__version__``.
        protobuf_takes_float_format: whether ``google.protobuf.text_format.MessageToString``
            accepts ``float_format`` (protobuf < 7 does).

    Returns:
        False only where TensorFlow still passes ``float_format`` (releases before 2.21) and
        protobuf no longer accepts it.

    Example:
        >>> graph_text_writable("2.20.0", protobuf_takes_float_format=False)
        False
    """
    return protobuf_takes_float_format or release(tf_version) >= (2, 21)
