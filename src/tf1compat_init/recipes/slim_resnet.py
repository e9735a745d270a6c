# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""``slim-resnet50-to-keras``: tf-slim's ``resnet_v1_50`` into ``keras.applications.ResNet50``.

Every tensor of ``resnet_v1_50`` has exactly one place in Keras' ``ResNet50`` (same
shapes): ``block<b>/unit_<u>/bottleneck_v1/{shortcut,conv1,conv2,conv3}`` is
``conv<b+1>_block<u>_{0,1,2,3}_{conv,bn}``, the root ``conv1`` is ``conv1_conv`` /
``conv1_bn`` and the 1x1 ``logits`` convolution ``[1, 1, 2048, classes]`` is the
``predictions`` Dense kernel ``[2048, classes]`` (``reshape()``). Keras' convolutions
carry biases that slim's (followed by batch norm) do not have: they stay untouched at
their initial zeros, which is exact (the recipe's ``optional``). With ``include_top=False``
the logits are reported unused.

**Outputs.** With every tensor loaded, ``keras.applications.ResNet50`` differs from slim's
``resnet_v1_50`` in ONE place, ``pool1``: slim max-pools with ``SAME`` padding (for an even
feature map, the extra row and column at the end), Keras pads one pixel on every side, so
every pooling window is shifted by a pixel and every output after it differs (tests:
logits off by up to 0.48 where the largest is 4.8). The other differences cancel or vanish:

- stride placement: slim strides in the last unit of a block, in the 3x3 conv with
  ``conv2d_same``'s explicit (1, 1) padding; Keras in the next unit's 1x1 convs. A 3x3
  stride-2 conv padded (1, 1) equals a SAME stride-1 conv read at even positions, and 1x1
  convs, batch norm, ReLU and the identity shortcut commute with that subsampling: the
  same numbers (tests: 1e-5 against the TF1 graph);
- batch-norm epsilon 1e-5 (slim) vs 1.001e-5 (Keras): below float32 resolution here.

So: ``keras.applications.ResNet50`` with ``pool1`` swapped for a ``SAME`` max-pool (same
names, the same recipe) reproduces slim's outputs: ``examples/slim_resnet_keras.py``.
"""

from __future__ import annotations

import re

from ..transforms.pipeline import to
from ..transforms.steps import reshape
from ._common import TRAINING_STATE
from .recipe import Recipe

_STAGE = {"block1": "conv2", "block2": "conv3", "block3": "conv4", "block4": "conv5"}
_CONV = {"shortcut": "0", "conv1": "1", "conv2": "2", "conv3": "3"}
_UNIT = r"resnet_v1_50/{block}/unit_(\d+)/bottleneck_v1/{conv}/"

RULES: dict = {
    "resnet_v1_50/conv1/weights": "conv1_conv/kernel",
    re.compile(r"resnet_v1_50/conv1/BatchNorm/(\w+)"): r"conv1_bn/\1",
    # regexes, not plain rules: a recipe's regex may resolve to nothing, so the same recipe
    # loads a model built without its top (include_top=False) or a checkpoint without logits
    re.compile(r"resnet_v1_50/logits/weights"): to("predictions/kernel", reshape()),
    re.compile(r"resnet_v1_50/logits/biases"): "predictions/bias",
}
for _block, _stage in _STAGE.items():
    for _conv, _i in _CONV.items():
        _key = _UNIT.format(block=_block, conv=_conv)
        RULES[re.compile(_key + "weights")] = rf"{_stage}_block\1_{_i}_conv/kernel"
        RULES[re.compile(_key + r"BatchNorm/(\w+)")] = rf"{_stage}_block\1_{_i}_bn/\2"

SLIM_RESNET50_TO_KERAS = Recipe(
    name="slim-resnet50-to-keras",
    rules=RULES,
    drop=TRAINING_STATE,
    optional=(r"_conv/bias$",),  # Keras' conv biases: slim has none; their zeros are exact
    requires=(
        r"^resnet_v1_50/conv1/weights$",
        r"^resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/weights$",
    ),
    description="tf-slim nets.resnet_v1.resnet_v1_50 (TF1) -> keras.applications.ResNet50 "
    "(every tensor; slim's pool1 pads differently, see the module doc)",
)
