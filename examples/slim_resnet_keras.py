"""tf-slim's resnet_v1_50 in Keras 3: keras.applications.ResNet50 with slim's pool1.

``keras.applications.ResNet50`` takes every tensor of a slim ``resnet_v1_50`` checkpoint
(recipe ``slim-resnet50-to-keras``). Its other differences from slim cancel out or vanish:

- stride placement: slim strides in the last unit of a block, in the 3x3 conv, padded
  the ``conv2d_same`` way; Keras strides in the next unit's 1x1 convs. A 3x3 stride-2 conv
  padded (1, 1) equals a 3x3 SAME stride-1 conv read at even positions, and 1x1 convs,
  batch norm, ReLU and the identity shortcut commute with that subsampling, so both
  compute the same numbers (verified to 1e-5 against the TF1 graph in tests/recipes/test_recipes.py);
- batch-norm epsilon 1.001e-5 vs slim's 1e-5: below float32 resolution at these variances;
  set to 1e-5 here anyway;
- Keras' conv biases (slim has none): zero-initialized and left untouched by the recipe.

One difference is real: ``pool1``. slim max-pools with ``SAME`` padding (for an even
feature map, one extra row and column at the END); Keras pads one pixel on every side,
which shifts every pooling window by one pixel and changes every output after it. The
function below swaps that one layer (``pool1_pad`` becomes an identity, ``pool1_pool`` a
SAME max-pool) and keeps every name, so the recipe loads it unchanged::

    model = slim_resnet_v1_50(input_shape=(224, 224, 3), classes=1000)
    tf1compat_init.keras.load_checkpoint(model, "resnet_v1_50.ckpt",
                                         tt.get_recipe("slim-resnet50-to-keras"))

Run as a script: builds the model and prints its pool1 layers.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import layers


def slim_resnet_v1_50(**kwargs: Any) -> keras.Model:
    """``keras.applications.ResNet50(weights=None, **kwargs)`` that computes slim's function.

    Args:
        **kwargs: passed to ``keras.applications.ResNet50`` (``input_shape``, ``classes``,
            ``include_top``, ``pooling``...). ``weights`` is ``None`` (the weights come from
            the checkpoint); ``classifier_activation`` defaults to ``None`` (slim's
            ``resnet_v1_50`` returns logits; its softmax is a separate end point).

    Returns:
        The model, with slim's pool1 padding and batch-norm epsilon, and
        keras.applications' layer and weight names.
    """
    kwargs.setdefault("classifier_activation", None)
    base = keras.applications.ResNet50(weights=None, **kwargs)

    def clone(layer: keras.layers.Layer) -> keras.layers.Layer:
        if layer.name == "pool1_pad":
            return layers.Identity(name="pool1_pad")
        if layer.name == "pool1_pool":
            return layers.MaxPooling2D(3, strides=2, padding="same", name="pool1_pool")
        config = layer.get_config()
        if isinstance(layer, layers.BatchNormalization):
            config["epsilon"] = 1e-5
        return layer.__class__.from_config(config)

    return keras.models.clone_model(base, clone_function=clone)


if __name__ == "__main__":
    model = slim_resnet_v1_50(input_shape=(224, 224, 3))
    for name in ("pool1_pad", "pool1_pool"):
        print(name, model.get_layer(name).__class__.__name__)
