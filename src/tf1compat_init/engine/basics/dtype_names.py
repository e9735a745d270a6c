# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""TF dtype names for what a caller holds: a name, a numpy dtype or type, a ``tf.DType``.

One table for the planner (the targets' dtypes) and the transforms (``cast``, ``fn``'s
output), so both read ``"double"``, ``np.str_`` or a ``float32_ref`` variable's dtype
alike. Pure: numpy is imported only for a numpy type, TensorFlow only by :func:`tf_dtype`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DTYPE_ALIASES", "dtype_name", "tf_dtype"]

#: Other spellings of a TF dtype name: numpy's, C's, and how numpy holds a string tensor.
DTYPE_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "object": "string",
    "bytes": "string",
    "str": "string",
    "bytes_": "string",
    "str_": "string",
    "bool_": "bool",
}


def dtype_name(dtype: Any) -> str | None:
    """A TF dtype name for a TF dtype, numpy dtype, type or name (``None`` passes through).

    A reference dtype (``float32_ref``, a TF1 variable's) reads as its base dtype.

    Example:
        >>> dtype_name("float32_ref"), dtype_name("double"), dtype_name("str_")
        ('float32', 'float64', 'string')
    """
    if dtype is None:
        return None
    if isinstance(dtype, str):
        name = dtype
    elif hasattr(dtype, "base_dtype"):  # tf.DType, without importing TensorFlow
        name = dtype.base_dtype.name
    elif isinstance(getattr(dtype, "name", None), str) and not isinstance(dtype, type):
        name = dtype.name  # np.dtype
    else:
        import numpy as np

        name = np.dtype(dtype).name
    name = name.removesuffix("_ref")
    return DTYPE_ALIASES.get(name, name)


def tf_dtype(name: str) -> Any:
    """The ``tf.DType`` of a checkpoint dtype name (imports TensorFlow; graph mode only)."""
    import tensorflow as tf

    from ...bundle.dtypes import numpy_dtype

    return tf.string if name == "string" else tf.dtypes.as_dtype(numpy_dtype(name))
