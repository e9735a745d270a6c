"""Applying a checked plan to eager TensorFlow variables: fast, and all or nothing.

The fast path (checkpoints read by the native bundle reader):

1. **Verify.** Every planned tensor's size and CRC32C is checked before the first
   assign, in parallel threads. The first values in file order that fit in the
   stream's memory bound (all of them, for a restore that fits) are *staged*:
   copied into their final buffers and checksummed there, one pass over the page
   cache. The rest are checksummed where they lie in the memory-mapped data files.
   Tensors the fast path does not stream (strings, dtypes only TensorFlow decodes,
   tensors stored in slices) are read and verified into memory here too.
2. **Load.** The staged values are assigned. Then each other variable's value (or
   each partition's slice of it) is copied into a fresh 64-byte aligned buffer by
   worker threads, handed to TensorFlow through DLPack (TensorFlow adopts the
   buffer; no second copy) and assigned with one ``AssignVariableOp`` per
   variable. The old value's memory is released as each assign lands.

Guarantees and their memory cost (``staging``):

- ``"stream"`` (default): a checksum or size error, a missing data file, or a
  value that does not fit its variable raises before the first assign, so
  nothing changes. Peak extra memory is the largest tensor plus ``window_bytes``
  (64 MiB by default), plus the tensors of step 1 that are held in memory
  (strings and the rare TensorFlow-only dtypes). The bytes are read twice from
  the page cache; a data file written *in place* meanwhile (TensorFlow never does
  this: it writes new files and renames them; a file replaced or deleted
  meanwhile is harmless, it is held open) is caught by its size and modification
  time, before the first assign or, if it happens during the load pass, right
  after it (see below). A restore that fits in that bound anyway is staged
  whole, as with ``"all"``: one pass, and the stronger guarantee; a bigger one
  stages what fits and streams the rest. Staged values are read with
  ``preadv``: a data file truncated in place meanwhile raises
  :class:`~tf1compat_init.CheckpointCorruptError`. The verify pass and the stream
  read the memory-mapped files: as with ``numpy.memmap``, truncating one in place
  while they read it makes the process fail (``SIGBUS``).
- ``"all"``: every value is copied into its final buffer and verified *there*
  before the first assign, so what is assigned is exactly what was checked, even
  if the files change during the restore. Peak extra memory is the size of
  everything restored.

Pairs with tensor transforms (:mod:`tf1compat_init.transforms`) are checked and
verified with the rest before the first assign, then computed and assigned one
route at a time after the plain values (:mod:`tf1compat_init._apply_routes`).

Checkpoints without a native reader (or entries it cannot stream) fall back to
reading everything first (``checkpoint.read``), which is all or nothing with the
values' size in memory.

Every assignment is also checked against its variable (dtype, shape, eager) before
the first one. What no check can foresee can still fail after some assigns:
TensorFlow failing inside an assign (a device out of memory) and, with
``"stream"``, the load pass running out of memory for a buffer or finding a file
written in place. Undoing that would mean keeping every replaced value, the
checkpoint's size in memory (``"all"`` spends it on staging instead). Such a
failure is never silent: it raises :class:`~tf1compat_init.PartialRestoreError`,
which names the variables that changed (``.changed``) and those that did not
(``.unchanged``), with the cause chained; running the restore again sets every
variable.
"""

from __future__ import annotations

import functools
import logging
import math
import sys
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ._assign_batch import BATCH, BatchAssign, batch_assign
from ._gc import gc_paused
from ._jobs import _Job, _part_slices, _tf_dtype
from .bundle import fastread as _fastread
from .bundle.fastread import ALIGNMENT, FastReader, ReadRequest, aligned_empty
from .bundle.remote import reader_for
from .errors import PartialRestoreError, TargetError
from .plan import RestorePlan, dtype_name
from .report import RestoreReport, fmt_shape, shapes_compatible
from .variables import TargetVariable, variable_shape
from .view import NamedView

__all__ = ["apply_plan"]

logger = logging.getLogger(__name__)


#: dtype name -> whether EagerTensor._numpy() is a view of the tensor (checked once).
_SHARES_MEMORY: dict[str, bool] = {}


def _tf() -> Any:
    import tensorflow as tf

    return tf


class _Assigner:
    """Turns numpy buffers into tensors TensorFlow adopts, and assigns them."""

    # numpy and TensorFlow exchange these through DLPack without a copy (bool is
    # refused by TF 2.15; a refusal is remembered and the copy path used instead).
    _DLPACK = {
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

    def __init__(self) -> None:
        tf = _tf()
        self.tf = tf
        self.dlpack_ok = set(self._DLPACK)
        self._from_dlpack = tf.experimental.dlpack.from_dlpack
        self._assign_op = tf.raw_ops.AssignVariableOp
        self.fast_assign = self._fast_assign_op()
        try:
            from tensorflow.python.ops.resource_variable_ops import (
                ResourceVariable,
                UninitializedVariable,
            )

            self._plain_types: tuple[type, ...] = (ResourceVariable, UninitializedVariable)
        except ImportError:  # pragma: no cover - layout of a future TensorFlow
            self._plain_types = ()
        self._routes: dict[tuple[np.dtype, Any], bool] = {}
        self._empty = tf.raw_ops.Empty
        self._fast_empty = self._fast_op("Empty")
        self._tf_dtypes: dict[np.dtype, Any] = {}
        self._no_tf_buffers: set[np.dtype] = set()
        self.batch: BatchAssign | None = None
        self._cpu_devices: dict[str, bool] = {}
        self.adopted = 0
        self.peak_read_ahead = 0  # bytes read but not yet assigned, at most
        self.peak_held = 0  # small values the stream held back for a batch, at most

    def adopt(self, loaded: Any, dtype: Any) -> Any:
        """The tensor of a buffer from the fast reader: its owner, or a DLPack import."""
        if loaded.owner is not None:
            self.adopted += 1
            return loaded.owner
        buffer = loaded.buffer
        if self._routes.get((buffer.dtype, dtype)) and buffer.size:
            try:  # the common case, inlined: an aligned buffer TensorFlow can adopt
                t = self._from_dlpack(buffer.__dlpack__())
            except Exception:  # noqa: BLE001 - tensor() below learns the refusal
                pass
            else:
                self.adopted += 1
                return t
        return self.tensor(buffer, dtype, aligned=True)

    def tensor(self, value: np.ndarray, dtype: Any, *, aligned: bool = False) -> Any:
        """A tensor of ``value``, sharing its buffer when TensorFlow can adopt it.

        Args:
            value: the array.
            dtype: the TensorFlow dtype the tensor must have.
            aligned: the caller guarantees a C-contiguous, 64-byte aligned buffer
                (the fast reader's); otherwise it is checked here.
        """
        route = self._routes.get((value.dtype, dtype))
        if route is None:
            name = value.dtype.name
            route = self._routes[(value.dtype, dtype)] = (
                not value.dtype.hasobject and name in self.dlpack_ok and name == dtype.name
            )
        if (
            route
            and value.size
            and (aligned or (value.flags.c_contiguous and value.ctypes.data % ALIGNMENT == 0))
        ):
            try:
                t = self._from_dlpack(value.__dlpack__())
            except Exception as e:  # noqa: BLE001 - any refusal means "copy instead"
                logger.debug("DLPack refused %s (%s); copying values of that dtype", dtype, e)
                self.dlpack_ok.discard(value.dtype.name)
                self._routes.clear()
            else:
                self.adopted += 1
                return t
        if value.dtype.hasobject:
            return self.tf.constant(value, dtype=dtype)
        return self.tf.convert_to_tensor(value, dtype=dtype)

    def allocate(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, Any] | None:
        """A fresh tensor from TensorFlow's allocator, and a writable view of its memory.

        TensorFlow keeps the memory of the values it frees (the variables' old
        values) for its next allocations. Big buffers taken from it reuse that
        memory: a restore then needs no more memory than its window, where numpy
        buffers would add the checkpoint's size, and the memory is already mapped.
        The byte buffers that group small tensors come from here too, from 1 MiB on
        (``_fastread.ALLOCATED_GROUP_BYTES``): numpy's fresh 4 MiB allocations cost
        32k page faults per restore of 2,000 tensors of 64 KiB, TensorFlow's reused
        ones none (12-19% faster, alternating runs).
        The tensor is private until it is assigned, so filling it is safe, and the
        view keeps the tensor's memory alive by itself (tested), so views into a
        group outlive the tensor that allocated it.
        """
        if dtype in self._no_tf_buffers:
            return None
        try:
            tf_dtype = self._tf_dtypes.get(dtype)
            if tf_dtype is None:
                tf_dtype = self.tf.dtypes.as_dtype(dtype)
                if not self._shares_memory(tf_dtype):
                    raise TypeError("EagerTensor._numpy() does not share the tensor's memory")
                self._tf_dtypes[dtype] = tf_dtype
            tensor, view = self._empty_tensor(shape, tf_dtype)
        except Exception as e:  # noqa: BLE001 - any failure means "use numpy memory"
            logger.debug("no TensorFlow-allocated buffers for %s (%s); using numpy", dtype, e)
            self._no_tf_buffers.add(dtype)
            return None
        return view, tensor

    def _empty_tensor(self, shape: tuple[int, ...], tf_dtype: Any) -> tuple[Any, np.ndarray]:
        tf = self.tf
        tensor = None
        with tf.device("/CPU:0"):  # a GPU variable gets its value copied by the assign
            if self._fast_empty is not None:
                try:  # 10-20 us, where tf.raw_ops.Empty's wrapper takes 100-250 us
                    shape_tensor = tf.constant(np.array(shape, dtype=np.int32))
                    tensor = self._fast_empty(shape_tensor, "dtype", tf_dtype, "init", False)
                except Exception:  # noqa: BLE001 - the public op says why, or works
                    logger.debug("the fast path refused Empty; using tf.raw_ops.Empty")
                    self._fast_empty = None
            if tensor is None:
                tensor = self._empty(shape=shape, dtype=tf_dtype, init=False)
        return tensor, tensor._numpy()  # a view of the tensor's memory (.numpy() copies)

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

    @staticmethod
    def _fast_op(op: str) -> Any:
        """``f(*inputs_and_attrs)``: eager ``op`` through TensorFlow's C fast path, or None."""
        try:
            from tensorflow.python import pywrap_tfe
            from tensorflow.python.eager import context

            return functools.partial(pywrap_tfe.TFE_Py_FastPathExecute, context.context(), op, None)
        except (ImportError, AttributeError):  # pragma: no cover - a future TensorFlow
            return None

    def _fast_assign_op(self) -> Any:
        """``f(handle, tensor, "validate_shape", False)``: the eager op without its wrapper.

        ``tf.raw_ops.AssignVariableOp`` spends a few microseconds in Python around
        TensorFlow's fast-path call, as much again as the op for a small tensor. The
        call is private API, so it is looked up defensively; any failure through it
        (an error, or TensorFlow declining the fast path) is retried through
        :meth:`assign`, which raises TensorFlow's own typed error.
        """
        fast = self._fast_op("AssignVariableOp")
        if fast is None:  # pragma: no cover - a future TensorFlow
            op = self._assign_op
            return lambda handle, tensor, *_: op(resource=handle, value=tensor)
        return fast

    def handle(self, variable: Any) -> Any:
        """The resource handle :meth:`assign` would assign to directly, or None."""
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
            cpu = self._cpu_devices[device] = _on_cpu(handle)
        return cpu

    def assign_many(self, pairs: list[tuple[_Job, Any]], done: list[_Job]) -> None:
        """Assigns each ``(job, tensor)``, noting each one in ``done`` once it landed.

        With batching on, plain CPU variables are assigned ``BATCH`` at a time (by
        dtype), the others one by one.
        """
        assign_to, handle_of, landed = self.assign_to, self.handle, done.append
        batch = self.batch
        if batch is None or len(pairs) < batch.size:
            for job, tensor in pairs:
                variable = job.part.variable
                assign_to(handle_of(variable), variable, tensor)
                landed(job)
            return
        pending = _Pending(self, done)
        for job, tensor in pairs:
            variable = job.part.variable
            handle = handle_of(variable)
            if self.batchable(handle):
                pending.add(tensor.dtype, job, handle, tensor)
            else:
                assign_to(handle, variable, tensor)
                landed(job)
        pending.flush_all()

    def flush(self, dtype: Any, group: _Batch, done: list[_Job]) -> None:
        """Assigns a batch's values: in one call when it is full, else one by one.

        A failed call is redone one assign at a time (assigning a value twice is
        harmless), so an error names the variable TensorFlow refused. The variables
        after it in the batch may have been assigned by the failed call: they are
        noted in ``done`` too, so a :class:`PartialRestoreError` never misses one.
        """
        jobs, handles, tensors = group.jobs, group.handles, group.tensors
        if not jobs:
            return
        batch = self.batch
        if batch is not None and len(jobs) == batch.size:
            try:
                batch(dtype, handles, tensors)
            except Exception as e:  # noqa: BLE001 - redone one by one below
                logger.debug(
                    "a batch of %d assigns failed (%s); assigning one by one", len(jobs), e
                )
            else:
                done.extend(jobs)
                group.clear()
                return
            for i, (job, handle, tensor) in enumerate(zip(jobs, handles, tensors, strict=True)):
                try:
                    self.assign_to(handle, job.part.variable, tensor)
                except BaseException:
                    done.extend(jobs[i:])  # the failed call may have assigned these
                    group.clear()
                    raise
                done.append(job)
        else:
            for job, handle, tensor in zip(jobs, handles, tensors, strict=True):
                self.assign_to(handle, job.part.variable, tensor)
                done.append(job)
        group.clear()

    def assign_to(self, handle: Any, variable: Any, tensor: Any) -> None:
        """Assigns ``tensor`` to ``variable``, whose :meth:`handle` is ``handle``."""
        if handle is None:
            variable.assign(tensor)
            return
        try:
            self.fast_assign(handle, tensor, "validate_shape", False)
        except Exception:  # noqa: BLE001 - retried for TensorFlow's typed error
            self.assign(variable, tensor)

    def assign(self, variable: Any, tensor: Any) -> None:
        # A plain eager resource variable (or the one a Keras 3 variable wraps) takes
        # the raw op (a fifth of the cost of .assign()). Anything else (distributed,
        # Keras wrappers) gets .assign() so that it reaches every replica or component.
        handle = self.handle(variable)
        if handle is None:
            variable.assign(tensor)
        else:
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


class _Batch:
    """Assigns waiting to be made together: their jobs, handles and tensors."""

    __slots__ = ("jobs", "handles", "tensors", "nbytes")

    def __init__(self) -> None:
        self.jobs: list[_Job] = []
        self.handles: list[Any] = []
        self.tensors: list[Any] = []
        self.nbytes = 0

    def add(self, job: _Job, handle: Any, tensor: Any, nbytes: int = 0) -> None:
        self.jobs.append(job)
        self.handles.append(handle)
        self.tensors.append(tensor)
        self.nbytes += nbytes

    def clear(self) -> None:
        self.jobs, self.handles, self.tensors, self.nbytes = [], [], [], 0


class _Pending:
    """Small assigns waiting for their batch, one :class:`_Batch` per dtype.

    A batch is assigned as soon as it is full. With ``hold``, at most that many bytes
    of values wait: one more flushes every batch (the partial ones one by one).
    """

    def __init__(self, assigner: _Assigner, done: list[_Job], hold: int | None = None) -> None:
        self.assigner, self.done, self.hold = assigner, done, hold
        self.groups: dict[Any, _Batch] = {}
        self.held = 0

    def add(self, dtype: Any, job: _Job, handle: Any, tensor: Any, nbytes: int = 0) -> None:
        assigner = self.assigner
        if self.hold is not None and self.held + nbytes > self.hold:
            self.flush_all()
        group = self.groups.get(dtype)
        if group is None:
            group = self.groups[dtype] = _Batch()
        group.add(job, handle, tensor, nbytes)
        self.held += nbytes
        assigner.peak_held = max(assigner.peak_held, self.held)
        if assigner.batch is not None and len(group.jobs) == assigner.batch.size:
            self.held -= group.nbytes
            assigner.flush(dtype, group, self.done)

    def flush_all(self) -> None:
        for dtype, group in self.groups.items():
            self.assigner.flush(dtype, group, self.done)
        self.held = 0


def _on_cpu(handle: Any) -> bool:
    return handle.device.endswith("CPU:0")


def _source(plan: RestorePlan) -> tuple[Any, list[Any]]:
    """The checkpoint that holds the bytes, and the plan's pairs over its stored keys.

    Front ends plan against views of a checkpoint (object paths, saved names, a
    migration's new names: :class:`~tf1compat_init.view.NamedView`). This is the one
    place their names are mapped back to stored keys, so their plans take the fast path.
    """
    checkpoint, entries = plan.checkpoint, plan.entries
    while isinstance(checkpoint, NamedView):
        entries = checkpoint.lower(entries)
        checkpoint = checkpoint.base
    return checkpoint, entries


def _jobs(entries: list[Any], targets: Mapping[str, TargetVariable]) -> list[_Job]:
    jobs = []
    for pair in entries:
        if pair.route is not None:
            continue  # transformed: see _apply_routes
        try:
            target = targets[pair.target]
        except KeyError:
            raise TargetError(
                f"the plan loads target {pair.target!r} but no variable of that name was passed"
                f" to apply_plan; pass the targets the plan was made for"
            ) from None
        for part in target.parts:
            jobs.append(_Job(pair.checkpoint_key, pair.target, part, _part_slices(target, part)))
    return jobs


def _check_fits(jobs: list[_Job], checkpoint: Any) -> None:
    """Checks every assignment before the first one, so none can fail half way."""
    names: dict[Any, str | None] = {}
    for job in jobs:
        info = checkpoint.variables[job.key]
        shape = info.shape
        if job.slices is not None:
            if len(job.slices) != len(shape) or any(
                s.stop > d for s, d in zip(job.slices, shape, strict=True)
            ):
                raise TargetError(
                    f"partition of {job.target} at offset {list(job.part.offset)} with shape"
                    f" {fmt_shape(job.part.shape)} does not fit checkpoint tensor {job.key}"
                    f" {fmt_shape(shape)}; nothing was assigned"
                )
            shape = tuple(s.stop - s.start for s in job.slices)
        variable = job.part.variable
        if getattr(variable, "_in_graph_mode", False):
            raise RuntimeError(
                f"variable {job.target} belongs to a tf.Graph, but apply_plan assigns"
                f" eagerly; nothing was assigned. Use the tf1compat_init.v1 front end for"
                f" graph-mode variables"
            )
        var_shape = variable_shape(variable)
        dtype = variable.dtype
        var_dtype = names.get(dtype)
        if var_dtype is None:
            var_dtype = names[dtype] = dtype_name(dtype)
        if var_dtype != info.dtype or not shapes_compatible(var_shape, shape):
            raise TargetError(
                f"variable {job.target} is {var_dtype}{fmt_shape(var_shape)} but checkpoint"
                f" tensor {job.key} gives it {info.dtype}{fmt_shape(shape)}; nothing was"
                f" assigned. Make a new plan for these variables"
            )


def apply_plan(
    plan: RestorePlan,
    targets: Mapping[str, TargetVariable],
    *,
    staging: str | None = None,
    threads: int | None = None,
    window_bytes: int | None = None,
) -> RestoreReport:
    """Assigns every planned value to its target variable, all or nothing.

    Every value is verified (CRC32C, sizes) before the first variable changes; see
    the module docstring for how ``staging`` trades memory for the guarantee.
    Variables keep their device: values are assigned where each variable lives.

    Args:
        plan: a checked plan from :func:`~tf1compat_init.plan_restore`.
        targets: target name -> :class:`~tf1compat_init.variables.TargetVariable`
            (from :func:`~tf1compat_init.variables.collect_targets`).
        staging: ``"stream"`` (bounded memory) or ``"all"`` (every value staged and
            verified in its final buffer before any assign); ``None`` (default): the
            plan's ``policy.staging``, itself ``"stream"`` unless the front end was
            given ``staging=``.
        threads: reader threads (default: the CPU count, 2 to 8).
        window_bytes: bytes read ahead of the assigns, beyond the largest tensor
            (default ``_fastread.DEFAULT_WINDOW_BYTES``, 64 MiB, read at call time).

    Returns:
        The plan's report, with ``applied=True``.

    Raises:
        CheckpointCorruptError: a value fails its checksum or size check; nothing
            was assigned.
        CheckpointNotFoundError: a data file is gone; nothing was assigned.
        TargetError: a variable no longer fits its planned value; nothing was assigned.
        PartialRestoreError: something failed after the first assign (out of memory,
            TensorFlow failing inside an assign, a data file written in place during
            the restore); it names the variables that changed.
        RuntimeError: called in graph mode (inside ``tf.function`` or a
            ``tf.compat.v1`` graph), or a target is a graph variable: this assigns
            eagerly; nothing was assigned.

    Example:
        >>> targets = collect_targets(model.variables)  # doctest: +SKIP
        >>> plan = plan_restore("/tmp/pretrained", target_specs(targets))  # doctest: +SKIP
        >>> apply_plan(plan, targets).applied  # doctest: +SKIP
        True
    """
    # The policy checks the value (``staging must be one of ...``).
    staging = (plan.policy if staging is None else plan.policy.replace(staging=staging)).staging
    if window_bytes is None:
        window_bytes = _fastread.DEFAULT_WINDOW_BYTES
    start = time.perf_counter()
    checkpoint, entries = _source(plan)
    jobs = _jobs(entries, targets)
    groups: list[Any] = []
    if any(p.route is not None for p in entries):
        from . import _apply_routes as routes

        groups = routes.routed_groups(entries, targets)
    if jobs or groups:
        tf = _tf()
        if not tf.executing_eagerly():
            raise RuntimeError(
                "apply_plan assigns eagerly, but it was called in graph mode (inside a"
                " tf.function or a tf.compat.v1 Graph). Call it outside, or use the"
                " tf1compat_init.v1 front end, which builds graph-mode initializers"
            )
        _check_fits(jobs, checkpoint)
        read: dict[str, Any] = {}
        if groups:  # transformed values: checked and verified before the first assign too
            routes.check_groups(groups, checkpoint)
            read = routes.verify_groups(groups, checkpoint)
        assigner = _Assigner()
        # A restore allocates a few objects per variable; with TensorFlow's large heap
        # loaded, each full collection they trigger costs 100+ ms. Nothing here makes
        # reference cycles, so collection waits until the restore is over.
        done: list[_Job] = []  # assigned so far, to name them if a later step fails
        try:
            with gc_paused():
                bundle = getattr(checkpoint, "bundle", None)
                nbytes = 0
                if not jobs:
                    pass
                elif bundle is None:
                    nbytes = _apply_in_memory(checkpoint, jobs, assigner, done)
                else:
                    nbytes = _apply_fast(
                        checkpoint, bundle, jobs, assigner, staging, threads, window_bytes, done
                    )
                if groups:
                    nbytes += routes.assign_groups(groups, checkpoint, read, assigner, done)
        except Exception as e:
            if not done:
                raise  # nothing changed: the error is the whole story
            jobs += [job for g in groups for job, _ in g.jobs]
            raise _partial(jobs, done, e, staging) from e
        took = time.perf_counter() - start
        jobs += [job for g in groups for job, _ in g.jobs]
        logger.info(
            "assigned %d variables (%.1f MiB, %d adopted without a copy, peak read-ahead"
            " %.1f MiB) in %.3f s",
            len(jobs),
            nbytes / 2**20,
            assigner.adopted,
            assigner.peak_read_ahead / 2**20,
            took,
        )
    plan.report.applied = True
    logger.info("%s", plan.report.summary())
    return plan.report


def _partial(jobs: list[_Job], done: list[_Job], cause: Exception, staging: str) -> Exception:
    """The error for a failure after some assigns: which variables changed, and what to do."""
    changed = list(dict.fromkeys(j.target for j in done))
    landed = set(changed)
    unchanged = [t for t in dict.fromkeys(j.target for j in jobs) if t not in landed]
    total = len(changed) + len(unchanged)
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    hint = (
        "; staging='all' (a keyword of every front end, and of apply_plan) stages every value"
        " before the first assign, at the cost of the restore's size in memory"
        if staging == "stream"
        else ""
    )
    logger.error("restore failed after assigning %d of %d variables", len(changed), total)
    return PartialRestoreError(
        f"restore failed after {len(changed)} of {total} variables were assigned ({shown}):"
        f" {type(cause).__name__}: {cause}. The other {len(unchanged)} keep their old values"
        f" (see .changed and .unchanged). Every checksum, shape and dtype was checked before"
        f" the first assign: fix the cause (memory, the device, a process writing the"
        f" checkpoint) and run the restore again, which sets every variable{hint}",
        changed=changed,
        unchanged=unchanged,
    )


def _apply_in_memory(
    checkpoint: Any, jobs: list[_Job], assigner: _Assigner, done: list[_Job]
) -> int:
    """Reads (and verifies) everything, then assigns: for checkpoints without a bundle."""
    tf = assigner.tf
    values = checkpoint.read(list(dict.fromkeys(j.key for j in jobs)))
    tensors = []
    nbytes = 0
    for job in jobs:
        value = np.asarray(values[job.key])
        if job.slices is not None:
            part = value[job.slices]
            value = aligned_empty(part.shape, part.dtype) if not part.dtype.hasobject else part
            if not part.dtype.hasobject:
                np.copyto(value, part)
        nbytes += value.nbytes
        tensors.append(assigner.tensor(value, _tf_dtype(tf, checkpoint.variables[job.key].dtype)))
    assigner.assign_many(list(zip(jobs, tensors, strict=True)), done)
    return nbytes


def _fits_in_window(bundle: Any, jobs: list[_Job], fast: set[str], window_bytes: int) -> bool:
    """Whether staging everything stays within the stream's bound (window + largest)."""
    sizes = {k: bundle.entries[k].size for k in fast}
    if not sizes:
        return True
    parts = sum(
        math.prod(j.part.shape)
        * (bundle.entries[j.key].size // max(1, math.prod(bundle.entries[j.key].shape)))
        for j in jobs
        if j.slices is not None and j.key in fast
    )
    return sum(sizes.values()) + parts <= window_bytes + max(sizes.values())


def _staged_head(
    bundle: Any, jobs: list[_Job], fast_keys: list[str], window_bytes: int
) -> set[str]:
    """The keys ``"stream"`` stages whole: all if they fit its bound, else a file-order prefix.

    Staging a value (copy, then checksum in its final buffer) reads the page cache
    once; streaming it reads it twice (checksum where it lies, then copy). The
    stream's memory bound, the window plus the largest tensor, is free until the
    stream starts, so the first values in the files that fit in it are staged.
    Keys with partitioned targets are left to the stream, which copies each slice.
    """
    fast = set(fast_keys)
    if _fits_in_window(bundle, jobs, fast, window_bytes):
        return fast
    entries = bundle.entries
    sliced = {j.key for j in jobs if j.slices is not None}
    budget = window_bytes + max(entries[k].size for k in fast_keys)
    head: set[str] = set()
    used = 0
    for key in sorted(fast_keys, key=lambda k: (entries[k].shard_id, entries[k].offset)):
        if key in sliced:
            continue
        used += entries[key].size
        if used > budget:
            break
        head.add(key)
    return head


def _staged_tensors(
    jobs: list[_Job], staged: dict[str, Any], assigner: _Assigner, dtypes: dict[str, Any]
) -> tuple[list[tuple[_Job, Any]], int, int]:
    """Tensors for the jobs whose values are staged; empties ``staged``.

    Returns:
        ``(pending assigns, bytes held, bytes assigned)``.
    """
    held = sum(loaded.buffer.nbytes for loaded in staged.values())
    nbytes = 0
    tensors = {}  # key -> the tensor that adopted its whole buffer, shared by targets
    pending = []
    for job in jobs:
        loaded = staged.get(job.key)
        if loaded is None:
            continue
        whole = loaded.buffer
        if job.slices is None:
            if job.key not in tensors:
                tensors[job.key] = assigner.adopt(loaded, dtypes[job.key])
                nbytes += whole.nbytes
            pending.append((job, tensors[job.key]))
        else:
            part = aligned_empty(job.part.shape, whole.dtype)
            np.copyto(part, whole[job.slices])
            nbytes += part.nbytes
            held += part.nbytes
            pending.append((job, assigner.tensor(part, dtypes[job.key], aligned=True)))
    staged.clear()  # our last references to the staged buffers: the tensors own them now
    return pending, held, nbytes


#: Bytes of small values the stream holds back to assign them in batches
#: (:mod:`tf1compat_init._assign_batch`); the stream's read-ahead window shrinks by
#: as much, so the restore's memory bound is unchanged. Values up to
#: ``HOLD_BYTES // BATCH`` (64 KiB) are held; bigger ones are assigned as they come.
HOLD_BYTES = 8 << 20


def _stream(
    reader: FastReader,
    jobs: list[_Job],
    assigner: _Assigner,
    dtypes: dict[str, Any],
    done: list[_Job],
) -> int:
    """Copies each job's (verified) value into a fresh buffer and assigns it at once.

    Small values for plain CPU variables wait (at most ``HOLD_BYTES`` of them) to be
    assigned a batch at a time, when the restore batches.
    """
    nbytes = 0
    handle_of = assigner.handle
    # One buffer per variable: never two imports of the same memory.
    requests = [ReadRequest(j.key, j.slices, (j, handle_of(j.part.variable))) for j in jobs]
    adopt, assign_to, landed = assigner.adopt, assigner.assign_to, done.append
    batch = assigner.batch
    small = HOLD_BYTES // batch.size if batch is not None else -1
    hold = min(HOLD_BYTES, reader.window_bytes) if batch is not None else 0
    reader.window_bytes -= hold
    pending = _Pending(assigner, done, hold)
    for loaded in reader.stream(requests, allocate=assigner.allocate):
        job, handle = loaded.request.token
        n = loaded.buffer.nbytes
        nbytes += n
        dtype = dtypes[job.key]
        tensor = adopt(loaded, dtype)
        del loaded
        if n <= small and assigner.batchable(handle):
            pending.add(dtype, job, handle, tensor, n)
        else:
            assign_to(handle, job.part.variable, tensor)
            landed(job)
        del tensor
    pending.flush_all()
    return nbytes


def _small_cpu_jobs(bundle: Any, jobs: list[_Job], fast: set[str], assigner: _Assigner) -> int:
    """How many jobs could be batched: small values of the fast path, CPU variables."""
    small = HOLD_BYTES // BATCH
    n = 0
    for job in jobs:
        if job.key in fast and bundle.entries[job.key].size <= small:
            n += 1
    if n < BATCH:
        return n
    handle = assigner.handle(jobs[0].part.variable)
    return n if handle is not None and _on_cpu(handle) else 0


def _apply_fast(
    checkpoint: Any,
    bundle: Any,
    jobs: list[_Job],
    assigner: _Assigner,
    staging: str,
    threads: int | None,
    window_bytes: int,
    done: list[_Job],
) -> int:
    tf = assigner.tf
    dtypes = {
        k: _tf_dtype(tf, checkpoint.variables[k].dtype) for k in dict.fromkeys(j.key for j in jobs)
    }
    reader = reader_for(bundle, threads=threads, window_bytes=window_bytes)
    with reader:
        fast_keys = [k for k in dtypes if reader.dtype_of(k) is not None]
        fast = set(fast_keys)
        slow_jobs = [j for j in jobs if j.key not in fast]
        # Step 1: everything that could fail is checked before any assign: values read
        # in memory (strings, TensorFlow-only dtypes), values staged whole (checked in
        # their final buffers), and the rest checked where they lie in the files.
        slow_values = checkpoint.read(list(dict.fromkeys(j.key for j in slow_jobs)))
        head = fast if staging == "all" else _staged_head(bundle, jobs, fast_keys, window_bytes)
        staged = {
            loaded.request.key: loaded
            for loaded in reader.stream(
                [ReadRequest(k) for k in fast_keys if k in head],
                crc=True,
                allocate=assigner.allocate,
            )
        }
        rest = [k for k in fast_keys if k not in head]
        if rest:
            reader.verify(rest)
        reader.check_unchanged()
        # Step 2: assign. The staged values first, then the rest as it streams.
        assigner.start_batching(_small_cpu_jobs(bundle, jobs, fast, assigner))
        pending, held, nbytes = _staged_tensors(jobs, staged, assigner, dtypes)
        assigner.assign_many(pending, done)
        del pending
        if rest:
            nbytes += _stream(
                reader,
                [j for j in jobs if j.key in fast and j.key not in head],
                assigner,
                dtypes,
                done,
            )
            # The copies read the files again: the values assigned are the ones verified
            # unless a writer changed the files in place meanwhile.
            reader.check_unchanged()
        # The stream's window shrank by what it may hold back: the sum is its bound.
        assigner.peak_read_ahead = max(held, reader.peak_inflight_bytes + assigner.peak_held)
    # Step 2b: values read in memory in step 1.
    for job in slow_jobs:
        value = np.asarray(slow_values[job.key])
        if job.slices is not None:
            value = value[job.slices]
        nbytes += value.nbytes
        assigner.assign_many([(job, assigner.tensor(value, dtypes[job.key]))], done)
    return nbytes
