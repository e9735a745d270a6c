# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""tf1compat_init: exact, checked, fast TF1-style warm starts on current TensorFlow.

``import tf1compat_init`` imports no TensorFlow; the front ends
(``tf1compat_init.v1``, ``.keras``, ``.checkpoint``, ``.estimator``) import it when used.
``apply_plan`` is loaded on first use (it needs the bulk reader and, to run, TensorFlow).
"""

from typing import TYPE_CHECKING, Any

from . import transforms  # noqa: F401 - tf1compat_init.transforms, pure like the engine
from .engine.grammar.mapping import AssignmentMap
from .engine.planning.plan import RestorePlan, plan_restore
from .engine.planning.policy import DEFAULT_OPTIONAL, RestorePolicy
from .engine.planning.report import Mismatch, RestoreReport
from .engine.reading.reader import CheckpointInfo, VariableInfo, open_checkpoint
from .errors import (
    AssignmentMapError,
    CheckpointCorruptError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    PartialRestoreError,
    TargetError,
    Tf1CompatError,
    UnsupportedCheckpointError,
)

if TYPE_CHECKING:  # loaded lazily by __getattr__ below
    from .apply import apply_plan

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_OPTIONAL",
    "AssignmentMap",
    "AssignmentMapError",
    "CheckpointCorruptError",
    "CheckpointInfo",
    "CheckpointMismatchError",
    "CheckpointNotFoundError",
    "Mismatch",
    "PartialRestoreError",
    "RestorePlan",
    "RestorePolicy",
    "RestoreReport",
    "TargetError",
    "Tf1CompatError",
    "UnsupportedCheckpointError",
    "VariableInfo",
    "apply_plan",
    "open_checkpoint",
    "plan_restore",
]


def __getattr__(name: str) -> Any:
    # apply imports numpy and the bundle reader: the CLI and the pure parts do without.
    if name == "apply_plan":
        from .apply import apply_plan

        return apply_plan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
