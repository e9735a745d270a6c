"""tf1compat_init: exact, checked, fast TF1-style warm starts on current TensorFlow.

``import tf1compat_init`` imports no TensorFlow; the front ends
(``tf1compat_init.v1``, ``.keras``, ``.checkpoint``, ``.estimator``) import it when used.
"""

from . import transforms  # noqa: F401 - tf1compat_init.transforms, pure like the engine
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
from .mapping import AssignmentMap
from .plan import DEFAULT_OPTIONAL, RestorePlan, plan_restore
from .reader import CheckpointInfo, VariableInfo, open_checkpoint
from .report import Mismatch, RestoreReport

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
    "RestoreReport",
    "TargetError",
    "Tf1CompatError",
    "UnsupportedCheckpointError",
    "VariableInfo",
    "open_checkpoint",
    "plan_restore",
]
