"""Patterns shared by the recipes."""

from __future__ import annotations

#: Checkpoint keys that are training state, not model weights: optimizer slots (bert's
#: ``adam_m``/``adam_v``, ``tf.train`` optimizers' ``Adam``, ``Adam_1``, ``Momentum``,
#: ``RMSProp``, ``RMSProp_1``, ``Adagrad``, ``Ftrl``...), Adam's ``beta1_power`` and
#: ``beta2_power``, moving-average shadows and ``global_step``. A recipe drops them with
#: a report line each. Not :data:`tf1compat_init.policy.OPTIMIZER_STATE` on purpose: this
#: list is written against the recipes' model families (bert's ``adam_m``/``adam_v`` and
#: LAMB, which ``tf.compat.v1.train`` never names, EMA shadows and ``global_step`` dropped
#: too), and a published recipe's drops must not change when the policy's list does.
TRAINING_STATE = (
    r"/adam_[mv]$",
    r"/(Adam|Momentum|RMSProp|Adagrad|Adadelta|Ftrl|LAMB|lamb_[mv])(_\d+)?$",
    r"(^|/)beta[12]_power(_\d+)?$",
    r"/ExponentialMovingAverage$",
    r"^global_step$",
)
