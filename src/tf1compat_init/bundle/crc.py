"""CRC32C (Castagnoli), as TensorFlow and LevelDB use it: masking, and the fastest
correct implementation available (the C library of the ``google-crc32c`` wheel through
ctypes, else ``google_crc32c.extend``, else pure Python)."""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

_LOG = logging.getLogger(__name__)


__all__ = ["crc32c", "crc32c_at", "mask_crc", "unmask_crc"]

_CRC_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF


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


def _crc_python(crc: int, data: np.ndarray) -> int:
    # Bytewise table lookup: slow (tens of MB/s) but obviously correct; used
    # only when no compiled implementation is importable.
    global _CRC_TABLE
    if _CRC_TABLE is None:
        _CRC_TABLE = _make_crc_table()
    table = _CRC_TABLE
    crc ^= _U32
    for b in data.tobytes():
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ _U32


_CRC_CHECK_INPUT = b"123456789"
_CRC_CHECK_VALUE = 0xE3069283  # the standard CRC-32C check value


def _load_crc_backend() -> Callable[[int, np.ndarray], int]:
    """Picks the fastest correct CRC32C implementation available.

    ``google_crc32c.extend`` only accepts ``bytes`` and only releases the GIL
    for ``bytes`` objects, which would force a copy of every tensor and
    serialize threads.  Its wheel ships the C library ``libcrc32c`` next to the
    extension, so we call ``crc32c_extend`` from it through ctypes instead:
    ctypes releases the GIL and takes a raw pointer, so numpy buffers are
    checksummed in place and in parallel.  Each candidate is checked against
    the standard check value before it is trusted.

    The wheel has no public API that names that library, so the first candidate
    is its C extension (``google_crc32c.implementation == "c"``): the extension
    links ``libcrc32c``, and looking a symbol up through the extension's handle
    searches its dependencies too (ELF and Mach-O), whatever the bundled copy is
    called. Windows' lookup does not, so the old globs for the bundled file stay
    as the fallback. Same C function either way, so the same speed.
    """
    try:
        import google_crc32c
    except ImportError:
        google_crc32c = None

    if google_crc32c is not None:
        pkg_dir = os.path.dirname(os.path.abspath(google_crc32c.__file__))
        patterns = [
            os.path.join(os.path.dirname(pkg_dir), "google_crc32c.libs", "libcrc32c*"),
            os.path.join(pkg_dir, ".dylibs", "libcrc32c*"),
            os.path.join(pkg_dir, "*crc32c*.dll"),
        ]
        candidates = []
        if getattr(google_crc32c, "implementation", None) == "c":
            ext = sys.modules.get("google_crc32c._crc32c")
            if ext is not None and getattr(ext, "__file__", None):
                candidates.append(ext.__file__)
        candidates += sorted(p for pattern in patterns for p in glob.glob(pattern))
        for path in candidates:
            try:
                fn = ctypes.CDLL(path).crc32c_extend
            except (OSError, AttributeError):
                continue
            fn.restype = ctypes.c_uint32
            fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]

            def native(crc: int, data: np.ndarray, _fn: Any = fn) -> int:
                return int(_fn(crc & _U32, data.ctypes.data, data.size))

            native.at = fn  # type: ignore[attr-defined]  # see crc32c_at()

            check = np.frombuffer(_CRC_CHECK_INPUT, dtype=np.uint8)
            if native(0, check) == _CRC_CHECK_VALUE:
                _LOG.debug("crc32c: using %s through ctypes", path)
                return native

        gextend = google_crc32c.extend

        def via_google(crc: int, data: np.ndarray) -> int:
            return int(gextend(crc & _U32, data.tobytes()))

        if via_google(0, np.frombuffer(_CRC_CHECK_INPUT, dtype=np.uint8)) == _CRC_CHECK_VALUE:
            _LOG.debug("crc32c: using google_crc32c.extend")
            return via_google

    _LOG.warning("crc32c: no compiled implementation found; checksums will be slow")
    return _crc_python


_crc_backend: Callable[[int, np.ndarray], int] | None = None


def _backend() -> Callable[[int, np.ndarray], int]:
    """The CRC32C implementation, chosen on first use."""
    global _crc_backend
    if _crc_backend is None:
        _crc_backend = _load_crc_backend()
    return _crc_backend


def _crc_extend(crc: int, data: np.ndarray) -> int:
    return _backend()(crc, data)


def crc32c_at() -> Callable[[int, int, int], int] | None:
    """The native ``crc32c_extend(crc, address, size)``, or None without one.

    For callers that checksum thousands of small ranges of one buffer: they
    compute each range's address from the buffer's (which they keep alive), so a
    call costs a fraction of :func:`crc32c`'s, and the GIL is released during
    each, so threads checksum in parallel.
    """
    return getattr(_backend(), "at", None)


def _as_u8(data: Any) -> np.ndarray:
    if isinstance(data, np.ndarray):
        if data.dtype.hasobject:
            raise TypeError("cannot checksum an object array")
        if not data.flags.c_contiguous:
            data = np.ascontiguousarray(data)
        return data.reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def crc32c(data: Any, value: int = 0) -> int:
    """Extends a CRC32C with more bytes.

    Args:
        data: a bytes-like object or a numpy array (its raw bytes in memory
            order are checksummed).
        value: the CRC32C of the preceding bytes (0 to start).

    Returns:
        The unmasked CRC32C of the preceding bytes followed by ``data``.
    """
    return _crc_extend(value, _as_u8(data))
