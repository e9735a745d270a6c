# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""Keras front end: TF1 (and TF2) checkpoints into Keras 3, tf_keras and Keras 2 models.

One code path for every Keras: the flavour is read off the model object, and this module
never imports a Keras itself (the callbacks subclass whichever ``tf.keras`` TensorFlow
wires up, which is tf_keras under ``TF_USE_LEGACY_KERAS=1``).

**Names.** Every weight gets one model-relative name: the layer names from the given
model down to the layer that owns the weight, joined by ``/``, then the weight's own
name (``dense/kernel``, ``encoder/dense_1/kernel``, ``lstm/lstm_cell/bias``). The given
model's own name is left out, so the names are the same under Keras 3, tf_keras and
Keras 2 (whose variable names carry no model prefix, or the innermost model's), and a
sub-model loaded alone has the names it has inside its parent minus its own name. Layer
names that Keras numbers (``dense_2``) still depend on what the process built before;
``assignment_map="auto"`` absorbs that. Two weights that would share a name are an error
that says which. :func:`weight_names` lists them.

**The checkpoint side.** For a TF1 name-based checkpoint, the keys (``model/dense/kernel``).
For a TF2 object-based checkpoint (``tf.train.Checkpoint``), the name each variable had
when it was saved, as its object graph records it (``dense/kernel`` from tf_keras,
``sequential/dense/kernel`` from Keras 3); where that name is empty or shared by several
variables, the readable object path (``model/d/_kernel``) stands in. The
``.ATTRIBUTES/VARIABLE_VALUE`` keys themselves depend on Python attribute names and on
the Keras version, so they are never what a map is written against.

**The map.** The engine's TF1 grammar, ``{checkpoint_name_or_scope: model_relative_name_or_
scope}``, plus ``"auto"`` for names that differ only by Keras auto-numbering (``dense_2``
vs ``dense``, paired in numbering order), by a model prefix on either side
(``sequential/``, ``model/``), or by a nested model's name that the checkpoint lacks
(tf_keras saves ``enc/fc/kernel`` as ``fc/kernel``). ``"auto"`` never guesses between
two equally good prefixes, and weights it cannot pair are reported as missing. The map
it derived is in ``report.applied_map``; pass it back to pin it.

**Distribution.** Call :func:`load_checkpoint` outside ``strategy.run``, with the model
created in or out of ``strategy.scope()``: the assignment reaches every replica. Under
``MultiWorkerMirroredStrategy`` **every worker must load** (the assignment is local to
each worker: if only the chief loads, the workers silently train different models).
:class:`CheckpointInit` does that, since every worker runs its callbacks.

**Callbacks** (:class:`CheckpointInit`, :class:`StopAtStep`, :class:`LoggingTensor`,
:class:`CheckpointSaver`) work in ``model.fit`` and in a custom loop driven through the
standard protocol (see :mod:`tf1compat_init.keras._callbacks`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.targets.keras_names import KerasModelError, keras_flavour, weight_names
from ._load import load_checkpoint, plan_checkpoint

if TYPE_CHECKING:  # defined lazily by __getattr__ below
    from ._callbacks import CheckpointInit, CheckpointSaver, LoggingTensor, StopAtStep

__all__ = [
    "CheckpointInit",
    "CheckpointSaver",
    "KerasModelError",
    "LoggingTensor",
    "StopAtStep",
    "keras_flavour",
    "load_checkpoint",
    "plan_checkpoint",
    "weight_names",
]

_CALLBACKS = ("CheckpointInit", "CheckpointSaver", "LoggingTensor", "StopAtStep")


def __getattr__(name: str) -> Any:
    # The callbacks subclass a Keras Callback, so defining them imports TensorFlow's Keras;
    # load_checkpoint alone does not need that.
    if name in _CALLBACKS:
        from . import _callbacks

        return getattr(_callbacks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
