# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Many small assigns in one TensorFlow call: a function of ``BATCH`` AssignVariableOps.

Eager assigns cost almost nothing but their dispatch, so a restore of many small
variables spends its time there. A function whose body is ``BATCH``
``AssignVariableOp`` nodes, called eagerly with ``BATCH`` resource handles and ``BATCH``
values, runs them in TensorFlow's executor instead, as a TF1 graph does.

The function is built as a ``FunctionDef`` by hand (tracing a ``tf.function`` of that
many assigns would cost far more) and registered once per eager context and dtype.
TensorFlow instantiates it on its first call, so a process's first restore only batches
when it has enough small assigns to pay that back at once (``BATCH_FIRST``); later
restores batch from ``BATCH`` assigns on. Why these sizes: see ``benchmarks/README.md``.

Batches hold plain eager resource variables on the CPU only: a variable on another
device keeps one assign per variable, which places the copy where TensorFlow's own
assign does. :class:`Pending` gathers the assigns of a restore into batches.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._fastpath import FastPath, private

if TYPE_CHECKING:
    from ._assigner import Assigner
    from ._job import Job

__all__ = ["BATCH", "BATCH_FIRST", "Batch", "BatchAssign", "Pending", "batch_assign"]

logger = logging.getLogger(__name__)

#: Assigns per function call: fewer save less per assign, more save little more and take
#: longer to instantiate (measured: ``benchmarks/README.md``).
BATCH = 128

#: A process's first restore batches from this many eligible assigns on: enough that
#: the saving pays for the function's instantiation.
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
    return private("batched assigns", BatchAssign)


class Batch:
    """Assigns waiting to be made together: their jobs, handles and tensors."""

    __slots__ = ("jobs", "handles", "tensors", "nbytes")

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.handles: list[Any] = []
        self.tensors: list[Any] = []
        self.nbytes = 0

    def add(self, job: Job, handle: Any, tensor: Any, nbytes: int = 0) -> None:
        self.jobs.append(job)
        self.handles.append(handle)
        self.tensors.append(tensor)
        self.nbytes += nbytes

    def clear(self) -> None:
        self.jobs, self.handles, self.tensors, self.nbytes = [], [], [], 0


class Pending:
    """Small assigns waiting for their batch, one :class:`Batch` per dtype.

    A batch is assigned as soon as it is full. With ``hold``, at most that many bytes
    of values wait: one more flushes every batch (the partial ones one by one).
    """

    def __init__(self, assigner: Assigner, done: list[Job], hold: int | None = None) -> None:
        self.assigner, self.done, self.hold = assigner, done, hold
        self.groups: dict[Any, Batch] = {}
        self.held = 0
        self._call = FastPath("a batch of assigns", self._batched, self._one_by_one, remember=False)

    def add(self, dtype: Any, job: Job, handle: Any, tensor: Any, nbytes: int = 0) -> None:
        assigner = self.assigner
        if self.hold is not None and self.held + nbytes > self.hold:
            self.flush_all()
        group = self.groups.get(dtype)
        if group is None:
            group = self.groups[dtype] = Batch()
        group.add(job, handle, tensor, nbytes)
        self.held += nbytes
        assigner.peak_held = max(assigner.peak_held, self.held)
        if assigner.batch is not None and len(group.jobs) == assigner.batch.size:
            self.held -= group.nbytes
            self.flush(dtype, group)

    def flush_all(self) -> None:
        for dtype, group in self.groups.items():
            self.flush(dtype, group)
        self.held = 0

    def flush(self, dtype: Any, group: Batch) -> None:
        """Assigns a batch's values: in one call when it is full, else one by one.

        A failed call is redone one assign at a time (assigning a value twice is
        harmless), so an error names the variable TensorFlow refused.
        """
        if not group.jobs:
            return
        batch = self.assigner.batch
        if batch is not None and len(group.jobs) == batch.size:
            self._call(None, dtype, group, batch)
        else:
            self._one_by_one(dtype, group)

    def _batched(self, dtype: Any, group: Batch, batch: BatchAssign) -> None:
        batch(dtype, group.handles, group.tensors)
        self.done.extend(group.jobs)
        group.clear()

    def _one_by_one(self, dtype: Any, group: Batch, batch: BatchAssign | None = None) -> None:
        """Assigns ``group`` one value at a time, noting each in ``done`` as it lands.

        After a failed batch call (``batch`` given), the variables after a failing one
        may have been assigned by that call: they are noted in ``done`` too, so a
        :class:`~tf1compat_init.PartialRestoreError` never misses one.
        """
        jobs, assign_to, done = group.jobs, self.assigner.assign_to, self.done
        for i, (job, handle, tensor) in enumerate(
            zip(jobs, group.handles, group.tensors, strict=True)
        ):
            try:
                assign_to(handle, job.part.variable, tensor)
            except BaseException:
                if batch is not None:
                    done.extend(jobs[i:])  # the failed call may have assigned these
                    group.clear()
                raise
            done.append(job)
        group.clear()
