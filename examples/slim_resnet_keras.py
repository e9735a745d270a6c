"""tf-slim's resnet_v1_50 as a Keras 3 model that computes what slim computed.

``keras.applications.ResNet50`` takes every tensor of a slim ``resnet_v1_50`` checkpoint
(recipe ``slim-resnet50-to-keras``) but is a different function: it strides in the first
unit of a stage (in a 1x1 convolution), slim in the last unit (in the 3x3 one); it pads
``pool1`` at the start, slim at the end; its batch-norm epsilon is 1.001e-5, slim's 1e-5.
This builder has slim's topology and keras.applications' layer names, so the same recipe
loads it and its outputs match the TF1 graph's (tests/test_recipes.py)::

    model = resnet_v1_50(input_shape=(224, 224, 3), classes=1000)
    tf1compat_init.keras.load_checkpoint(model, "resnet_v1_50.ckpt",
                                         tt.get_recipe("slim-resnet50-to-keras"))

Run as a script: builds the model and prints its weight count.
"""

from __future__ import annotations

import keras
from keras import layers

_EPSILON = 1e-5  # slim's resnet_arg_scope(batch_norm_epsilon=1e-5)


def _conv_bn(x, filters: int, kernel: int, stride: int, name: str, relu: bool = True):
    """slim's conv2d + batch_norm (+ relu); stride-2 convolutions pad like conv2d_same."""
    if stride > 1 and kernel > 1:
        total = kernel - 1
        x = layers.ZeroPadding2D(((total // 2, total - total // 2),) * 2, name=name + "_pad")(x)
        padding = "valid"
    else:
        padding = "same"
    x = layers.Conv2D(
        filters, kernel, strides=stride, padding=padding, use_bias=False, name=name + "_conv"
    )(x)
    x = layers.BatchNormalization(epsilon=_EPSILON, name=name + "_bn")(x)
    return layers.Activation("relu", name=name + "_relu")(x) if relu else x


def _bottleneck(x, filters: int, stride: int, name: str):
    """slim's bottleneck_v1: the stride sits in the 3x3 conv; identity shortcuts subsample."""
    depth = 4 * filters
    if x.shape[-1] == depth:
        shortcut = (
            x
            if stride == 1
            else layers.MaxPooling2D(1, strides=stride, padding="same", name=name + "_0_subsample")(
                x
            )
        )
    else:
        shortcut = _conv_bn(x, depth, 1, stride, name + "_0", relu=False)
    y = _conv_bn(x, filters, 1, 1, name + "_1")
    y = _conv_bn(y, filters, 3, stride, name + "_2")
    y = _conv_bn(y, depth, 1, 1, name + "_3", relu=False)
    y = layers.Add(name=name + "_add")([shortcut, y])
    return layers.Activation("relu", name=name + "_out")(y)


def resnet_v1_50(
    input_shape: tuple = (224, 224, 3), classes: int | None = 1000, name: str = "resnet_v1_50"
) -> keras.Model:
    """slim's ``resnet_v1_50`` (``global_pool=True``, ``output_stride=None``) in Keras 3.

    Args:
        input_shape: ``(height, width, 3)``.
        classes: the logits layer's width (slim's ``num_classes``); ``None`` for the pooled
            2048 features.
        name: the model's name.

    Returns:
        A Keras model with keras.applications.ResNet50's weight names (no conv biases) whose
        output is slim's logits (no softmax), or the pooled features.
    """
    inputs = keras.Input(input_shape)
    x = _conv_bn(inputs, 64, 7, 2, "conv1")
    x = layers.MaxPooling2D(3, strides=2, padding="same", name="pool1_pool")(x)
    for stage, filters, units, stride in (
        ("conv2", 64, 3, 2),
        ("conv3", 128, 4, 2),
        ("conv4", 256, 6, 2),
        ("conv5", 512, 3, 1),
    ):
        for unit in range(1, units + 1):
            x = _bottleneck(x, filters, stride if unit == units else 1, f"{stage}_block{unit}")
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    if classes is not None:
        x = layers.Dense(classes, name="predictions")(x)
    return keras.Model(inputs, x, name=name)


if __name__ == "__main__":
    model = resnet_v1_50()
    print(f"{model.name}: {len(model.weights)} weights, {model.count_params()} parameters")
