# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The library's exceptions.

Each one subclasses the builtin that callers already catch, so existing
``except FileNotFoundError`` / ``except ValueError`` code keeps working.
"""

from __future__ import annotations

from typing import Any


class Tf1CompatError(Exception):
    """Base class of every error this library raises on purpose."""


class CheckpointNotFoundError(Tf1CompatError, FileNotFoundError):
    """A checkpoint, or one of its files, is not where the caller said."""

    def __str__(self) -> str:  # FileNotFoundError would format (errno, str)
        return str(self.args[0]) if self.args else ""


class CheckpointCorruptError(Tf1CompatError, ValueError):
    """A checkpoint file exists but cannot be trusted: bad index, bad checksum, short data."""


class UnsupportedCheckpointError(Tf1CompatError, ValueError):
    """The native reader cannot decode an entry (callers fall back to TensorFlow)."""


class AssignmentMapError(Tf1CompatError, ValueError):
    """An assignment-map rule is malformed, reversed, or resolves to nothing."""


class TargetError(Tf1CompatError, ValueError):
    """The variables to restore cannot take a checkpoint as given.

    Two distinct variables share one target name, or the partitions of a partitioned
    variable do not tile its full shape (a gap, an overlap, a part outside it, or parts
    that disagree on the full shape).
    """


class CheckpointMismatchError(Tf1CompatError, ValueError):
    """The plan resolves, but checkpoint values do not fit the targets.

    Attributes:
        report: the :class:`~tf1compat_init.RestoreReport` describing every problem.
    """

    def __init__(self, message: str, report: Any = None) -> None:
        super().__init__(message)
        self.report = report


class PartialRestoreError(Tf1CompatError, RuntimeError):
    """A restore failed after it had assigned some variables: the model is mixed.

    Everything a checkpoint or a map can get wrong is found before the first assign,
    and then nothing changes. This error is for what no check can foresee: running
    out of memory for a buffer, TensorFlow failing inside an assign, or a data file
    rewritten in place while it was read. The cause is chained (``__cause__``).

    Attributes:
        changed: target names that were assigned (all or some of their partitions),
            in the order they were assigned.
        unchanged: target names that still hold their old values.
    """

    def __init__(self, message: str, changed: tuple = (), unchanged: tuple = ()) -> None:
        super().__init__(message)
        self.changed = tuple(changed)
        self.unchanged = tuple(unchanged)


class TransformError(AssignmentMapError):
    """A transform cannot apply: bad arguments, syntax, or shapes that do not fit it."""


class KerasModelError(Tf1CompatError, ValueError):
    """The Keras model cannot take a checkpoint as it is: unbuilt, empty, or ambiguous."""


class RemoteUnavailableError(Tf1CompatError, ImportError):
    """A URL was given, but TensorFlow (whose file systems read URLs) is not installed."""


class MigrationLockedError(Tf1CompatError, FileExistsError):
    """Another migrate is writing the same destination."""

    def __str__(self) -> str:  # FileExistsError would format (errno, str)
        return str(self.args[0]) if self.args else ""


class DiskFullError(Tf1CompatError, OSError):
    """The destination's file system has no room for a migrate's output.

    Raised before anything is written when the free space is known to be short, or when a
    write fails with ``ENOSPC``; either way nothing is installed and the temporary output
    is removed. ``errno`` is ``ENOSPC``.
    """

    def __init__(self, message: str) -> None:
        import errno

        super().__init__(errno.ENOSPC, message)
        self.message = message

    def __str__(self) -> str:  # OSError would format "[Errno 28] ..."
        return self.message
