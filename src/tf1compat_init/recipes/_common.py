# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Patterns shared by the recipes."""

from __future__ import annotations

from ..engine.planning.policy import OPTIMIZER_STATE

#: Checkpoint keys that are training state, not model weights: every optimizer's state
#: (:data:`tf1compat_init.policy.OPTIMIZER_STATE`, the one list the ``optional`` policy
#: and migrate's ``drop_optimizer`` use too: TF's slots, bert's ``adam_m``/``adam_v``,
#: LAMB's, Adafactor's, Keras 2's, the beta powers, ``global_step``) and moving-average
#: shadows. A recipe drops them with a report line each.
TRAINING_STATE: tuple[str, ...] = (*OPTIMIZER_STATE, r"/ExponentialMovingAverage(_\d+)?$")
