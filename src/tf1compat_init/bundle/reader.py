"""A native, TensorFlow-free reader of TensorFlow's tensor bundle checkpoints.

A checkpoint ``prefix`` is one ``prefix.index`` file plus data shards
``prefix.data-NNNNN-of-MMMMM``.  The index is a LevelDB-style table (see
TensorFlow's ``core/lib/io/{table,block,format}.cc``) whose first entry, under
the empty key, is a ``BundleHeaderProto`` and whose other values are
``BundleEntryProto``s saying where each tensor's bytes are and what their
CRC32C is (``core/util/tensor_bundle/tensor_bundle.cc``).

The reader is strict by design: every length and offset read from a file is
checked against the size of the file it points into before anything is
allocated, every block and tensor checksum is verified (unless the caller opts
out for tensors), and anything it cannot decode exactly raises
:class:`~tf1compat_init.errors.UnsupportedCheckpointError` so that callers can
fall back to TensorFlow instead of getting a wrong value.
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
import re
import struct
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, NamedTuple, NoReturn

import numpy as np

from .._gc import gc_paused
from ..errors import CheckpointCorruptError, CheckpointNotFoundError, UnsupportedCheckpointError
from . import proto as _proto
from . import storage as _storage
from .proto import WIRE_FIXED32, WIRE_LEN, WIRE_VARINT, ProtoDecodeError, to_str
from .proto_fast import entry_fields, trackable_object_fields

__all__ = [
    "OBJECT_GRAPH_KEY",
    "BundleEntry",
    "BundleReader",
    "ObjectGraph",
    "ObjectGraphNode",
    "ObjectReference",
    "SerializedTensor",
    "SlotVariableReference",
    "crc32c",
    "encode_tensor_name_slice",
    "mask_crc",
    "numpy_dtype",
    "unmask_crc",
]

_LOG = logging.getLogger(__name__)

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"

# ---------------------------------------------------------------------------
# CRC32C (Castagnoli), as used by TensorFlow and LevelDB.
# ---------------------------------------------------------------------------

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
        for path in sorted(p for pattern in patterns for p in glob.glob(pattern)):
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


# ---------------------------------------------------------------------------
# Data types.
# ---------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------
# OrderedCode keys of tensor slices (core/lib/strings/ordered_code.cc and
# core/util/saved_tensor_slice_util.cc).
# ---------------------------------------------------------------------------


def _oc_num_increasing(value: int) -> bytes:
    # A length byte, then the value big-endian without leading zero bytes.
    body = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(body)]) + body


_OC_ESCAPES = {b"\x00": b"\x00\xff", b"\xff": b"\xff\x00"}
_OC_SPECIAL = re.compile(rb"[\x00\xff]")


def _oc_string(value: bytes) -> bytes:
    # 0x00 and 0xff are escaped in one pass (chained replaces would re-escape
    # the escapes); 0x00 0x01 terminates.
    return _OC_SPECIAL.sub(lambda m: _OC_ESCAPES[m.group()], value) + b"\x00\x01"


# Header bits of the first two bytes, by encoded length (1..10).
_OC_HEADER = {
    1: (0x80, 0),
    2: (0xC0, 0),
    3: (0xE0, 0),
    4: (0xF0, 0),
    5: (0xF8, 0),
    6: (0xFC, 0),
    7: (0xFE, 0),
    8: (0xFF, 0),
    9: (0xFF, 0x80),
    10: (0xFF, 0xC0),
}


def _oc_signed_num_increasing(value: int) -> bytes:
    if not -(1 << 63) <= value < 1 << 63:
        raise ValueError(f"{value} does not fit in int64")
    magnitude = ~value if value < 0 else value
    if magnitude < 64:
        return bytes([(0x80 ^ value) & 0xFF])
    length = magnitude.bit_length() // 7 + 1  # bytes needed for sign, size and payload bits
    raw = bytearray((value & ((1 << 80) - 1)).to_bytes(10, "big")[10 - length :])
    first, second = _OC_HEADER[length]
    raw[0] ^= first
    raw[1] ^= second
    return bytes(raw)


def encode_tensor_name_slice(name: bytes, extents: Iterable[tuple[int, int]]) -> bytes:
    """The index key under which TensorFlow stores one slice of a tensor.

    Args:
        name: the full tensor's key, as bytes.
        extents: ``(start, length)`` per dimension, ``length == -1`` for a
            full extent (its start as stored in the ``TensorSliceProto``).

    Returns:
        The OrderedCode key (``checkpoint::EncodeTensorNameSlice``).
    """
    extents = list(extents)
    parts = [_oc_num_increasing(0), _oc_string(name), _oc_num_increasing(len(extents))]
    for start, length in extents:
        parts.append(_oc_signed_num_increasing(start))
        parts.append(_oc_signed_num_increasing(length))
    return b"".join(parts)


# ---------------------------------------------------------------------------
# Public records.
# ---------------------------------------------------------------------------


class BundleEntry(NamedTuple):
    """One tensor's metadata from the ``.index`` file (a named tuple: a checkpoint
    has one per tensor, and a tuple is the cheapest immutable record to build).

    Attributes:
        key: the checkpoint key.
        dtype: the TensorFlow dtype name (``"float32"``, ``"string"``, ...).
        shape: the full tensor's shape.
        shard_id: which data file holds the bytes (meaningless when sliced).
        offset: where the bytes start in that file.
        size: how many bytes.
        crc32c: the masked CRC32C as stored.
        slices: ``()`` for a whole tensor; for a partitioned tensor, one tuple
            per stored slice of ``(start, length)`` per dimension, with
            ``length == -1`` meaning the full dimension.
    """

    key: str
    dtype: str
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int
    slices: tuple


class ObjectReference(NamedTuple):
    """A child edge of the object graph."""

    node_id: int
    local_name: str


class SerializedTensor(NamedTuple):
    """A saved attribute (usually ``VARIABLE_VALUE``) of an object."""

    name: str
    full_name: str
    checkpoint_key: str


class SlotVariableReference(NamedTuple):
    """An optimizer slot: ``slot_variable_node_id`` is ``slot_name`` of the original."""

    original_variable_node_id: int
    slot_name: str
    slot_variable_node_id: int


@dataclass(frozen=True)
class ObjectGraphNode:
    """One ``TrackableObject`` of the checkpoint's object graph."""

    children: tuple[ObjectReference, ...]
    attributes: tuple[SerializedTensor, ...]
    slot_variables: tuple[SlotVariableReference, ...]


@dataclass(frozen=True)
class ObjectGraph:
    """The ``TrackableObjectGraph`` saved by ``tf.train.Checkpoint``.

    Attributes:
        nodes: the objects; node 0 is the root.
    """

    nodes: tuple[ObjectGraphNode, ...]

    @classmethod
    def parse(cls, data: bytes) -> ObjectGraph:
        """Decodes a serialized ``TrackableObjectGraph``.

        Args:
            data: the proto bytes.

        Returns:
            The graph.

        Raises:
            ProtoDecodeError: the bytes are not a well-formed graph.
        """
        nodes = []
        for field, wire, value in _proto.iter_fields(data):
            if field == 1:
                _expect_wire(field, wire, WIRE_LEN)
                nodes.append(_parse_trackable_object(value))
        return cls(nodes=tuple(nodes))

    def _node_paths(self) -> dict[int, str]:
        paths: dict[int, str] = {}
        if not self.nodes:
            return paths
        paths[0] = ""
        queue = deque([0])
        while queue:  # breadth first, so each object gets its shortest path
            node_id = queue.popleft()
            for child in self.nodes[node_id].children:
                if child.node_id in paths or not 0 <= child.node_id < len(self.nodes):
                    continue
                parent = paths[node_id]
                paths[child.node_id] = (
                    f"{parent}/{child.local_name}" if parent else child.local_name
                )
                queue.append(child.node_id)
        # Slot variables hang off their variable, not off the optimizer's
        # children; a slot of a slot needs a second pass, hence the loop.
        changed = True
        while changed:
            changed = False
            for node in self.nodes:
                for slot in node.slot_variables:
                    sid, oid = slot.slot_variable_node_id, slot.original_variable_node_id
                    if sid in paths or oid not in paths or not 0 <= sid < len(self.nodes):
                        continue
                    paths[sid] = f"{paths[oid]}/{slot.slot_name}" if paths[oid] else slot.slot_name
                    changed = True
        return paths

    def paths(self) -> dict[str, str]:
        """Maps each attribute's checkpoint key to a readable object path.

        The path joins the ``local_name``s from the root by breadth-first
        search (``"model/layer_with_weights-0/kernel"``); an object reachable
        only as an optimizer slot gets ``"<variable path>/<slot name>"``.

        Returns:
            ``{checkpoint_key: path}`` for every reachable attribute.
        """
        node_paths = self._node_paths()
        out: dict[str, str] = {}
        for node_id, node in enumerate(self.nodes):
            path = node_paths.get(node_id)
            if path is None:
                continue
            for attr in node.attributes:
                out.setdefault(attr.checkpoint_key, path)
        return out

    def full_names(self) -> dict[str, str]:
        """Maps each attribute's checkpoint key to its ``full_name``.

        For variables the full name is the graph name (``"dense/kernel"``),
        which is what name-based code expects.

        Returns:
            ``{checkpoint_key: full_name}``.
        """
        out: dict[str, str] = {}
        for node in self.nodes:
            for attr in node.attributes:
                out.setdefault(attr.checkpoint_key, attr.full_name)
        return out


def _expect_wire(field: int, wire: int, expected: int) -> None:
    if wire != expected:
        raise ProtoDecodeError(f"field {field} has wire type {wire}, expected {expected}")


def _parse_trackable_object(data: bytes) -> ObjectGraphNode:
    fast = trackable_object_fields(data)
    if fast is not None:
        children_, attributes_ = fast
        return ObjectGraphNode(
            tuple([ObjectReference(*c) for c in children_]),
            tuple([SerializedTensor(*a) for a in attributes_]),
            (),
        )
    return _parse_trackable_object_general(data)


def _parse_trackable_object_general(data: bytes) -> ObjectGraphNode:
    """Any valid ``TrackableObject``, every field checked (``proto_fast`` is the quick path)."""
    children, attributes, slots = [], [], []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            _expect_wire(field, wire, WIRE_LEN)
            node_id, local_name = 0, b""
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    _expect_wire(f, w, WIRE_VARINT)
                    node_id = _proto.to_int32(v)
                elif f == 2:
                    _expect_wire(f, w, WIRE_LEN)
                    local_name = v
            children.append(ObjectReference(node_id, to_str(local_name)))
        elif field == 2:
            _expect_wire(field, wire, WIRE_LEN)
            strings = [b"", b"", b""]
            for f, w, v in _proto.iter_fields(value):
                if f in (1, 2, 3):
                    _expect_wire(f, w, WIRE_LEN)
                    strings[f - 1] = v
            attributes.append(SerializedTensor(*(to_str(s) for s in strings)))
        elif field == 3:
            _expect_wire(field, wire, WIRE_LEN)
            original, slot_name, slot_id = 0, b"", 0
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    _expect_wire(f, w, WIRE_VARINT)
                    original = _proto.to_int32(v)
                elif f == 2:
                    _expect_wire(f, w, WIRE_LEN)
                    slot_name = v
                elif f == 3:
                    _expect_wire(f, w, WIRE_VARINT)
                    slot_id = _proto.to_int32(v)
            slots.append(SlotVariableReference(original, to_str(slot_name), slot_id))
    return ObjectGraphNode(tuple(children), tuple(attributes), tuple(slots))


# ---------------------------------------------------------------------------
# The LevelDB-style table of the .index file.
# ---------------------------------------------------------------------------

_TABLE_MAGIC = 0xDB4775248B80FB57
_FOOTER_SIZE = 48  # two varint64 block handles padded to 40 bytes, then the magic
_BLOCK_TRAILER_SIZE = 5  # compression type byte + masked CRC32C
_NO_COMPRESSION = 0
_SNAPPY_COMPRESSION = 1


class _BadIndex(Exception):
    """Internal: what is wrong with the index; turned into a named public error."""


def _decode_block_handle(buf: bytes, pos: int, limit: int) -> tuple[int, int, int]:
    try:
        offset, pos = _proto.decode_varint(buf, pos, limit)
        size, pos = _proto.decode_varint(buf, pos, limit)
    except ProtoDecodeError as e:
        raise _BadIndex(f"bad block handle: {e}") from None
    return offset, size, pos


def _read_block(data: bytes, offset: int, size: int, blocks_end: int, what: str) -> bytes:
    if offset + size + _BLOCK_TRAILER_SIZE > blocks_end:
        raise _BadIndex(
            f"{what} at offset {offset} with size {size} runs past the end of the table"
            f" ({blocks_end} bytes before the footer)"
        )
    block = data[offset : offset + size]
    ctype = data[offset + size]
    stored = int.from_bytes(data[offset + size + 1 : offset + size + 5], "little")
    actual = crc32c(data[offset : offset + size + 1])
    if unmask_crc(stored) != actual:
        raise _BadIndex(f"{what} at offset {offset}: block checksum mismatch")
    if ctype == _SNAPPY_COMPRESSION:
        # TensorFlow has never written compressed bundle indexes, but its
        # reader accepts them; leave those to TensorFlow.
        raise UnsupportedCheckpointError(f"{what} is snappy-compressed")
    if ctype != _NO_COMPRESSION:
        raise _BadIndex(f"{what} at offset {offset}: unknown block type {ctype}")
    return block


def _parse_block(block: bytes, what: str) -> list[tuple[bytes, bytes]]:
    """Decodes every (key, value) of one block, checking every bound."""
    n = len(block)
    if n < 4:
        raise _BadIndex(f"{what} is {n} bytes, too short for a restart count")
    num_restarts = int.from_bytes(block[n - 4 :], "little")
    if num_restarts == 0 or num_restarts > (n - 4) // 4:
        raise _BadIndex(f"{what} has an impossible restart count {num_restarts}")
    limit = n - 4 * (num_restarts + 1)
    restarts = struct.unpack_from(f"<{num_restarts}I", block, limit)

    entries: list[tuple[bytes, bytes]] = []
    starts: dict[int, int] = {}  # entry offset -> its shared-prefix length
    key = b""
    pos = 0
    try:
        while pos < limit:
            entry_start = pos
            shared, pos = _proto.decode_varint(block, pos, limit)
            non_shared, pos = _proto.decode_varint(block, pos, limit)
            value_len, pos = _proto.decode_varint(block, pos, limit)
            if max(shared, non_shared, value_len) > _U32:
                raise _BadIndex(f"{what}: entry at {entry_start} has a length over 32 bits")
            if shared > len(key):
                raise _BadIndex(
                    f"{what}: entry at {entry_start} shares {shared} bytes"
                    f" of a {len(key)}-byte previous key"
                )
            if non_shared + value_len > limit - pos:
                raise _BadIndex(f"{what}: entry at {entry_start} runs past the entries")
            key = key[:shared] + block[pos : pos + non_shared]
            pos += non_shared
            value = block[pos : pos + value_len]
            pos += value_len
            starts[entry_start] = shared
            entries.append((key, value))
    except ProtoDecodeError as e:
        raise _BadIndex(f"{what}: bad varint in an entry: {e}") from None
    for r in restarts:
        if starts.get(r) != 0:
            raise _BadIndex(f"{what}: restart point {r} is not the start of a full key")
    return entries


def _read_table(path: str) -> list[tuple[bytes, bytes]]:
    """Reads every (key, value) of a TensorFlow table file, in key order."""
    if _storage.is_url(path):
        data = _storage.read_bytes(path)  # its errors say why (absent, refused, no answer)
    else:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise CheckpointNotFoundError(f"checkpoint index {path} does not exist") from None
    if len(data) < _FOOTER_SIZE:
        raise _BadIndex(
            f"the file is {len(data)} bytes, shorter than the {_FOOTER_SIZE}-byte table footer"
        )
    footer_at = len(data) - _FOOTER_SIZE
    magic = int.from_bytes(data[-8:], "little")
    if magic != _TABLE_MAGIC:
        raise _BadIndex(f"bad table magic number 0x{magic:016x} (not an index file)")
    meta_offset, meta_size, pos = _decode_block_handle(data, footer_at, footer_at + 40)
    index_offset, index_size, _ = _decode_block_handle(data, pos, footer_at + 40)
    # TensorFlow never reads the (always empty) metaindex block; checking its
    # checksum anyway means a damaged byte anywhere but the footer's padding
    # is noticed.
    _read_block(data, meta_offset, meta_size, footer_at, "metaindex block")
    index_block = _read_block(data, index_offset, index_size, footer_at, "index block")

    entries: list[tuple[bytes, bytes]] = []
    for separator, handle in _parse_block(index_block, "index block"):
        offset, size, end = _decode_block_handle(handle, 0, len(handle))
        if end != len(handle):
            raise _BadIndex("index block: trailing bytes after a block handle")
        what = f"data block at offset {offset}"
        block_entries = _parse_block(_read_block(data, offset, size, footer_at, what), what)
        if block_entries and block_entries[-1][0] > separator:
            raise _BadIndex(f"{what}: its keys go past the index separator")
        entries.extend(block_entries)
    for (k1, _), (k2, _) in zip(entries, entries[1:], strict=False):
        if k1 >= k2:
            raise _BadIndex(f"keys out of order: {k1!r} then {k2!r}")
    return entries


# ---------------------------------------------------------------------------
# BundleHeaderProto and BundleEntryProto.
# ---------------------------------------------------------------------------

_BUNDLE_VERSION = 1  # kTensorBundleVersion: the consumer version we implement


@dataclass(frozen=True)
class _Header:
    num_shards: int
    big_endian: bool
    producer: int
    min_consumer: int
    bad_consumers: tuple[int, ...]


def _parse_header(data: bytes) -> _Header:
    num_shards, endianness = 0, 0
    producer, min_consumer, bad = 0, 0, []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            _expect_wire(field, wire, WIRE_VARINT)
            num_shards = _proto.to_int32(value)
        elif field == 2:
            _expect_wire(field, wire, WIRE_VARINT)
            endianness = _proto.to_int32(value)
        elif field == 3:
            _expect_wire(field, wire, WIRE_LEN)
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    _expect_wire(f, w, WIRE_VARINT)
                    producer = _proto.to_int32(v)
                elif f == 2:
                    _expect_wire(f, w, WIRE_VARINT)
                    min_consumer = _proto.to_int32(v)
                elif f == 3 and w == WIRE_VARINT:
                    bad.append(_proto.to_int32(v))
                elif f == 3:  # packed repeated int32
                    _expect_wire(f, w, WIRE_LEN)
                    p = 0
                    while p < len(v):
                        item, p = _proto.decode_varint(v, p)
                        bad.append(_proto.to_int32(item))
    return _Header(num_shards, endianness == 1, producer, min_consumer, tuple(bad))


class _RawEntry(NamedTuple):
    dtype: int
    shape: tuple[int, ...]
    shard_id: int
    offset: int
    size: int
    crc32c: int
    slices: tuple[tuple[tuple[int, int], ...], ...]


def _parse_shape(data: bytes, dims: list[int]) -> None:
    for field, wire, value in _proto.iter_fields(data):
        if field == 2:
            _expect_wire(field, wire, WIRE_LEN)
            size = 0
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    _expect_wire(f, w, WIRE_VARINT)
                    size = _proto.to_int64(v)
            dims.append(size)
        elif field == 3:
            _expect_wire(field, wire, WIRE_VARINT)
            if value:
                raise ProtoDecodeError("the shape has unknown rank")


def _parse_slice(data: bytes) -> tuple[tuple[int, int], ...]:
    extents = []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            _expect_wire(field, wire, WIRE_LEN)
            start, length = 0, -1  # no length means the full extent
            for f, w, v in _proto.iter_fields(value):
                if f == 1:
                    _expect_wire(f, w, WIRE_VARINT)
                    start = _proto.to_int64(v)
                elif f == 2:
                    _expect_wire(f, w, WIRE_VARINT)
                    length = _proto.to_int64(v)
            extents.append((start, length))
    return tuple(extents)


def _parse_entry_general(data: bytes) -> _RawEntry:
    """Any valid ``BundleEntryProto``, every field checked (``proto_fast`` is the quick path)."""
    dtype, shard_id, offset, size, crc = 0, 0, 0, 0, 0
    dims: list[int] = []
    slices = []
    for field, wire, value in _proto.iter_fields(data):
        if field == 1:
            _expect_wire(field, wire, WIRE_VARINT)
            dtype = _proto.to_int32(value)
        elif field == 2:
            _expect_wire(field, wire, WIRE_LEN)
            _parse_shape(value, dims)  # repeated occurrences merge, as in protobuf
        elif field == 3:
            _expect_wire(field, wire, WIRE_VARINT)
            shard_id = _proto.to_int32(value)
        elif field == 4:
            _expect_wire(field, wire, WIRE_VARINT)
            offset = _proto.to_int64(value)
        elif field == 5:
            _expect_wire(field, wire, WIRE_VARINT)
            size = _proto.to_int64(value)
        elif field == 6:
            _expect_wire(field, wire, WIRE_FIXED32)
            crc = value
        elif field == 7:
            _expect_wire(field, wire, WIRE_LEN)
            slices.append(_parse_slice(value))
    return _RawEntry(dtype, tuple(dims), shard_id, offset, size, crc, tuple(slices))


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _slice_label(key: str, extents: tuple[tuple[int, int], ...]) -> str:
    # How errors name one stored slice of a partitioned tensor.
    spec = ":".join("-" if n < 0 else f"{s},{n}" for s, n in extents)
    return f"{key!r} (slice {spec})"


def _slice_bounds(extents: tuple[tuple[int, int], ...], shape: tuple[int, ...]) -> list[range]:
    return [
        range(0, dim) if length < 0 else range(start, start + length)
        for (start, length), dim in zip(extents, shape, strict=True)
    ]


# ---------------------------------------------------------------------------
# The reader.
# ---------------------------------------------------------------------------

_READ_CHUNK = 8 << 20  # checksum each chunk while it is still in cache


class BundleReader:
    """Reads a TensorFlow tensor bundle checkpoint without TensorFlow.

    The whole index is parsed and validated on construction; data files are
    opened per read, so one reader can be shared between threads.

    Attributes:
        prefix: the checkpoint prefix (``.../model.ckpt-100``).
        num_shards: the number of data files, from the index header.
        entries: metadata of every user-visible key, including
            ``_CHECKPOINTABLE_OBJECT_GRAPH`` when present; not the header and
            not the internal keys of tensor slices.
    """

    def __init__(self, prefix: str, *, index_path: str | None = None) -> None:
        """Parses ``prefix + ".index"``.

        Args:
            prefix: the checkpoint prefix, without ``.index``.
            index_path: read the index from this file instead (a writer's temporary
                output, kept under a name no loader takes for a checkpoint).

        Raises:
            CheckpointNotFoundError: the index file does not exist.
            CheckpointCorruptError: the index is truncated or malformed.
            UnsupportedCheckpointError: the index uses a feature this reader
                does not implement (a compressed block, a newer format).
        """
        self.prefix = os.fspath(prefix)
        #: Whether the checkpoint is at a URL, read through ``tf.io.gfile``.
        self.remote = _storage.is_url(self.prefix)
        self._object_graph: ObjectGraph | None = None
        self._index_path = index_path if index_path is not None else self.prefix + ".index"
        try:
            with gc_paused():  # thousands of entries, no cycles
                table = _read_table(self._index_path)
                self._init_from_table(table)
        except _BadIndex as e:
            raise CheckpointCorruptError(
                f"corrupt checkpoint index {self._index_path}: {e}"
            ) from None
        except ProtoDecodeError as e:
            raise CheckpointCorruptError(
                f"corrupt checkpoint index {self._index_path}: bad protobuf: {e}"
            ) from None
        except UnsupportedCheckpointError as e:
            raise UnsupportedCheckpointError(f"checkpoint index {self._index_path}: {e}") from None
        _LOG.debug(
            "read %s: %d entries, %d shards", self._index_path, len(self.entries), self.num_shards
        )

    def _init_from_table(self, table: list[tuple[bytes, bytes]]) -> None:
        if not table or table[0][0] != b"":
            raise _BadIndex("no header entry (empty key)")
        header = _parse_header(table[0][1])
        if header.num_shards < 1:
            raise _BadIndex(f"the header says num_shards={header.num_shards}")
        if header.min_consumer > _BUNDLE_VERSION or _BUNDLE_VERSION in header.bad_consumers:
            raise UnsupportedCheckpointError(
                f"bundle format version producer={header.producer}"
                f" min_consumer={header.min_consumer} is newer than this reader"
            )
        self.num_shards = header.num_shards
        self._big_endian = header.big_endian

        entries: dict[str, BundleEntry] = {}
        self._slice_entries: dict[bytes, BundleEntry] = {}
        names = _DTYPE_NAMES
        num_shards = self.num_shards
        for raw_key, value in table[1:]:
            fast = entry_fields(value)
            if fast is not None and raw_key[:1] != b"\x00":
                # The common case, checked in line: a known dtype, a shard that
                # exists, sizes that are not negative (entry_fields returns None
                # for negative varints); anything else takes the full path below.
                dtype, shape, shard_id, offset, size, crc = fast
                name = names.get(dtype)
                if name is not None and shard_id < num_shards and _numel(shape) < 1 << 63:
                    key = raw_key.decode("utf-8", "surrogateescape")
                    entries[key] = BundleEntry(key, name, shape, shard_id, offset, size, crc, ())
                    continue
            try:  # entry_fields already decoded the common layout: not twice
                raw = _RawEntry(*fast, ()) if fast is not None else _parse_entry_general(value)
            except ProtoDecodeError as e:
                raise _BadIndex(f"entry {raw_key!r}: bad protobuf: {e}") from None
            is_slice = raw_key.startswith(b"\x00")
            key = to_str(raw_key)
            entry = BundleEntry(
                key=key,
                dtype=_dtype_name(raw.dtype),
                shape=raw.shape,
                shard_id=raw.shard_id,
                offset=raw.offset,
                size=raw.size,
                crc32c=raw.crc32c,
                slices=raw.slices,
            )
            self._validate_entry(entry, key if not is_slice else repr(raw_key))
            if is_slice:
                self._slice_entries[raw_key] = entry
            else:
                entries[key] = entry
        self.entries = entries

    def _validate_entry(self, entry: BundleEntry, shown: str) -> None:
        if entry.dtype.endswith("_ref") or entry.dtype == "unknown_dtype_0":
            # Reference types and DT_INVALID are never stored; handing such an entry to
            # TensorFlow's reader (the fallback for dtypes read natively) aborts the process.
            raise _BadIndex(f"entry {shown}: dtype {entry.dtype} cannot be stored in a checkpoint")
        if any(d < 0 for d in entry.shape):
            raise _BadIndex(f"entry {shown}: invalid shape {entry.shape}")
        if _numel(entry.shape) >= 1 << 63:
            raise _BadIndex(f"entry {shown}: shape {entry.shape} has too many elements")
        if entry.slices:
            for extents in entry.slices:
                if len(extents) != len(entry.shape):
                    raise _BadIndex(
                        f"entry {shown}: slice {extents} does not match rank {len(entry.shape)}"
                    )
                for (start, length), dim in zip(extents, entry.shape, strict=True):
                    if start < 0 or (length >= 0 and start + length > dim):
                        raise _BadIndex(
                            f"entry {shown}: slice {extents} is outside shape {entry.shape}"
                        )
            return
        if not 0 <= entry.shard_id < self.num_shards:
            raise _BadIndex(
                f"entry {shown}: shard {entry.shard_id} is not below num_shards={self.num_shards}"
            )
        if entry.offset < 0 or entry.size < 0:
            raise _BadIndex(f"entry {shown}: negative offset {entry.offset} or size {entry.size}")

    # -- files ---------------------------------------------------------------

    @property
    def index_path(self) -> str:
        """The ``.index`` file's path."""
        return self._index_path

    def data_path(self, shard_id: int) -> str:
        """The path of one data shard.

        Args:
            shard_id: the shard number, ``0 <= shard_id < num_shards``.

        Returns:
            ``f"{prefix}.data-{shard_id:05d}-of-{num_shards:05d}"``.
        """
        return f"{self.prefix}.data-{shard_id:05d}-of-{self.num_shards:05d}"

    def missing_files(self) -> list[str]:
        """The checkpoint files that a full read needs but that do not exist.

        Returns:
            The index path if it is gone, and the path of every data shard
            that holds at least one stored tensor and does not exist.
        """
        missing = []
        if not _storage.exists(self._index_path):
            missing.append(self._index_path)
        shards = {e.shard_id for e in self.entries.values() if not e.slices}
        shards.update(e.shard_id for e in self._slice_entries.values())
        for shard in sorted(shards):
            path = self.data_path(shard)
            if not _storage.exists(path):
                missing.append(path)
        return missing

    def short_files(self) -> list[str]:
        """The existing data shards that end before a tensor the index places in them.

        A cheap check (one ``stat`` per shard) that finds a truncated copy or an
        unfinished download when the checkpoint is opened rather than when the first
        affected tensor is read.

        Returns:
            One description per short shard: its path, its size, and the tensor that
            ends furthest beyond it. Missing shards are :meth:`missing_files`'s.
        """
        labels = {
            encode_tensor_name_slice(key.encode("utf-8", "surrogateescape"), ext): _slice_label(
                key, ext
            )
            for key, e in self.entries.items()
            for ext in e.slices
        }
        stored = [(repr(k), e) for k, e in self.entries.items() if not e.slices]
        stored += [(labels.get(raw, repr(raw)), e) for raw, e in self._slice_entries.items()]
        ends: dict[int, tuple[int, str]] = {}
        for label, e in stored:
            end = e.offset + e.size
            if e.size and end > ends.get(e.shard_id, (0, ""))[0]:
                ends[e.shard_id] = (end, label)
        short = []
        for shard, (end, label) in sorted(ends.items()):
            path = self.data_path(shard)
            try:
                actual = _storage.getsize(path)
            except OSError:
                continue
            if actual < end:
                short.append(f"{path} has {actual} bytes but tensor {label} ends at byte {end}")
        return short

    # -- reading -------------------------------------------------------------

    def _entry(self, key: str) -> BundleEntry:
        try:
            return self.entries[key]
        except KeyError:
            raise KeyError(f"key {key!r} is not in checkpoint {self.prefix}") from None

    def _check_decodable(self, entry: BundleEntry) -> np.dtype:
        if self._big_endian:
            raise UnsupportedCheckpointError(
                f"checkpoint {self.prefix} was written on a big-endian machine"
            )
        return numpy_dtype(entry.dtype)

    def open_shard(self, shard_id: int, label: str) -> tuple[Any, int]:
        """Opens data shard ``shard_id`` unbuffered; returns the file and its size.

        Raises:
            CheckpointNotFoundError: the shard does not exist (``label`` names the tensor).
        """
        path = self.data_path(shard_id)
        if self.remote:
            try:
                f = _storage.RemoteFile(path)
            except CheckpointNotFoundError as e:
                raise CheckpointNotFoundError(f"{e} (needed for {label})") from None
            return f, f.size
        try:
            f = open(path, "rb", buffering=0)  # noqa: SIM115 (the caller closes it)
        except FileNotFoundError:
            raise CheckpointNotFoundError(
                f"data file {path} of checkpoint {self.prefix} does not exist (needed for {label})"
            ) from None
        try:
            return f, os.fstat(f.fileno()).st_size
        except BaseException:
            f.close()
            raise

    def check_in_shard(self, entry: BundleEntry, size: int, label: str) -> None:
        """Raises ``CheckpointCorruptError`` when ``entry``'s bytes end past ``size``."""
        if entry.offset + entry.size > size:
            raise CheckpointCorruptError(
                f"data file {self.data_path(entry.shard_id)} is too short for tensor {label}:"
                f" it needs {entry.offset + entry.size} bytes (offset {entry.offset} + size"
                f" {entry.size}) but has {size}"
            )

    def _open(self, entry: BundleEntry, label: str) -> tuple[Any, str]:
        """Opens the entry's data file and checks that its bytes are all there."""
        f, size = self.open_shard(entry.shard_id, label)
        try:
            self.check_in_shard(entry, size, label)
        except BaseException:
            f.close()
            raise
        return f, self.data_path(entry.shard_id)

    def _checksum_error(self, label: str, path: str, stored: int, actual: int) -> NoReturn:
        raise CheckpointCorruptError(
            f"checksum mismatch for tensor {label} in data file {path}: stored crc32c"
            f" 0x{unmask_crc(stored):08x}, computed 0x{actual:08x}"
        )

    def _check_size(self, entry: BundleEntry, label: str, dtype: np.dtype) -> None:
        """Checks the stored size against the shape, so allocations stay bounded."""
        numel = _numel(entry.shape)
        if dtype.kind == "O":
            # At least one varint byte per string plus the 4-byte checksum of
            # the lengths (TensorFlow may write nothing for an empty tensor).
            if entry.size >= numel + 4 or (entry.size == 0 and numel == 0):
                return
            raise CheckpointCorruptError(
                f"entry of string tensor {label} in checkpoint index {self._index_path} has size"
                f" {entry.size}, too small for {numel} strings"
            )
        expected = numel * dtype.itemsize
        if entry.size != expected:
            raise CheckpointCorruptError(
                f"entry of tensor {label} in checkpoint index {self._index_path} has size"
                f" {entry.size}, but shape {entry.shape} of {entry.dtype} needs {expected} bytes"
            )

    def _read_numeric(
        self, entry: BundleEntry, label: str, dtype: np.dtype, verify: bool
    ) -> np.ndarray:
        """Reads a fixed-width tensor into a new array."""
        self._check_size(entry, label, dtype)
        f, path = self._open(entry, label)
        with f:
            # Safe: size == numel * itemsize, and _open checked that the
            # file really holds that many bytes.
            out = np.empty(entry.shape, dtype=dtype)
            buf = out.reshape(-1).view(np.uint8)
            mv = memoryview(buf)
            f.seek(entry.offset)
            crc = 0
            pos = 0
            n = entry.size
            while pos < n:
                want = min(_READ_CHUNK, n - pos)
                got = f.readinto(mv[pos : pos + want])
                if not got:
                    raise CheckpointCorruptError(
                        f"data file {path} ended while reading tensor {label}: expected"
                        f" {entry.offset + n} bytes, got {entry.offset + pos}"
                    )
                if verify:
                    crc = _crc_extend(crc, buf[pos : pos + got])
                pos += got
        if verify and crc != unmask_crc(entry.crc32c):
            self._checksum_error(label, path, entry.crc32c, crc)
        return out

    def _read_strings(self, entry: BundleEntry, label: str, verify: bool) -> list[bytes]:
        numel = _numel(entry.shape)
        self._check_size(entry, label, np.dtype(object))
        f, path = self._open(entry, label)
        if entry.size == 0:
            f.close()
            if verify and unmask_crc(entry.crc32c) != 0:
                self._checksum_error(label, path, entry.crc32c, 0)
            return []
        with f:
            f.seek(entry.offset)
            region = f.read(entry.size)
        if len(region) != entry.size:
            raise CheckpointCorruptError(
                f"data file {path} ended while reading tensor {label}: expected"
                f" {entry.offset + entry.size} bytes, got {entry.offset + len(region)}"
            )

        def corrupt(what: str) -> CheckpointCorruptError:
            return CheckpointCorruptError(f"string tensor {label} in data file {path}: {what}")

        head = np.frombuffer(region, dtype=np.uint8, count=numel)
        if numel == 0 or int(head.max()) < 0x80:
            lengths = head.astype(np.uint64)  # fast path: every length is one varint byte
            pos = numel
        else:
            decoded = []
            pos = 0
            limit = entry.size - 4
            try:
                for _ in range(numel):
                    n, pos = _proto.decode_varint(region, pos, limit)
                    decoded.append(n)
            except ProtoDecodeError as e:
                raise corrupt(f"bad string length: {e}") from None
            lengths = np.array(decoded, dtype=np.uint64)
        if pos + 4 > entry.size:
            raise corrupt("the string lengths run past the entry")
        # Summed as Python ints: a uint64 sum of corrupt lengths could wrap
        # around to the right total.
        total = sum(lengths.tolist())
        if total != entry.size - pos - 4:
            raise corrupt(
                f"string lengths add up to {total} bytes but the entry holds {entry.size - pos - 4}"
            )
        if verify:
            # TensorFlow checksums each length as a little-endian uint32 (uint64
            # only for strings of 4 GiB or more), not the varint bytes.
            if numel and int(lengths.max()) > _U32:
                packed = b"".join(struct.pack("<I" if n <= _U32 else "<Q", int(n)) for n in lengths)
            else:
                packed = lengths.astype("<u4").tobytes()
            crc = crc32c(packed)
            stored_len_crc = int.from_bytes(region[pos : pos + 4], "little")
            if unmask_crc(stored_len_crc) != crc:
                raise corrupt("the checksum of the string lengths does not match")
            crc = crc32c(region[pos:], crc)  # the length checksum itself, then the bytes
            if crc != unmask_crc(entry.crc32c):
                self._checksum_error(label, path, entry.crc32c, crc)
        out = []
        p = pos + 4
        for n in lengths.tolist():
            out.append(region[p : p + n])
            p += n
        return out

    def _stored_entry(
        self, full: BundleEntry, key: str, extents: tuple[tuple[int, int], ...]
    ) -> BundleEntry:
        raw_key = encode_tensor_name_slice(key.encode("utf-8", "surrogateescape"), extents)
        part = self._slice_entries.get(raw_key)
        if part is None:
            raise CheckpointCorruptError(
                f"checkpoint index {self._index_path} lists slice {extents} of tensor {key!r}"
                " but has no entry for it"
            )
        want_shape = tuple(len(r) for r in _slice_bounds(extents, full.shape))
        if part.dtype != full.dtype or part.shape != want_shape or part.slices:
            raise CheckpointCorruptError(
                f"checkpoint index {self._index_path}: slice {extents} of tensor {key!r} is"
                f" stored as {part.dtype}{list(part.shape)}, expected {full.dtype}{list(want_shape)}"
            )
        return part

    def _check_slices_cover(self, entry: BundleEntry, key: str) -> list[list[range]]:
        boxes = [_slice_bounds(ext, entry.shape) for ext in entry.slices]
        volume = sum(_numel(tuple(len(r) for r in box)) for box in boxes)
        for i, a in enumerate(boxes):
            if _numel(tuple(len(r) for r in a)) == 0:
                continue
            for b in boxes[i + 1 :]:
                if all(
                    max(ra.start, rb.start) < min(ra.stop, rb.stop)
                    for ra, rb in zip(a, b, strict=True)
                ):
                    raise CheckpointCorruptError(
                        f"checkpoint index {self._index_path}: slices of tensor {key!r} overlap"
                    )
        if volume != _numel(entry.shape):
            raise CheckpointCorruptError(
                f"checkpoint index {self._index_path}: the slices of tensor {key!r} cover"
                f" {volume} of its {_numel(entry.shape)} elements"
            )
        return boxes

    def _read_sliced(self, entry: BundleEntry, key: str, verify: bool) -> np.ndarray:
        dtype = self._check_decodable(entry)
        boxes = self._check_slices_cover(entry, key)
        parts = [self._stored_entry(entry, key, ext) for ext in entry.slices]
        # Check every part against its file before allocating the full tensor,
        # whose size is then bounded by bytes that really exist.
        for ext, part in zip(entry.slices, parts, strict=True):
            label = _slice_label(key, ext)
            self._check_size(part, label, dtype)
            f, _ = self._open(part, label)
            f.close()
        out = np.empty(entry.shape, dtype=dtype)
        for ext, part, box in zip(entry.slices, parts, boxes, strict=True):
            value = self._read_entry(part, key, verify, _slice_label(key, ext))
            out[tuple(slice(r.start, r.stop) for r in box)] = value
        return out

    def _read_entry(
        self,
        entry: BundleEntry,
        key: str,
        verify: bool,
        label: str | None = None,
    ) -> np.ndarray:
        if entry.slices:
            return self._read_sliced(entry, key, verify)
        label = label or repr(key)
        dtype = self._check_decodable(entry)
        if dtype.kind == "O":
            values = self._read_strings(entry, label, verify)
            out = np.empty(entry.shape, dtype=object)
            flat = out.reshape(-1)
            for i, v in enumerate(values):
                flat[i] = v
            return out
        return self._read_numeric(entry, label, dtype, verify)

    def read(self, key: str, *, verify: bool = True) -> np.ndarray:
        """Reads one tensor.

        Args:
            key: a key of :attr:`entries`.
            verify: check the stored CRC32C (sizes are always checked).

        Returns:
            A new array with the tensor's shape; strings come back as an
            ``object`` array of ``bytes``, and partitioned tensors assembled
            from their slices.

        Raises:
            KeyError: the key is not in the checkpoint.
            CheckpointNotFoundError: the data file is missing.
            CheckpointCorruptError: short data file, bad sizes or checksum.
            UnsupportedCheckpointError: a dtype this reader cannot decode.
        """
        return self._read_entry(self._entry(key), key, verify)

    def read_many(
        self, keys: Iterable[str], *, verify: bool = True, threads: int | None = None
    ) -> dict[str, np.ndarray]:
        """Reads several tensors in parallel threads.

        File reads and checksums release the GIL, so threads overlap them.

        Args:
            keys: keys of :attr:`entries` (duplicates are read once).
            verify: check the stored CRC32Cs.
            threads: worker threads; default ``min(len(keys), os.cpu_count())``.

        Returns:
            ``{key: array}`` in the order of ``keys``.

        Raises:
            The first error any read raises, as for :meth:`read`.
        """
        keys = list(dict.fromkeys(keys))
        for key in keys:
            self._entry(key)
        if threads is None:
            threads = min(len(keys), os.cpu_count() or 1)
        if threads <= 1 or len(keys) <= 1:
            return {key: self.read(key, verify=verify) for key in keys}

        def nbytes(key: str) -> int:
            e = self.entries[key]
            return e.size if not e.slices else _numel(e.shape)

        # Largest first, so that one big tensor does not start last.
        order = sorted(keys, key=nbytes, reverse=True)
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bundle-read") as pool:
            futures = {key: pool.submit(self.read, key, verify=verify) for key in order}
            done, pending = wait(futures.values(), return_when=FIRST_EXCEPTION)
            for fut in pending:
                fut.cancel()
            for key in order:  # re-raise the first failure in a stable order
                fut = futures[key]
                if fut in done and fut.exception() is not None:
                    raise fut.exception()
        return {key: futures[key].result() for key in keys}

    def object_graph(self) -> ObjectGraph | None:
        """The parsed object graph of an object-based (``tf.train.Checkpoint``) checkpoint.

        Returns:
            The graph, or ``None`` for a name-based (``Saver``) checkpoint.

        Raises:
            CheckpointCorruptError: the graph cannot be parsed.
        """
        if OBJECT_GRAPH_KEY not in self.entries:
            return None
        if self._object_graph is not None:
            return self._object_graph
        entry = self.entries[OBJECT_GRAPH_KEY]
        if entry.dtype != "string" or entry.shape != ():
            raise CheckpointCorruptError(
                f"{OBJECT_GRAPH_KEY} in {self._index_path} is {entry.dtype}{list(entry.shape)},"
                " not a scalar string"
            )
        data = self.read(OBJECT_GRAPH_KEY)[()]
        try:
            with gc_paused():  # an object per node, no cycles
                graph = ObjectGraph.parse(data)
        except ProtoDecodeError as e:
            raise CheckpointCorruptError(
                f"{OBJECT_GRAPH_KEY} of checkpoint {self.prefix} is not a valid object graph: {e}"
            ) from None
        self._object_graph = graph
        return graph

    def __repr__(self) -> str:
        return (
            f"BundleReader({self.prefix!r}, {len(self.entries)} entries, {self.num_shards} shards)"
        )
