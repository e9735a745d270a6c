# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""TensorFlow's private shortcuts, each tried before its public equivalent.

The eager restore saves Python layers and copies through calls TensorFlow does not
promise to keep: its C fast path for one op (``TFE_Py_FastPathExecute``), DLPack imports
of numpy buffers, tensors allocated by TensorFlow itself, a hand-built function of many
assigns. Each goes through one :class:`FastPath`: the shortcut first; on any failure the
public call, which does the job or raises TensorFlow's own typed error. Where a refusal
says something about a kind of value (a dtype, say), it is remembered and that kind goes
the public way from then on. Looking a private call up goes through :func:`private`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["FastPath", "fast_op", "private"]

logger = logging.getLogger(__name__)


class FastPath:
    """A private call tried before its public equivalent, with the refusals it met.

    ``path(key, *args)`` returns ``fast(*args)`` unless ``key`` was refused before,
    else (or when that raises) ``public(*args)``.

    Args:
        what: what the shortcut does, for the debug log.
        fast: the shortcut, or None where this TensorFlow lacks it.
        public: the public call, taking the same arguments.
        remember: remember a refusal under its key and stop trying the shortcut for
            that key. False where a failure belongs to the one value (the public call
            then raises TensorFlow's typed error) and the next value tries again.
    """

    __slots__ = ("what", "fast", "public", "remember", "refused", "taken")

    def __init__(
        self,
        what: str,
        fast: Callable[..., Any] | None,
        public: Callable[..., Any],
        *,
        remember: bool = True,
    ) -> None:
        self.what, self.fast, self.public, self.remember = what, fast, public, remember
        self.refused: set[Hashable] = set()
        self.taken = 0  # calls the shortcut served

    def __call__(self, key: Hashable, *args: Any) -> Any:
        fast = self.fast
        if fast is not None and key not in self.refused:
            try:
                result = fast(*args)
            except Exception as e:  # noqa: BLE001 - any refusal means "the public way"
                if self.remember:
                    self.refused.add(key)
                logger.debug("%s refused %s (%s); taking the public way", self.what, key, e)
            else:
                self.taken += 1
                return result
        return self.public(*args)


def private(what: str, lookup: Callable[[], Any]) -> Any:
    """``lookup()``, or None where this TensorFlow lacks what it looks up."""
    try:
        return lookup()
    except (ImportError, AttributeError) as e:  # a future TensorFlow
        logger.debug("no %s in this TensorFlow (%s)", what, e)
        return None


def _fast_op(op: str) -> Any:
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import context

    return functools.partial(pywrap_tfe.TFE_Py_FastPathExecute, context.context(), op, None)


def fast_op(op: str) -> Callable[..., Any] | None:
    """``f(*inputs_and_attrs)``: eager ``op`` through TensorFlow's C fast path, or None.

    The public ``tf.raw_ops`` wrappers spend as long in Python around this call as a
    small op takes to run.
    """
    return private(f"fast path for {op}", functools.partial(_fast_op, op))
