# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Keras callbacks: a resume-aware warm start, and TF1's session hooks keyed on the global step.

The global step is ``model.optimizer.iterations``. The callbacks subclass the Keras
``Callback`` that TensorFlow wires up as ``tf.keras`` (Keras 3, or tf_keras under
``TF_USE_LEGACY_KERAS=1``, or Keras 2 on TF 2.15), so importing this module imports
TensorFlow.

**In a custom training loop** drive them through the standard protocol, with the model
compiled (or ``model.optimizer`` set) so that the global step exists::

    callbacks = keras.callbacks.CallbackList([init, saver, stop], model=model)
    callbacks.on_train_begin()
    for step, (x, y) in enumerate(dataset):
        callbacks.on_train_batch_begin(step)
        logs = train_step(x, y)            # applies gradients: iterations += 1
        callbacks.on_train_batch_end(step, logs)
        if model.stop_training:
            break
    callbacks.on_train_end()

Call ``callbacks.on_train_begin()`` after your own restore (if any), since
:class:`CheckpointInit` looks at ``optimizer.iterations`` then. It finds
``BackupAndRestore`` and :class:`CheckpointSaver` among the callbacks it runs with (the
same ``fit`` call or ``CallbackList``); when you call its methods by hand, pass
``resume_dir=``.
"""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from ..bundle import storage as _storage
from ..engine.planning.policy import UNSET, RestorePolicy
from ..engine.planning.preamble import prepare
from ..engine.planning.report import RestoreReport
from ..engine.reading.reader import pretrained_path
from ..errors import CheckpointNotFoundError
from ._load import check_map, load_checkpoint

__all__ = ["CheckpointInit", "CheckpointSaver", "LoggingTensor", "StopAtStep"]

logger = logging.getLogger(__name__)

Callback = tf.keras.callbacks.Callback

_clock = time.monotonic  # tests replace it to step through every_n_secs without sleeping

#: What Keras 3's BackupAndRestore writes directly in its ``backup_dir``.
_KERAS3_BACKUP_FILES = frozenset({"training_metadata.json", "latest.weights.h5"})
#: Where tf_keras and Keras 2 keep the backup: a CheckpointManager directory in ``backup_dir``.
_LEGACY_BACKUP_SUBDIR = "chief"


# -- shared helpers -------------------------------------------------------------------------


def global_step(model: Any, who: str) -> int:
    """``model.optimizer.iterations`` as an int; the callbacks' global step."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        raise RuntimeError(
            f"{who} needs the global step (model.optimizer.iterations), but the model has no "
            f"optimizer. Compile the model (model.compile(optimizer=...)); in a custom loop, "
            f"compile it too or set model.optimizer to the optimizer you step"
        )
    return int(np.asarray(optimizer.iterations.numpy()))


class _StepTimer:
    """Triggers at most once every N steps or once every N seconds (TF1's rule).

    The first query triggers; then a step triggers when it is at least ``every_steps``
    past the last triggered step, or when ``every_secs`` have passed since then.
    """

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        if every_secs is None and every_steps is None:
            raise ValueError("Either every_secs or every_steps should be provided.")
        if every_secs is not None and every_steps is not None:
            raise ValueError("Can not provide both every_secs and every_steps.")
        self.every_secs, self.every_steps = every_secs, every_steps
        self.reset()

    def reset(self) -> None:
        self.last_step: int | None = None
        self.last_time: float | None = None

    def should_trigger(self, step: int) -> bool:
        if self.last_step is None:
            return True
        if step == self.last_step:
            return False
        if self.every_secs is not None and self.last_time is not None:
            return _clock() >= self.last_time + self.every_secs
        return self.every_steps is not None and step >= self.last_step + self.every_steps

    def update(self, step: int) -> float | None:
        """Marks ``step`` as triggered; returns the seconds since the previous trigger."""
        now = _clock()
        elapsed = None if self.last_time is None else now - self.last_time
        self.last_step, self.last_time = step, now
        return elapsed


def _sibling_callbacks(callback: Any) -> list[Any]:
    """The callbacks ``callback`` runs with, read from the ``CallbackList`` calling it.

    Keras 3, tf_keras and Keras 2 all call ``on_train_begin`` from a ``CallbackList``
    method whose ``self.callbacks`` holds every callback of the run; no public API gives
    a callback its siblings. Empty when called some other way.
    """
    frame = inspect.currentframe()
    try:
        f = frame.f_back if frame is not None else None
        for _ in range(8):
            if f is None:
                break
            owner = f.f_locals.get("self")
            siblings = getattr(owner, "callbacks", None)
            if owner is not callback and isinstance(siblings, list | tuple):
                if any(c is callback for c in siblings):
                    return list(siblings)
            f = f.f_back
    finally:
        del frame
    return []


def _is_checkpoint_file(name: str) -> bool:
    """A ``checkpoint`` state file or a bundle ``*.index``: what a checkpoint leaves."""
    return name == "checkpoint" or name.endswith(".index")


def _holds_checkpoint(directory: str) -> bool:
    """A checkpoint directly in ``directory``: a ``checkpoint`` state file or a ``*.index``.

    That is what ``tf.train.CheckpointManager`` (``checkpoint`` + ``ckpt-N.index``) and
    ``Saver`` leave. Subfolders are not looked at: a run directory often keeps an exported
    or pretrained checkpoint below it (``export/model.ckpt.index``), which is not the
    run's own state.
    """
    try:
        names = _storage.listdir(directory)
    except OSError:  # absent, or not a directory
        if _storage.is_url(directory) and _storage.exists(directory):
            raise  # a remote store that fails: not a first run
        return False
    return any(_is_checkpoint_file(n) for n in names)


def _holds_backup(directory: str, depth: int = 2) -> bool:
    """A ``BackupAndRestore`` backup in ``directory`` or up to ``depth`` levels below it.

    Keras 3 writes its files directly in ``backup_dir``; tf_keras and Keras 2 keep a
    CheckpointManager directory in ``backup_dir/chief`` (and, on non-chief workers, a
    temporary one beside it), so the look goes deeper than :func:`_holds_checkpoint`.
    """
    if not _storage.isdir(directory):
        return False
    walk = tf.io.gfile.walk if _storage.is_url(directory) else os.walk
    for root, dirs, files in walk(directory):
        if any(f in _KERAS3_BACKUP_FILES or _is_checkpoint_file(f) for f in files):
            return True
        if root[len(directory) :].count(os.sep) >= depth:
            dirs[:] = []
    return False


def _resume_dir_has_state(directory: str) -> bool:
    """A checkpoint or a ``BackupAndRestore`` backup that ``resume_dir`` names.

    The directory itself, plus the one subfolder a tf_keras / Keras 2 backup lives in
    (``resume_dir`` is how a hand-driven :class:`CheckpointInit` learns of a backup), and
    no other subfolder.
    """
    if _holds_checkpoint(directory):
        return True
    if not _storage.isdir(directory):
        return False
    if any(_storage.isfile(_storage.join(directory, f)) for f in _KERAS3_BACKUP_FILES):
        return True
    return _holds_checkpoint(_storage.join(directory, _LEGACY_BACKUP_SUBDIR))


def _is_chief(model: Any) -> bool:
    strategy = getattr(model, "distribute_strategy", None) or tf.distribute.get_strategy()
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None)
    if resolver is None or task_type is None:
        return True
    if task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "worker" and resolver.task_id == 0 and not has_chief


# -- CheckpointInit ---------------------------------------------------------------------------


class CheckpointInit(Callback):
    """Warm-starts the model from a checkpoint at ``on_train_begin``, unless the run resumes.

    The warm start runs once per instance (a second ``fit`` with the same callback does
    not reload). It is skipped when the run resumes:

    - ``model.optimizer.iterations > 0``: the optimizer has stepped, or a restore ran
      before this callback (``BackupAndRestore`` or :class:`CheckpointSaver` placed
      before it, or your own ``Checkpoint.restore`` in a custom loop);
    - a ``BackupAndRestore`` or :class:`CheckpointSaver` among the same callbacks holds a
      backup or checkpoint that it is about to restore (they are placed after it);
    - ``resume_dir`` (one directory or several) holds a checkpoint or a backup.

    A :class:`CheckpointSaver` directory or a ``resume_dir`` counts only with a checkpoint
    directly in it (a ``checkpoint`` state file or a ``*.index``; for ``resume_dir`` also
    a ``BackupAndRestore`` backup, which tf_keras and Keras 2 keep in ``chief/``), so an
    exported checkpoint in a subfolder (``run/export/model.ckpt.index``) does not stop
    the warm start.

    Args:
        ckpt_dir_or_file: the pretrained checkpoint (directory, prefix, ``.index``).
        assignment_map: as :func:`tf1compat_init.keras.load_checkpoint`, ``"auto"``
            included.
        input_shape: builds an unbuilt model first (``model.build(input_shape)``, batch
            dimension ``None``); needed when fit builds the model lazily, since it is
            still unbuilt at ``on_train_begin``. Place the callback before
            ``BackupAndRestore``, which needs a built model.
        allow_missing: a checkpoint that does not exist (or ``None``) skips the warm start
            with a warning instead of raising.
        resume_dir: directories whose checkpoint or backup means "this run resumes".
        recipe: as :func:`~tf1compat_init.keras.load_checkpoint`.
        policy: a :class:`~tf1compat_init.RestorePolicy`; keywords below replace its fields.
        exclude, on_missing, on_mismatch, optional, on_conflict, staging: as
            :func:`~tf1compat_init.keras.load_checkpoint`.

    Attributes:
        policy: the :class:`~tf1compat_init.RestorePolicy` the warm start runs with.
        report: the :class:`~tf1compat_init.RestoreReport` of the warm start, or ``None``.
        skipped: why the warm start did not run, or ``None``.

    Example:
        >>> model.fit(x, y, callbacks=[CheckpointInit("tf1_run/", "auto",
        ...     input_shape=(None, 784)), keras.callbacks.BackupAndRestore("backup/")])
        ...     # doctest: +SKIP
    """

    def __init__(
        self,
        ckpt_dir_or_file: Any,
        assignment_map: Any = None,
        *,
        input_shape: Any = None,
        allow_missing: bool = False,
        resume_dir: str | os.PathLike | Iterable[str | os.PathLike] | None = None,
        recipe: Any = None,
        policy: RestorePolicy | None = None,
        exclude: Any = UNSET,
        on_missing: str = UNSET,
        on_mismatch: str = UNSET,
        optional: Any = UNSET,
        on_conflict: str = UNSET,
        staging: str = UNSET,
    ) -> None:
        super().__init__()
        check_map(assignment_map)
        given = {"exclude": exclude, "on_missing": on_missing, "on_mismatch": on_mismatch}
        given.update(optional=optional, on_conflict=on_conflict, staging=staging)
        # Only checked here: load_checkpoint resolves the recipe again when the run starts.
        _, policy = prepare("CheckpointInit", assignment_map, recipe, policy, given)
        if ckpt_dir_or_file is None and not allow_missing:
            raise CheckpointNotFoundError(
                "CheckpointInit got no checkpoint (None). On a first run "
                "tf.train.latest_checkpoint() returns None; check for it, or pass "
                "allow_missing=True to train from the initial values when there is none"
            )
        if isinstance(resume_dir, str | os.PathLike):
            resume_dir = [resume_dir]
        self.ckpt_dir_or_file = ckpt_dir_or_file
        self.assignment_map = assignment_map
        self.input_shape = input_shape
        self.allow_missing = allow_missing
        self.resume_dirs = [os.fspath(d) for d in resume_dir or ()]
        self.recipe = recipe
        self.policy = policy
        self.report: RestoreReport | None = None
        self.skipped: str | None = None
        self._done = False

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        self._build_if_needed()
        if self._done:
            return self._skip("it already ran once for this callback")
        self._done = True
        reason = self._resume_reason()
        if reason is not None:
            return self._skip(f"the run resumes: {reason}")
        if not self._checkpoint_exists():
            return
        self.report = load_checkpoint(
            self.model,
            self.ckpt_dir_or_file,
            self.assignment_map,
            recipe=self.recipe,
            policy=self.policy,
        )
        logger.info("CheckpointInit: warm start\n%s", self.report)

    def _build_if_needed(self) -> None:
        if not self.model.built and self.input_shape is not None:
            self.model.build(self.input_shape)

    def _skip(self, reason: str) -> None:
        self.skipped = reason
        logger.info("CheckpointInit: no warm start from %s: %s", self.ckpt_dir_or_file, reason)

    def _checkpoint_exists(self) -> bool:
        if not self.allow_missing:
            return True
        # Only an absent checkpoint may be missing; a broken one still raises.
        if pretrained_path(self.ckpt_dir_or_file, True, "CheckpointInit") is None:
            self.skipped = f"no checkpoint at {self.ckpt_dir_or_file}"
            return False
        return True

    def _resume_reason(self) -> str | None:
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            step = global_step(self.model, "CheckpointInit")
            if step > 0:
                return f"optimizer.iterations is {step}"
        # Each source with the look that fits what it restores from: a CheckpointSaver
        # restores only from its own directory, a BackupAndRestore maybe from a subfolder.
        candidates = [(d, "resume_dir", _resume_dir_has_state) for d in self.resume_dirs]
        for cb in _sibling_callbacks(self):
            if isinstance(cb, CheckpointSaver) and cb.restore:
                candidates.append((cb.checkpoint_dir, "CheckpointSaver", _holds_checkpoint))
            elif type(cb).__name__ == "BackupAndRestore" and hasattr(cb, "backup_dir"):
                candidates.append((os.fspath(cb.backup_dir), "BackupAndRestore", _holds_backup))
        for directory, source, has_state in candidates:
            if has_state(directory):
                return f"{source} directory {directory} holds a checkpoint"
        return None


# -- the TF1 hooks -------------------------------------------------------------------------------


class StopAtStep(Callback):
    """TF1's ``StopAtStepHook``: stops training at a global step.

    Sets ``model.stop_training`` once ``optimizer.iterations >= last_step``. ``num_steps``
    counts from the step at which each run (``on_train_begin``) starts, so a second
    ``fit`` with the same callback trains ``num_steps`` more. Like the TF1 hook, ``fit``
    still runs one step when it starts at or past ``last_step``; a custom loop that
    checks ``model.stop_training`` before each step runs none.

    Args:
        num_steps: steps to run from the start of the run.
        last_step: the global step after which to stop.

    Raises:
        ValueError: with TF1's texts, when neither or both are given.
    """

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        super().__init__()
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self.num_steps, self.last_step = num_steps, last_step
        self._stop_at: int | None = last_step

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        step = global_step(self.model, "StopAtStep")
        if self.num_steps is not None:
            self._stop_at = step + self.num_steps
        self._check(step)

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        self._check(global_step(self.model, "StopAtStep"))

    def _check(self, step: int) -> None:
        if self._stop_at is not None and step >= self._stop_at:
            self.model.stop_training = True


class LoggingTensor(Callback):
    """TF1's ``LoggingTensorHook`` for Keras: logs metrics every N steps or seconds.

    Values come from the batch logs Keras hands to ``on_train_batch_end`` (``"loss"``
    and the compiled metrics; in a custom loop, the ``logs`` you pass) or from metric
    objects (``metric.result()``). They are logged at INFO on this module's logger as
    ``"loss = 0.25, mae = 0.4 (0.113 sec)"``, the first step, then every ``every_n_iter``
    global steps or ``every_n_secs`` seconds.

    Differences from the TF1 hook: the values are what Keras logs (for ``fit`` the
    running mean over the epoch, not the tensor at that step), the step is the global
    step rather than the hook's own iteration count, and a name missing from the logs
    raises ``KeyError`` at the first logged step (TF1 raised in ``begin()``).

    Args:
        names_or_metrics: a name, a list of names or metric objects, or a dict
            ``tag -> name or metric`` (tags logged in sorted order, as TF1).
        every_n_iter: log every N global steps.
        every_n_secs: log every N seconds.
        at_end: also log at ``on_train_end``.
        formatter: ``dict tag -> value`` to a string, replacing the default format.

    Raises:
        ValueError: with TF1's texts, for a missing, doubled or non-positive frequency.
    """

    def __init__(
        self,
        names_or_metrics: Any,
        every_n_iter: int | None = None,
        every_n_secs: float | None = None,
        at_end: bool = False,
        formatter: Any = None,
    ) -> None:
        super().__init__()
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError(
                "either at_end and/or exactly one of every_n_iter and every_n_secs "
                "must be provided."
            )
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if isinstance(names_or_metrics, Mapping):
            self._items = {str(tag): names_or_metrics[tag] for tag in sorted(names_or_metrics)}
        else:
            if isinstance(names_or_metrics, str) or hasattr(names_or_metrics, "result"):
                names_or_metrics = [names_or_metrics]
            self._items = {_tag(item): item for item in names_or_metrics}
        self._timer = None if only_at_end else _StepTimer(every_n_secs, every_n_iter)
        self.at_end = at_end
        self.formatter = formatter
        self._last_logs: dict[str, Any] = {}

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        if self._timer is not None:
            self._timer.reset()
        self._last_logs = {}

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        self._last_logs = dict(logs or {})
        if self._timer is None:
            return
        step = global_step(self.model, "LoggingTensor")
        if self._timer.should_trigger(step):
            self._log(self._values(self._last_logs), self._timer.update(step))

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        if self.at_end:
            merged = {**self._last_logs, **(logs or {})}
            last = self._timer.last_time if self._timer is not None else None
            self._log(self._values(merged), None if last is None else _clock() - last)

    def _values(self, logs: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for tag, item in self._items.items():
            if hasattr(item, "result"):
                out[tag] = np.asarray(item.result())
            elif item in logs:
                out[tag] = np.asarray(logs[item])
            else:
                raise KeyError(
                    f"LoggingTensor: {item!r} is not in the training logs; they hold "
                    f"{', '.join(map(repr, logs)) or 'nothing'}. Log a compiled metric or "
                    f"'loss', or pass a metric object"
                )
        return out

    def _log(self, values: dict[str, Any], elapsed: float | None) -> None:
        if self.formatter is not None:
            logger.info("%s", self.formatter(values))
            return
        with np.printoptions(suppress=True):
            text = ", ".join(f"{tag} = {value}" for tag, value in values.items())
        if elapsed is None:
            logger.info("%s", text)
        else:
            logger.info("%s (%.3f sec)", text, elapsed)


def _tag(item: Any) -> str:
    return item if isinstance(item, str) else str(getattr(item, "name", item))


class CheckpointSaver(Callback):
    """TF1's ``CheckpointSaverHook``: saves every N global steps or seconds, and at the end.

    Writes ``tf.train.Checkpoint(model=..., optimizer=...)`` through a
    ``tf.train.CheckpointManager`` (``checkpoint_dir/ckpt-<step>``, keeping
    ``max_to_keep``). At ``on_train_begin`` it restores the latest checkpoint there, as
    ``MonitoredTrainingSession`` and ``Estimator`` did for their ``checkpoint_dir``, and
    :class:`CheckpointInit` treats that checkpoint as resume state.

    Differences from the TF1 hook: no checkpoint is written when training starts (TF1
    wrote one at session creation; here it would race with the warm start), and the
    restore lives here rather than in a session creator (``restore=False`` turns it off).
    Under ``MultiWorkerMirroredStrategy`` every worker saves, as TF requires; only the
    chief writes to ``checkpoint_dir``, the others to a temporary directory they delete.

    Args:
        checkpoint_dir: where checkpoints go.
        save_steps: save every N global steps.
        save_secs: save every N seconds.
        max_to_keep: checkpoints to keep (``None``: all).
        restore: restore the latest checkpoint in ``checkpoint_dir`` at ``on_train_begin``.

    Raises:
        ValueError: with TF1's texts, when neither or both frequencies are given.

    Attributes:
        restored: the checkpoint restored at ``on_train_begin``, or ``None``.
        saved: the steps saved during this callback's life.
    """

    def __init__(
        self,
        checkpoint_dir: str | os.PathLike,
        save_steps: int | None = None,
        save_secs: float | None = None,
        max_to_keep: int | None = 5,
        *,
        restore: bool = True,
    ) -> None:
        super().__init__()
        self._timer = _StepTimer(every_secs=save_secs, every_steps=save_steps)
        if max_to_keep is not None and max_to_keep < 1:
            raise ValueError(
                f"Invalid value for argument max_to_keep. Received: max_to_keep="
                f"{max_to_keep}. Expected a positive integer or None"
            )
        self.checkpoint_dir = os.fspath(checkpoint_dir)
        self.max_to_keep = max_to_keep
        self.restore = restore
        self.restored: str | None = None
        self.saved: list[int] = []
        self._manager: Any = None
        self._write_dir: str | None = None

    def on_train_begin(self, logs: Mapping[str, Any] | None = None) -> None:
        step = global_step(self.model, "CheckpointSaver")
        checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.model.optimizer)
        chief = _is_chief(self.model)
        # TF's rule for multi-worker saving: every worker saves (saving may need collectives);
        # only the chief's copy is kept.
        self._write_dir = self.checkpoint_dir if chief else tempfile.mkdtemp(prefix="ckpt_worker_")
        self._manager = tf.train.CheckpointManager(
            checkpoint, self._write_dir, max_to_keep=self.max_to_keep
        )
        latest = tf.train.latest_checkpoint(self.checkpoint_dir) if self.restore else None
        if latest is not None:
            status = checkpoint.restore(latest).expect_partial()
            if self.model.built:
                status.assert_existing_objects_matched()
            self.restored = latest
            step = global_step(self.model, "CheckpointSaver")
            logger.info("CheckpointSaver: resumed from %s (step %d)", latest, step)
        self._timer.reset()
        self._timer.update(step)

    def on_train_batch_end(self, batch: int, logs: Mapping[str, Any] | None = None) -> None:
        step = global_step(self.model, "CheckpointSaver")
        if self._timer.should_trigger(step):
            self._timer.update(step)
            self._save(step)

    def on_train_end(self, logs: Mapping[str, Any] | None = None) -> None:
        step = global_step(self.model, "CheckpointSaver")
        if step != self._timer.last_step:
            self._timer.update(step)
            self._save(step)
        if self._write_dir != self.checkpoint_dir:
            shutil.rmtree(self._write_dir, ignore_errors=True)

    def _save(self, step: int) -> None:
        path = self._manager.save(checkpoint_number=step)
        self.saved.append(step)
        logger.info("CheckpointSaver: saved %s", path)
