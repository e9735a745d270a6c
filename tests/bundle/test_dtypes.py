"""tf1compat_init.bundle.dtypes: TensorFlow's dtypes as numpy reads them."""

from __future__ import annotations

import numpy as np
import pytest

from tf1compat_init.bundle.dtypes import numpy_dtype
from tf1compat_init.errors import UnsupportedCheckpointError


@pytest.mark.pure
def test_numpy_dtype_mapping():
    assert numpy_dtype("float32") == np.dtype("float32")
    assert numpy_dtype("string") == np.dtype(object)
    assert numpy_dtype("qint8") == np.dtype("int8")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert numpy_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    for name in ["variant", "resource", "float32_ref", "unknown_dtype_99", "int2"]:
        with pytest.raises(UnsupportedCheckpointError):
            numpy_dtype(name)
