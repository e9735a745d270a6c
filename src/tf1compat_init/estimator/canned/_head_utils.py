"""The heads the canned classifiers and regressors make from their arguments (TF 2.15)."""

from __future__ import annotations

from typing import Any

from .._keras2 import keras2

__all__ = ["binary_or_multi_class_head", "regression_head"]


def binary_or_multi_class_head(
    n_classes: int,
    weight_column: Any = None,
    label_vocabulary: Any = None,
    loss_reduction: Any = None,
) -> Any:
    """``BinaryClassHead`` for 2 classes, else ``MultiClassHead`` (which checks ``n_classes``)."""
    from .. import head

    if loss_reduction is None:
        loss_reduction = keras2().losses.Reduction.SUM_OVER_BATCH_SIZE
    if n_classes == 2:
        return head.BinaryClassHead(
            weight_column=weight_column,
            label_vocabulary=label_vocabulary,
            loss_reduction=loss_reduction,
        )
    return head.MultiClassHead(
        n_classes,
        weight_column=weight_column,
        label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction,
    )


def regression_head(
    label_dimension: int = 1, weight_column: Any = None, loss_reduction: Any = None
) -> Any:
    """``RegressionHead``, as the canned regressors make it."""
    from .. import head

    if loss_reduction is None:
        loss_reduction = keras2().losses.Reduction.SUM_OVER_BATCH_SIZE
    return head.RegressionHead(
        label_dimension=label_dimension,
        weight_column=weight_column,
        loss_reduction=loss_reduction,
    )
