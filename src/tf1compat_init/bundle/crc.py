# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""CRC32C (Castagnoli), as TensorFlow and LevelDB use it: masking, and the fastest
correct implementation installed.

Backends, the first one importable and correct wins: the ``crc32c`` package (ICRAR,
LGPL-2.1-or-later), then ``google-crc32c`` (Apache-2.0) through its public ``extend``,
then pure Python (about 10 MB/s: a warning is logged).

Why ``crc32c`` first: it reads any buffer in place and frees the GIL from 32 KiB up, where
``google_crc32c.extend`` takes only bytes and numpy arrays and never frees the GIL for arrays;
it is also the faster (``benchmarks/README.md``, ``crc_backends.py``).

Also :func:`crc32c_combine`, which joins the CRC32Cs of consecutive pieces.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

_LOG = logging.getLogger(__name__)


__all__ = [
    "backend_name",
    "crc32c",
    "crc32c_combine",
    "crc32c_extender",
    "mask_crc",
    "unmask_crc",
]

_CRC_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF

#: ``extend(data, crc=0) -> crc``: ``data`` is a C-contiguous buffer (bytes, a memoryview,
#: a numpy array), read as raw bytes.
Extender = Callable[..., int]


def mask_crc(crc: int) -> int:
    """Masks a CRC the way TensorFlow stores it (``crc32c::Mask``).

    Storing the CRC of data that itself contains CRCs is weak, so LevelDB and
    TensorFlow rotate it and add a constant.

    Args:
        crc: an unmasked 32-bit CRC32C.

    Returns:
        The masked value.
    """
    crc &= _U32
    return (((crc >> 15) | (crc << 17)) + _CRC_MASK_DELTA) & _U32


def unmask_crc(masked: int) -> int:
    """Inverts :func:`mask_crc`.

    Args:
        masked: a CRC as stored in an index or data file.

    Returns:
        The plain CRC32C.
    """
    rot = (masked - _CRC_MASK_DELTA) & _U32
    return ((rot >> 17) | (rot << 15)) & _U32


def _make_crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE: list[int] | None = None


def _crc_python(data: Any, crc: int = 0) -> int:
    # Bytewise table lookup: slow (about 10 MB/s) but obviously correct; used
    # only when no compiled implementation is importable.
    global _CRC_TABLE
    if _CRC_TABLE is None:
        _CRC_TABLE = _make_crc_table()
    table = _CRC_TABLE
    crc = (crc & _U32) ^ _U32
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ _U32


def _icrar() -> Extender | None:
    """``crc32c.crc32c`` itself: no wrapper, so a call costs what the C function does."""
    import crc32c as icrar

    if not icrar.hardware_based:
        _LOG.debug("crc32c: the crc32c package has no CRC instruction here; software tables")
    return icrar.crc32c


def _google() -> Extender | None:
    """``google_crc32c.extend``, which takes ``bytes`` and (no release hook) numpy arrays.

    Memoryviews, mmaps and bytearrays are wrapped in a numpy array, not copied. Its
    pure-Python fallback is slower than ours and is refused.
    """
    import google_crc32c

    if getattr(google_crc32c, "implementation", None) != "c":
        return None
    gextend = google_crc32c.extend

    def extend(data: Any, crc: int = 0) -> int:
        if not isinstance(data, bytes | np.ndarray):
            data = np.frombuffer(data, dtype=np.uint8)
        return gextend(crc & _U32, data)

    try:
        extend(np.zeros(1, np.uint8))
    except TypeError:  # a numpy whose arrays it refuses: copy to bytes instead

        def extend(data: Any, crc: int = 0) -> int:
            return gextend(crc & _U32, bytes(data))

    return extend


def _python() -> Extender | None:
    return _crc_python


#: Candidates, fastest first; each loader returns None (or raises ImportError) if unusable.
_BACKENDS: dict[str, Callable[[], Extender | None]] = {
    "crc32c": _icrar,
    "google-crc32c": _google,
    "python": _python,
}

_CRC_CHECK_INPUT = b"123456789"
_CRC_CHECK_VALUE = 0xE3069283  # the standard CRC-32C check value


def _load(name: str) -> Extender | None:
    """Backend ``name`` if it imports and gives the standard check value, else None."""
    try:
        extend = _BACKENDS[name]()
    except ImportError:
        return None
    if extend is None:
        return None
    check = np.frombuffer(_CRC_CHECK_INPUT, dtype=np.uint8)
    if (
        extend(check) != _CRC_CHECK_VALUE
        or extend(check[4:], extend(check[:4])) != _CRC_CHECK_VALUE
    ):
        _LOG.warning("crc32c: backend %s gives wrong checksums; not used", name)
        return None
    return extend


_chosen: tuple[str, Extender] | None = None


def _select(name: str | None = None) -> tuple[str, Extender]:
    """Chooses the backend: ``name``, or the first usable one (tests force each).

    Raises:
        ValueError: ``name`` is not a known backend.
        ImportError: backend ``name`` is not installed or not usable here.
    """
    global _chosen
    if name is not None:
        if name not in _BACKENDS:
            raise ValueError(f"unknown crc32c backend {name!r}; known: {', '.join(_BACKENDS)}")
        extend = _load(name)
        if extend is None:
            raise ImportError(f"crc32c backend {name!r} is not usable here")
        _chosen = (name, extend)
        return _chosen
    for candidate in _BACKENDS:
        extend = _load(candidate)
        if extend is not None:
            if candidate == "python":
                _LOG.warning(
                    "crc32c: no compiled implementation found; checksums will be slow"
                    " (pip install crc32c, or google-crc32c)"
                )
            _LOG.debug("crc32c: using %s", candidate)
            _chosen = (candidate, extend)
            return _chosen
    raise AssertionError("unreachable: the pure-Python backend is always usable")


def _current() -> tuple[str, Extender]:
    return _chosen if _chosen is not None else _select()


def backend_name() -> str:
    """Which implementation checksums: ``"crc32c"``, ``"google-crc32c"`` or ``"python"``."""
    return _current()[0]


def crc32c_extender() -> Extender:
    """The backend's own ``extend(data, crc=0)``, for hot loops.

    ``data`` must be a C-contiguous buffer (a flat uint8 numpy array, a memoryview
    slice, bytes); nothing is checked or converted, so a call costs only what the
    backend does. With the ``crc32c`` package it reads the buffer in place and releases
    the GIL from 32 KiB on, so threads checksum in parallel.
    """
    return _current()[1]


def _as_u8(data: np.ndarray) -> np.ndarray:
    if data.dtype.hasobject:
        raise TypeError("cannot checksum an object array")
    if not data.flags.c_contiguous:
        data = np.ascontiguousarray(data)
    return data.reshape(-1).view(np.uint8)


def crc32c(data: Any, value: int = 0) -> int:
    """Extends a CRC32C with more bytes.

    Args:
        data: a bytes-like object or a numpy array (its raw bytes in memory
            order are checksummed).
        value: the CRC32C of the preceding bytes (0 to start).

    Returns:
        The unmasked CRC32C of the preceding bytes followed by ``data``.
    """
    if isinstance(data, np.ndarray):
        data = _as_u8(data)
    elif not isinstance(data, bytes):
        data = np.frombuffer(data, dtype=np.uint8)  # any contiguous buffer, any format
    return _current()[1](data, value & _U32)


# ---------------------------------------------------------------------------
# Joining CRC32Cs of consecutive pieces.
# ---------------------------------------------------------------------------

_POLY_REFLECTED = 0x82F63B78


def _gf2_times(matrix: list[int], vector: int) -> int:
    out = 0
    i = 0
    while vector:
        if vector & 1:
            out ^= matrix[i]
        vector >>= 1
        i += 1
    return out


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, row) for row in matrix]


def _zero_byte_operators() -> list[list[int]]:
    # ops[k] advances a CRC register over 2**k zero bytes; built once.
    one_bit = [_POLY_REFLECTED] + [1 << (n - 1) for n in range(1, 32)]
    op = _gf2_square(_gf2_square(_gf2_square(one_bit)))  # 8 zero bits
    ops = [op]
    for _ in range(63):
        op = _gf2_square(op)
        ops.append(op)
    return ops


_ZERO_OPS: list[list[int]] | None = None


def crc32c_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC32C of ``A + B`` from ``crc32c(A)``, ``crc32c(B)`` and ``len(B)``.

    The method of zlib's ``crc32_combine``, for the Castagnoli polynomial: the
    CRC register of ``A`` is advanced over ``len(B)`` zero bytes by repeated
    squaring of the one-zero-bit operator in GF(2), then XORed with ``crc32c(B)``.

    Args:
        crc1: the CRC32C of the first piece.
        crc2: the CRC32C of the second piece.
        len2: the second piece's length in bytes.

    Returns:
        The CRC32C of the concatenation.
    """
    global _ZERO_OPS
    if len2 <= 0:
        return crc1
    if _ZERO_OPS is None:
        _ZERO_OPS = _zero_byte_operators()
    k = 0
    while len2:
        if len2 & 1:
            crc1 = _gf2_times(_ZERO_OPS[k], crc1)
        len2 >>= 1
        k += 1
    return crc1 ^ crc2
