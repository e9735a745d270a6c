# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The Estimator logs through TensorFlow's own logger, as tf.estimator 2.15 did.

Code moving from ``tf.estimator`` keeps its logs: the ``"tensorflow"`` logger
(``tf.get_logger()``), so ``tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)``
shows the Estimator's INFO lines ("Calling model_fn.", "Saving checkpoints for ..."), and
handlers, absl log files and tests that patch ``tf.compat.v1.logging`` see them. Each
call looks ``tf.compat.v1.logging`` up when it is made, so a patched function is the one
called. The rest of the library logs under ``tf1compat_init``.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["logger"]


class _TensorFlowLogger:
    """The ``logging.Logger`` methods the Estimator uses, forwarded to ``tf.compat.v1.logging``."""

    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None:
        tf.compat.v1.logging.debug(msg, *args, **kwargs)

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        tf.compat.v1.logging.info(msg, *args, **kwargs)

    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None:
        tf.compat.v1.logging.warning(msg, *args, **kwargs)

    def error(self, msg: str, *args: Any, **kwargs: Any) -> None:
        tf.compat.v1.logging.error(msg, *args, **kwargs)

    def critical(self, msg: str, *args: Any, **kwargs: Any) -> None:
        tf.compat.v1.logging.fatal(msg, *args, **kwargs)


logger = _TensorFlowLogger()
