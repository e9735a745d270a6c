# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"tf2"`` output streamed: TensorFlow's object graph, the values from the source.

``tf.train.Checkpoint(model=m).write`` saves what TensorFlow's checkpoint serialization
(``save_util.serialize_graph_view``) lists: the ``TrackableObjectGraph`` proto and, for
each checkpoint key, the object whose value it holds. That walk reads no value (a
variable's value comes as a callable, called only when a saver writes it), so it is run
here on the same root ``Checkpoint(model=model)`` with its ``save_counter``, as
:func:`~._model.write` used to save. Then each key goes through our
:class:`~tf1compat_init.bundle.writer.BundleWriter`: a variable loaded from the source
gets the source's bytes streamed in chunks (never assigned to the model), every other
value (``save_counter``, a variable the policy left alone, Python state) the model's,
and the object graph goes under ``_CHECKPOINTABLE_OBJECT_GRAPH`` as a string scalar.
Same keys, dtypes, shapes and object graph as TensorFlow's own save.

Verifying reads the index back through TensorFlow's checkpoint reader
(``tf.train.load_checkpoint``'s: every key's dtype and shape, the object graph, which must
be the ones written) and every tensor's bytes in chunks against the CRC32C recorded as
written, as the ``tf1`` output is read back. A model no larger than
:data:`RELOAD_LIMIT` is also loaded back with ``Checkpoint.restore(...).assert_consumed()``
(zeroed first, :func:`~._model.check`): TensorFlow's restore reads all values in one op,
which would hold the model twice for a big one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, NoReturn

import numpy as np

from ..bundle.crc import unmask_crc
from ..bundle.reader import BundleReader
from ..bundle.writer import BundleWriter
from ..engine.basics.tensor_bytes import Progress
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError
from ._behind import add_to_bundle, for_output
from ._stream import Chunks, check_in_threads, prefetched, value_crc

__all__ = [
    "OBJECT_GRAPH_KEY",
    "RELOAD_LIMIT",
    "Streamed",
    "Unstreamable",
    "model_bytes",
    "plan",
    "root_of",
    "streamed_variables",
    "variable_of",
    "verify",
    "write",
]

logger = logging.getLogger("tf1compat_init.migrate")

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
#: Models of at most this many bytes are also reloaded whole with ``Checkpoint.read``.
RELOAD_LIMIT = 64 << 20


class Unstreamable(Exception):
    """The model holds something the streaming writer cannot write as TensorFlow would."""


@dataclass
class Streamed:
    """What :func:`write` wrote: CRC32C and dtype by checkpoint key, the object graph."""

    crcs: dict[str, int] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    graph: bytes = b""
    by_target: dict[str, int] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)  # key -> target, if streamed
    datasets: list[tuple[str, str]] = field(default_factory=list)  # keras: (path, target)
    layouts: dict[str, tuple] = field(default_factory=dict)  # keras: path -> storage
    behind: Any = None  # the _behind.Behind that read it back as it was written, if one did


def root_of(model: Any) -> Any:
    """The object users restore: ``model`` if it is a ``Checkpoint``, else ``Checkpoint(model=)``."""
    import tensorflow as tf

    root = model if isinstance(model, tf.train.Checkpoint) else tf.train.Checkpoint(model=model)
    # Created now, so that Checkpoint(model=...).restore(out).assert_consumed() holds: a
    # restore creates the counter and asks for its value.
    _ = root.save_counter
    return root


def _graph(root: Any) -> tuple[bytes, list[tuple[str, Any]]]:
    """``(serialized object graph, [(checkpoint key, value or saver spec)])``, no value read."""
    try:
        from tensorflow.python.checkpoint import graph_view, save_util
    except ImportError as e:  # an older or newer TensorFlow without them
        raise Unstreamable(f"TensorFlow's checkpoint serialization is not there ({e})") from e
    serialized, _, registered, proto = save_util.serialize_graph_view(
        graph_view.ObjectGraphView(root)
    )
    if registered:
        raise Unstreamable(f"the model has registered savers ({', '.join(registered)})")
    keys = []
    for trackable, tensors in serialized.items():
        for key, value in tensors.items():
            if isinstance(value, dict):
                raise Unstreamable(f"{key} is saved in slices")
            keys.append((key, (trackable, value)))
    if any(k == OBJECT_GRAPH_KEY for k, _ in keys):
        raise Unstreamable(f"the model saves a value under {OBJECT_GRAPH_KEY}")
    return proto.SerializeToString(), sorted(keys)


def variable_of(obj: Any) -> Any:
    """The ``tf.Variable`` holding ``obj``'s value: itself, or a Keras 3 variable's."""
    import tensorflow as tf

    if isinstance(obj, tf.Variable):
        return obj
    inner = getattr(obj, "_value", None)
    if isinstance(inner, tf.Variable) and hasattr(obj, "assign"):
        return inner
    return obj


def _model_value(value: Any) -> np.ndarray:
    """A value TensorFlow would save for a key we do not stream, as numpy (strings as an
    object array, as the reader returns them)."""
    tensor = getattr(value, "tensor", value)  # a SaveSpec (a variable's callable): its tensor
    if callable(tensor):
        tensor = tensor()
    if tensor is None:
        raise Unstreamable("a variable is not initialized")
    dtype = getattr(tensor, "dtype", None)
    if getattr(dtype, "name", None) == "string" or isinstance(tensor, bytes | str):
        raw = tensor.numpy() if hasattr(tensor, "numpy") else tensor
        return np.asarray(raw, dtype=object)
    return as_array(tensor)


def as_array(tensor: Any) -> np.ndarray:
    """A fixed-width eager tensor's value as numpy: its buffer where TensorFlow gives it
    (``.numpy()`` would copy), else a copy. TF's ``__array__`` of a bfloat16 scalar gives
    no array (``object __array__ method not producing an array``)."""
    if getattr(getattr(tensor, "shape", None), "rank", None) == 0:
        return np.asarray(tensor.numpy())
    return np.asarray(tensor)


def streamed_variables(
    view: NamedView, targets: dict[str, Any], loaded: dict[str, str]
) -> dict[int, str]:
    """``{id(variable): target}`` of the loaded targets, each to take its source value's
    bytes as stored; raises :class:`Unstreamable` for one partitioned or of another dtype
    or shape than its value."""
    out: dict[int, str] = {}
    for target, name in loaded.items():
        t = targets[target]
        if t.partitioned or len(t.parts) != 1:
            raise Unstreamable(f"{target} is partitioned")
        info, var = view.variables[name], t.parts[0].variable
        if var.dtype.name != info.dtype or tuple(var.shape) != tuple(info.shape):
            raise Unstreamable(f"{target} is {var.dtype.name} {var.shape}, its value {info}")
        out[id(var)] = target
    return out


def plan(
    model: Any, view: NamedView, targets: dict[str, Any], loaded: dict[str, str]
) -> tuple[Any, bytes, list[tuple[str, Any, str | None]]]:
    """``(root, object graph, [(key, value spec, view name or None)])``; raises
    :class:`Unstreamable` where a loaded value cannot go to its key as it is stored."""
    by_variable = streamed_variables(view, targets, loaded)
    root = root_of(model)
    graph, keys = _graph(root)
    out, seen = [], set()
    for key, (trackable, value) in keys:
        target = by_variable.get(id(variable_of(trackable)))
        if target is None:
            out.append((key, value, None))
            continue
        seen.add(target)
        out.append((key, target, loaded[target]))
    missing = set(loaded) - seen
    if missing:
        raise Unstreamable(f"{sorted(missing)[0]} has no key of its own in the object graph")
    return root, graph, out


def write(
    view: NamedView,
    graph: bytes,
    keys: list[tuple[str, Any, str | None]],
    prefix: str,
    progress: Progress | None,
) -> Streamed:
    """Writes the bundle at ``prefix`` (its ``.index`` last); returns what it wrote.

    The model's own values first (small: counters, what the policy left alone), then the
    source's, streamed in the object graph's key order with the next read meanwhile. An
    output too large for the page cache is read back as it is written (:mod:`._behind`).
    """
    done = Streamed(graph=graph)
    streamed = [(key, target, name) for key, target, name in keys if name is not None]
    total = sum(view.nbytes(name) for _, _, name in streamed)
    if progress:
        progress(0, total, "")
    with BundleWriter(prefix, sync=False) as writer:  # synced while it is read back
        behind = done.behind = for_output(writer.data_path, total)
        if behind is not None:
            behind.flush = writer.flush
        for key, value, name in keys:
            if name is not None:
                continue
            arr = _model_value(value)
            dtype = getattr(value, "dtype", None)
            dtype = dtype.name if dtype is not None else None
            add_to_bundle(writer, key, arr, "string" if arr.dtype.hasobject else dtype, behind)
            done.crcs[key] = value_crc(arr)
            done.dtypes[key] = "string" if arr.dtype.hasobject else str(dtype or arr.dtype)
            done.shapes[key] = tuple(arr.shape)
            del arr
        graph_value = np.array(graph, dtype=object)
        writer.add(OBJECT_GRAPH_KEY, graph_value, "string")
        done.crcs[OBJECT_GRAPH_KEY] = value_crc(graph_value)
        done.dtypes[OBJECT_GRAPH_KEY], done.shapes[OBJECT_GRAPH_KEY] = "string", ()
        written = 0
        for (key, target, name), (_, value) in zip(
            streamed, prefetched(view, [n for _, _, n in streamed]), strict=True
        ):
            info = view.variables[name]
            crc = add_to_bundle(writer, key, value, info.dtype, behind)
            if not isinstance(value, Chunks):  # recorded as the read-back sums it
                crc = value_crc(np.asarray(value))
            del value  # before the next is read: two large tensors are never held at once
            done.crcs[key], done.dtypes[key], done.shapes[key] = crc, info.dtype, info.shape
            done.by_target[target] = crc
            done.targets[key] = target
            written += view.nbytes(name)
            if progress:
                progress(written, total, name)
        if behind is not None:
            behind.finish()
    return done


def verify(streamed: Streamed, prefix: str) -> None:
    """Reads the output back once; raises ``CheckpointCorruptError`` unless every key holds
    what was written and the object graph is the one written.

    TensorFlow's checkpoint reader (``tf.train.load_checkpoint``'s) reads the index: the
    keys, each key's dtype and shape, the object graph and any string value must be the
    ones written. Each fixed-width tensor's bytes are then read back in chunks (two
    threads, :func:`~._stream.check_in_threads`, a reused buffer each) and must have the
    CRC32C recorded as written, which the index must hold too. The same read-back as the
    ``tf1`` output's, at chunk memory: ``RestoreV2`` would hold each tensor whole, and
    a 2 GiB model with four 320 MiB tensors took 0.87 s to read back that way, against
    0.12 s for the same bytes in ``tf1`` (docs/performance.md).
    """
    import tensorflow as tf

    reader = tf.compat.v1.train.NewCheckpointReader(prefix)  # load_checkpoint's reader
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    if set(shapes) != set(streamed.crcs):
        raise CheckpointCorruptError(f"the written checkpoint {prefix} lists other keys")
    for key in streamed.crcs:
        got = (dtypes[key].name, tuple(shapes[key]))
        if got != (streamed.dtypes[key], tuple(streamed.shapes[key])):
            raise CheckpointCorruptError(
                f"{streamed.targets.get(key, key)!r} reads back from {prefix} as {got[0]} "
                f"{list(got[1])}, written as {streamed.dtypes[key]} "
                f"{list(streamed.shapes[key])} (key {key})"
            )
    if reader.get_tensor(OBJECT_GRAPH_KEY) != streamed.graph:
        raise CheckpointCorruptError(f"the object graph of {prefix} is not the one written")
    for key in streamed.crcs:
        if streamed.dtypes[key] == "string" and key != OBJECT_GRAPH_KEY:
            value = np.asarray(reader.get_tensor(key), dtype=object)
            if value_crc(value) != streamed.crcs[key]:
                _differs(streamed, key, "")
    del reader
    bundle = BundleReader(prefix)

    def check(key: str, buf: bytearray) -> None:
        entry = bundle.entries[key]
        if unmask_crc(entry.crc32c) != streamed.crcs[key]:
            _differs(streamed, key, ": its index holds another checksum")
        if streamed.behind is not None:  # read back as it was written: the index must agree
            label = f"{streamed.targets.get(key, key)!r} (key {key})"
            end = entry.offset + entry.size
            streamed.behind.expect(key, entry.offset, end, streamed.crcs[key], label)
            return
        try:
            for _ in bundle.raw_chunks(key, len(buf), into=buf):
                pass
        except CheckpointCorruptError as e:
            _differs(streamed, key, f": {e}")

    check_in_threads([k for k, d in streamed.dtypes.items() if d != "string"], check)


def _differs(streamed: Streamed, key: str, why: str) -> NoReturn:
    raise CheckpointCorruptError(
        f"{streamed.targets.get(key, key)!r} of the checkpoint read back from the output "
        f"differs from source (key {key}){why}"
    )


def model_bytes(targets: dict[str, Any]) -> int:
    """Bytes of the targets' variables."""
    total = 0
    for target in targets.values():
        for part in target.parts:
            n = part.variable.dtype.size
            for d in part.variable.shape:
                n *= int(d)
            total += n
    return total
