"""The library's recipes: assignment maps for the TF1 models people actually have.

Each recipe is data on the public transform API (:mod:`tf1compat_init.transforms`):
regex rules with back-reference templates and transforms, ``drop`` patterns for training
state (dropped with a report line, never silently) and ``requires`` patterns that tell the
right checkpoint from a wrong one. Importing this package registers them:

- ``bert-to-keras-hub``: Google BERT (bert-tensorflow's ``modeling.BertModel``, any size)
  into ``keras_hub.models.BertBackbone``;
- ``slim-resnet50-to-keras``: tf-slim's ``nets.resnet_v1.resnet_v1_50`` into
  ``keras.applications.ResNet50`` (every tensor; slim's ``pool1`` pads differently, see
  :mod:`tf1compat_init.recipes.slim_resnet`).

``tt.get_recipe(name)`` and the front ends import it on first use. Pure: no TensorFlow.
"""

from __future__ import annotations

from .. import transforms as tt
from ._common import TRAINING_STATE
from .bert import BERT_TO_KERAS_HUB
from .slim_resnet import SLIM_RESNET50_TO_KERAS

__all__ = ["BERT_TO_KERAS_HUB", "SLIM_RESNET50_TO_KERAS", "TRAINING_STATE"]

for _recipe in (BERT_TO_KERAS_HUB, SLIM_RESNET50_TO_KERAS):
    tt.register(_recipe, replace=True)
