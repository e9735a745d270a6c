# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""TensorFlow's ``DataType`` enum and the numpy dtype the reader decodes each into."""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedCheckpointError

__all__ = ["numpy_dtype"]

# TensorFlow's DataType enum (core/framework/types.proto), by number.
_DTYPE_NAMES: dict[int, str] = {
    1: "float32",
    2: "float64",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "qint8",
    12: "quint8",
    13: "qint32",
    14: "bfloat16",
    15: "qint16",
    16: "quint16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    20: "resource",
    21: "variant",
    22: "uint32",
    23: "uint64",
    24: "float8_e5m2",
    25: "float8_e4m3fn",
    26: "float8_e4m3fnuz",
    27: "float8_e4m3b11fnuz",
    28: "float8_e5m2fnuz",
    29: "int4",
    30: "uint4",
    31: "int2",
    32: "uint2",
    33: "float4_e2m1fn",
}

# Fixed-width types whose bytes are stored in memory order, little-endian.
_PLAIN_DTYPES = {
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "int8": "i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint8": "u1",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "bool": "?",
    "complex64": "<c8",
    "complex128": "<c16",
}
# Quantized types come back as their storage type, as TensorFlow's own
# checkpoint reader returns them.
_QUANTIZED_DTYPES = {
    "qint8": "i1",
    "quint8": "u1",
    "qint16": "<i2",
    "quint16": "<u2",
    "qint32": "<i4",
}
# TensorFlow uses ml_dtypes' C++ types, so the bytes match element for
# element (int4/uint4 take one byte per element, not half a byte).
_ML_DTYPES = (
    "bfloat16",
    "int4",
    "uint4",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e4m3b11fnuz",
    "float8_e5m2fnuz",
)


def _dtype_name(enum_value: int) -> str:
    name = _DTYPE_NAMES.get(enum_value)
    if name is not None:
        return name
    base = _DTYPE_NAMES.get(enum_value - 100)
    if base is not None:  # reference types never belong in a checkpoint
        return base + "_ref"
    return f"unknown_dtype_{enum_value}"


def numpy_dtype(tf_dtype_name: str) -> np.dtype:
    """The numpy dtype this reader returns for a TensorFlow dtype name.

    Args:
        tf_dtype_name: a TensorFlow dtype name such as ``"float32"``.

    Returns:
        The numpy dtype (``object`` for ``"string"``; ``ml_dtypes`` types for
        bfloat16, int4/uint4 and the float8 family; the storage integer type
        for quantized types, as ``tf.train.load_checkpoint`` returns them).

    Raises:
        UnsupportedCheckpointError: for types this reader does not decode
            (``variant``, ``resource``, int2/uint2/float4, unknown names).
    """
    if tf_dtype_name in _PLAIN_DTYPES:
        return np.dtype(_PLAIN_DTYPES[tf_dtype_name])
    if tf_dtype_name == "string":
        return np.dtype(object)
    if tf_dtype_name in _QUANTIZED_DTYPES:
        return np.dtype(_QUANTIZED_DTYPES[tf_dtype_name])
    if tf_dtype_name in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError as e:
            raise UnsupportedCheckpointError(
                f"dtype {tf_dtype_name} needs the ml_dtypes package, which is not installed"
            ) from e
        return np.dtype(getattr(ml_dtypes, tf_dtype_name))
    raise UnsupportedCheckpointError(f"the native reader cannot decode dtype {tf_dtype_name!r}")
