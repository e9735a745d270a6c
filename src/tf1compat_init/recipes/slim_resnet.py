"""``slim-resnet50-to-keras``: tf-slim's ``resnet_v1_50`` into ``keras.applications.ResNet50``.

Every tensor of ``resnet_v1_50`` has exactly one place in Keras' ``ResNet50`` (same
shapes): ``block<b>/unit_<u>/bottleneck_v1/{shortcut,conv1,conv2,conv3}`` is
``conv<b+1>_block<u>_{0,1,2,3}_{conv,bn}``, the root ``conv1`` is ``conv1_conv`` /
``conv1_bn`` and the 1x1 ``logits`` convolution ``[1, 1, 2048, classes]`` is the
``predictions`` Dense kernel ``[2048, classes]`` (``reshape()``). Keras' convolutions
carry biases that slim's (followed by batch norm) do not have: they stay untouched at
their initial zeros, which is exact.

**The networks are not the same function.** Loading every tensor does not make
``keras.applications.ResNet50`` compute what slim's ``resnet_v1_50`` computed:

- slim strides in the *last* unit of blocks 1-3, in the 3x3 ``conv2`` (and the identity
  shortcut is subsampled); Keras (Caffe style) strides in the *first* unit of stages
  3-5, in the 1x1 ``_1_conv`` and the projection shortcut;
- slim pads stride-2 convolutions explicitly (``conv2d_same``) and max-pools ``pool1``
  with ``SAME`` padding (extra row/column at the end); Keras pads one pixel at the start;
- batch-norm epsilon is 1e-5 in slim and 1.001e-5 in Keras.

The weights transfer exactly; the outputs differ (measured in the tests). To reproduce
slim's outputs in Keras 3, build the network with slim's topology and Keras' names (the
same recipe then loads it): ``examples/slim_resnet_keras.py``.
"""

from __future__ import annotations

import re

from .. import transforms as tt
from ._common import TRAINING_STATE

_STAGE = {"block1": "conv2", "block2": "conv3", "block3": "conv4", "block4": "conv5"}
_CONV = {"shortcut": "0", "conv1": "1", "conv2": "2", "conv3": "3"}
_UNIT = r"resnet_v1_50/{block}/unit_(\d+)/bottleneck_v1/{conv}/"

RULES: dict = {
    "resnet_v1_50/conv1/weights": "conv1_conv/kernel",
    re.compile(r"resnet_v1_50/conv1/BatchNorm/(\w+)"): r"conv1_bn/\1",
    "resnet_v1_50/logits/weights": tt.to("predictions/kernel", tt.reshape()),
    "resnet_v1_50/logits/biases": "predictions/bias",
}
for _block, _stage in _STAGE.items():
    for _conv, _i in _CONV.items():
        _key = _UNIT.format(block=_block, conv=_conv)
        RULES[re.compile(_key + "weights")] = rf"{_stage}_block\1_{_i}_conv/kernel"
        RULES[re.compile(_key + r"BatchNorm/(\w+)")] = rf"{_stage}_block\1_{_i}_bn/\2"

SLIM_RESNET50_TO_KERAS = tt.Recipe(
    name="slim-resnet50-to-keras",
    rules=RULES,
    drop=TRAINING_STATE,
    requires=(
        r"^resnet_v1_50/conv1/weights$",
        r"^resnet_v1_50/block4/unit_3/bottleneck_v1/conv3/weights$",
    ),
    description="tf-slim nets.resnet_v1.resnet_v1_50 (TF1) -> keras.applications.ResNet50 "
    "(weights transfer exactly; slim's stride placement differs, see the module doc)",
)
