# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Turning numpy buffers into tensors TensorFlow adopts, and assigning them to variables."""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np

from ..bundle.fastread import ALIGNMENT
from ._batch import BatchAssign, Pending, batch_assign
from ._fastpath import FastPath, fast_op, private
from ._job import Job

__all__ = ["Assigner", "on_cpu"]

logger = logging.getLogger(__name__)


#: dtype name -> whether EagerTensor._numpy() is a view of the tensor (checked once).
_SHARES_MEMORY: dict[str, bool] = {}

#: numpy and TensorFlow exchange these through DLPack without a copy (bool is refused by
#: TF 2.15: the refusal is remembered and the copy path used instead).
_DLPACK = frozenset(
    {
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "complex64",
        "complex128",
        "bool",
    }
)


def _plain_types() -> tuple[type, ...]:
    from tensorflow.python.ops.resource_variable_ops import (
        ResourceVariable,
        UninitializedVariable,
    )

    return (ResourceVariable, UninitializedVariable)


def on_cpu(handle: Any) -> bool:
    """Whether the variable of resource ``handle`` lives on the (first) CPU."""
    return handle.device.endswith("CPU:0")


class Assigner:
    """Turns numpy buffers into tensors TensorFlow adopts, and assigns them."""

    def __init__(self) -> None:
        import tensorflow as tf

        self.tf = tf
        self._from_dlpack = tf.experimental.dlpack.from_dlpack
        self._assign_op = tf.raw_ops.AssignVariableOp
        self._plain_types: tuple[type, ...] = private("plain variable types", _plain_types) or ()
        # (numpy dtype, TensorFlow dtype) -> whether DLPack can share such a buffer
        # without a copy (whether it does is the DLPack path's to learn).
        self._zero_copy: dict[tuple[np.dtype, Any], bool] = {}
        self._dlpack = FastPath("DLPack", self._share, self._copy)
        # Any failure in the fast assign (an error, or TensorFlow declining its fast
        # path) is retried through the public op, which raises TensorFlow's typed error.
        self._assign_fast = FastPath(
            "AssignVariableOp's fast path",
            fast_op("AssignVariableOp"),
            self.assign_handle,
            remember=False,
        )
        fast_empty = fast_op("Empty")
        self._empty = FastPath(
            "Empty's fast path",
            None if fast_empty is None else self._fast_empty,
            self._public_empty,
        )
        self._fast_empty_op = fast_empty
        self._tf_buffers = FastPath("TensorFlow-allocated buffers", self._tf_buffer, _no_buffer)
        self._tf_dtypes: dict[np.dtype, Any] = {}
        self.batch: BatchAssign | None = None
        self._cpu_devices: dict[str, bool] = {}
        self.owned = 0  # buffers that came with their tensor (TensorFlow allocated them)
        self.peak_read_ahead = 0  # bytes read but not yet assigned, at most
        self.peak_held = 0  # small values the stream held back for a batch, at most

    @property
    def adopted(self) -> int:
        """Values TensorFlow took without a copy."""
        return self.owned + self._dlpack.taken

    def adopt(self, loaded: Any, dtype: Any) -> Any:
        """The tensor of a buffer from the fast reader: its owner, or a DLPack import."""
        if loaded.owner is not None:
            self.owned += 1
            return loaded.owner
        buffer = loaded.buffer
        if self._zero_copy.get((buffer.dtype, dtype)) and buffer.size:
            # the common case, inlined: an aligned buffer TensorFlow can adopt
            return self._dlpack(buffer.dtype, buffer, dtype)
        return self.tensor(buffer, dtype, aligned=True)

    def tensor(self, value: np.ndarray, dtype: Any, *, aligned: bool = False) -> Any:
        """A tensor of ``value``, sharing its buffer when TensorFlow can adopt it.

        Args:
            value: the array.
            dtype: the TensorFlow dtype the tensor must have.
            aligned: the caller guarantees a C-contiguous, 64-byte aligned buffer
                (the fast reader's); otherwise it is checked here.
        """
        zero_copy = self._zero_copy.get((value.dtype, dtype))
        if zero_copy is None:
            name = value.dtype.name
            zero_copy = self._zero_copy[(value.dtype, dtype)] = (
                not value.dtype.hasobject and name in _DLPACK and name == dtype.name
            )
        if (
            zero_copy
            and value.size
            and (aligned or (value.flags.c_contiguous and value.ctypes.data % ALIGNMENT == 0))
        ):
            return self._dlpack(value.dtype, value, dtype)
        return self._copy(value, dtype)

    def _share(self, value: np.ndarray, dtype: Any) -> Any:
        return self._from_dlpack(value.__dlpack__())

    def _copy(self, value: np.ndarray, dtype: Any) -> Any:
        if value.dtype.hasobject:
            return self.tf.constant(value, dtype=dtype)
        return self.tf.convert_to_tensor(value, dtype=dtype)

    def allocate(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, Any] | None:
        """A fresh tensor from TensorFlow's allocator, and a writable view of its memory.

        TensorFlow keeps the memory of the values it frees (the variables' old
        values) for its next allocations. Big buffers taken from it reuse that
        memory: a restore then needs no more memory than its window, where numpy
        buffers would add the checkpoint's size, and the memory is already mapped
        (no page faults). The byte buffers that group small tensors come from here
        too, from ``ALLOCATED_GROUP_BYTES`` (:mod:`tf1compat_init.bundle.fastread`) on.
        The tensor is private until it is assigned, so filling it is safe, and the
        view keeps the tensor's memory alive by itself (tested), so views into a
        group outlive the tensor that allocated it.

        Returns:
            ``(view, tensor)``, or None where this dtype takes numpy memory instead.
        """
        return self._tf_buffers(dtype, shape, dtype)

    def _tf_buffer(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, Any]:
        tf_dtype = self._tf_dtypes.get(dtype)
        if tf_dtype is None:
            tf_dtype = self.tf.dtypes.as_dtype(dtype)
            if not self._shares_memory(tf_dtype):
                raise TypeError("EagerTensor._numpy() does not share the tensor's memory")
            self._tf_dtypes[dtype] = tf_dtype
        tensor, view = self._empty_tensor(shape, tf_dtype)
        return view, tensor

    def _empty_tensor(self, shape: tuple[int, ...], tf_dtype: Any) -> tuple[Any, np.ndarray]:
        with self.tf.device("/CPU:0"):  # a GPU variable gets its value copied by the assign
            tensor = self._empty(None, shape, tf_dtype)
        return tensor, tensor._numpy()  # a view of the tensor's memory (.numpy() copies)

    def _fast_empty(self, shape: tuple[int, ...], tf_dtype: Any) -> Any:
        shape_tensor = self.tf.constant(np.array(shape, dtype=np.int32))
        return self._fast_empty_op(shape_tensor, "dtype", tf_dtype, "init", False)

    def _public_empty(self, shape: tuple[int, ...], tf_dtype: Any) -> Any:
        return self.tf.raw_ops.Empty(shape=shape, dtype=tf_dtype, init=False)

    def _shares_memory(self, tf_dtype: Any) -> bool:
        """Once per dtype and process: do writes through ``_numpy()`` reach the tensor?

        Writing into a tensor through a copy would assign uninitialised memory, so
        this is proven before the first use rather than assumed.
        """
        known = _SHARES_MEMORY.get(tf_dtype.name)
        if known is None:
            tensor, view = self._empty_tensor((64,), tf_dtype)
            raw = view.reshape(-1).view(np.uint8)
            pattern = (np.arange(raw.size, dtype=np.uint32) * 7 % 2).astype(np.uint8)
            raw[...] = pattern  # 0/1 bytes: valid for every dtype, bool included
            back = np.ascontiguousarray(tensor.numpy()).reshape(-1).view(np.uint8)
            known = _SHARES_MEMORY[tf_dtype.name] = bool(np.array_equal(back, pattern))
        return known

    def handle(self, variable: Any) -> Any:
        """The resource handle to assign ``variable`` through, or None for ``.assign()``.

        A plain eager resource variable (or the one a Keras 3 variable wraps) takes the
        raw op, a fraction of the cost of ``.assign()``. Anything else (distributed,
        Keras wrappers) gets ``.assign()`` so that it reaches every replica or component.
        """
        if type(variable) in self._plain_types:
            return variable.handle
        inner = self._keras_inner(variable)
        return None if inner is None else inner.handle

    def start_batching(self, eligible: int) -> None:
        """Lets :meth:`assign_many` batch small CPU assigns, if ``eligible`` are worth it."""
        self.batch = batch_assign(eligible)

    def batchable(self, handle: Any) -> bool:
        """Whether an assign to ``handle`` may join a batch: a plain variable on the CPU."""
        if handle is None or self.batch is None:
            return False
        device = handle.device
        cpu = self._cpu_devices.get(device)
        if cpu is None:
            cpu = self._cpu_devices[device] = on_cpu(handle)
        return cpu

    def assign_many(self, pairs: list[tuple[Job, Any]], done: list[Job]) -> None:
        """Assigns each ``(job, tensor)``, noting each one in ``done`` once it landed.

        With batching on, plain CPU variables are assigned ``BATCH`` at a time (by
        dtype), the rest one by one.
        """
        assign_to, handle_of, landed = self.assign_to, self.handle, done.append
        batch = self.batch
        if batch is None or len(pairs) < batch.size:
            for job, tensor in pairs:
                variable = job.part.variable
                assign_to(handle_of(variable), variable, tensor)
                landed(job)
            return
        pending = Pending(self, done)
        for job, tensor in pairs:
            variable = job.part.variable
            handle = handle_of(variable)
            if self.batchable(handle):
                pending.add(tensor.dtype, job, handle, tensor)
            else:
                assign_to(handle, variable, tensor)
                landed(job)
        pending.flush_all()

    def assign_to(self, handle: Any, variable: Any, tensor: Any) -> None:
        """Assigns ``tensor`` to ``variable``, whose :meth:`handle` is ``handle``."""
        if handle is None:
            variable.assign(tensor)
            return
        self._assign_fast(None, handle, tensor, "validate_shape", False)

    def assign_handle(self, handle: Any, tensor: Any, *attrs: Any) -> None:
        """Assigns ``tensor`` to the variable of ``handle`` through TensorFlow's public op."""
        self._assign_op(resource=handle, value=tensor)

    def _keras_inner(self, variable: Any) -> Any:
        """The plain tf.Variable a Keras 3 variable assigns to, when that is all it does.

        Keras 3's ``Variable.assign`` (TensorFlow backend) converts the value, checks
        its shape (done for every assignment before the first one) and assigns its
        ``_value``, unless a stateless scope collects the update instead. Going
        straight to ``_value`` skips a few Python layers per variable; a distributed
        ``_value`` (a strategy's) still gets ``.assign()``.
        """
        if not type(variable).__module__.startswith("keras."):
            return None
        inner = getattr(variable, "_value", None)
        if type(inner) not in self._plain_types:
            return None
        scope = sys.modules.get("keras.src.backend.common.stateless_scope")
        if scope is None or getattr(scope, "in_stateless_scope", lambda: True)():
            return None  # Keras not loaded as expected, or updates are being collected
        return inner


def _no_buffer(shape: tuple[int, ...], dtype: np.dtype) -> None:
    return None  # the caller allocates numpy memory instead
