"""Many small assigns in one TensorFlow call: a function of ``BATCH`` AssignVariableOps.

An eager assign costs about 9 us even through TensorFlow's C fast path, almost all
of it dispatch: a restore of 2,000 small variables spends 20 ms there, where a
TF1 graph runs the same assigns inside its executor for a fraction of that. A
function whose body is ``BATCH`` ``AssignVariableOp`` nodes, called eagerly with
``BATCH`` resource handles and ``BATCH`` values, runs them in the same executor:
2.5-5 us per assign (measured, 512 float32 variables of 64 KiB, TF 2.15 and 2.21).

The function is built as a ``FunctionDef`` by hand, with no tracing: tracing a
``tf.function`` of 128 assigns takes about 100 ms, building the proto about 1 ms.
It is registered once per eager context and dtype. TensorFlow instantiates it on
its first call (about 14 ms for 128 assigns), so a process's first restore only
batches when it has enough small assigns to pay that back at once
(``BATCH_FIRST``); later restores batch from ``BATCH`` assigns on.

Batches hold plain eager resource variables on the CPU only: a variable on
another device keeps one assign per variable, which places the copy where
TensorFlow's own assign does.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["BATCH", "BATCH_FIRST", "BatchAssign", "batch_assign"]

logger = logging.getLogger(__name__)

#: Assigns per function call: 128 costs 2.8-5 us an assign, 64 about 5-6 us and 32
#: no less than the fast path (a call has 0.2-0.3 ms of fixed cost); 256 and 512
#: save little more and take 2-4 times as long to instantiate.
BATCH = 128

#: A process's first restore batches from this many eligible assigns on: enough
#: that the saving (about 5 us each) pays for the function's instantiation.
BATCH_FIRST = 4096

#: Restores that asked for batches in this process (the first one pays the
#: instantiation only when it is big: see ``BATCH_FIRST``).
_restores = 0


class BatchAssign:
    """Calls a hand-built function of ``size`` assigns; one per dtype, made on first use."""

    def __init__(self, size: int = BATCH) -> None:
        from tensorflow.python.eager import context, execute

        self.size = size
        self._context = context.context()
        self._execute = execute.execute
        self._names: dict[int, bytes] = {}

    def _name(self, dtype: Any) -> bytes:
        enum = dtype.as_datatype_enum
        name = self._names.get(enum)
        if name is None:
            text = f"tf1compat_init_assign_{self.size}_{dtype.name}"
            if not self._context.has_function(text):
                self._context.add_function_def(_function_def(text, self.size, enum))
                logger.debug("registered %s", text)
            name = self._names[enum] = text.encode()
        return name

    def __call__(self, dtype: Any, handles: list[Any], values: list[Any]) -> None:
        """Assigns ``values[i]`` to the variable of ``handles[i]``, all of ``dtype``.

        Exactly ``size`` of each. Raises what TensorFlow raises; which assigns
        landed before an error is then unknown (the caller redoes them one by one).
        """
        self._execute(self._name(dtype), 0, handles + values, (), self._context)


def _function_def(name: str, size: int, dtype_enum: int) -> Any:
    from tensorflow.core.framework import function_pb2, types_pb2

    fdef = function_pb2.FunctionDef()
    signature = fdef.signature
    signature.name = name
    signature.is_stateful = True
    for i in range(size):
        arg = signature.input_arg.add()
        arg.name, arg.type = f"h{i}", types_pb2.DT_RESOURCE
    for i in range(size):
        arg = signature.input_arg.add()
        arg.name, arg.type = f"v{i}", dtype_enum
    for i in range(size):
        node = fdef.node_def.add()
        node.name, node.op = f"a{i}", "AssignVariableOp"
        node.input.extend([f"h{i}", f"v{i}"])
        node.attr["dtype"].type = dtype_enum
        node.attr["validate_shape"].b = False
    return fdef


def batch_assign(eligible: int) -> BatchAssign | None:
    """The batcher for a restore with ``eligible`` small CPU assigns, or None.

    None below ``BATCH`` assigns, and for a process's first restore below
    ``BATCH_FIRST`` (its instantiation would cost more than it saves), or where
    this TensorFlow lacks the calls it needs.
    """
    global _restores
    if eligible < BATCH:
        return None
    _restores += 1
    if _restores == 1 and eligible < BATCH_FIRST:
        return None
    try:
        return BatchAssign()
    except (ImportError, AttributeError) as e:  # pragma: no cover - a future TensorFlow
        logger.debug("no batched assigns (%s)", e)
        return None
