# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"keras"`` output streamed: Keras 3's ``.weights.h5`` layout, the values from the source.

``model.save_weights("x.weights.h5")`` in Keras 3 is ``saving_lib.save_weights_only``: an
``H5IOStore`` and Keras' own walk of the model (``_save_state``), where each layer's
``save_own_variables`` puts its variables at ``<path>/vars/<i>``. Here that same walk
runs with a store that differs in one thing: a variable loaded from the source gets an
empty dataset of its shape and dtype (bfloat16 tagged as Keras tags it), its storage
allocated at once and never filled, and its place in the file noted. Everything else
(groups, their ``name`` attributes, what a layer stores that is not a loaded variable)
is written by Keras' code. After the file is closed, the source's bytes are streamed
into those places (contiguous, uncompressed: a dataset's bytes are its array's in C
order), their CRC32C recorded as written, then the file is synced. :func:`verify` reads
each dataset back through h5py at that path, a few rows at a time, against the CRC32C; a
model of at most ``RELOAD_LIMIT`` bytes is also loaded back with plain
``model.load_weights`` (:func:`~._model.verify`), which for a big one would cost about
twice its largest tensor (Keras reads a dataset whole, then converts it to a tensor).

Keras 2 (``tf_keras``, TF 2.15's ``tf.keras``) and remote destinations are not
streamed (the values go through the model, as before).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..bundle.crc import crc32c
from ..bundle.dtypes import numpy_dtype
from ..engine.basics.tensor_bytes import Progress, raw_bytes
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError
from ._stream import Chunks, prefetched
from ._tf2_stream import Streamed, Unstreamable, streamed_variables, variable_of

__all__ = ["verify", "write"]

#: Bytes read back at a time while verifying.
_READ = 16 << 20


def _store_class() -> Any:
    import h5py
    from keras.src.saving import saving_lib

    class _StreamingStore(saving_lib.H5IOStore):
        """Keras' H5 store, leaving the datasets of loaded variables to be streamed."""

        def __init__(self, path: str, streamed: dict[int, str]) -> None:
            super().__init__(path, mode="w")
            self.streamed = streamed
            self.pending: list[tuple[str, str]] = []  # (dataset path, target), in order

        def __setitem__(self, key: str, value: Any) -> None:
            target = self.streamed.get(id(variable_of(value)))
            if target is None:
                super().__setitem__(key, value)
                return
            if not self._h5_entry_initialized:
                self._create_h5_group(self._h5_entry_path)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
            dtype = _dtype_name(value)
            group = self._h5_entry_group
            ds = group.create_dataset(
                key, shape=tuple(int(d) for d in value.shape), dtype=numpy_dtype(dtype), dcpl=dcpl
            )
            if dtype == "bfloat16":
                ds.attrs["dtype"] = "bfloat16"
            self.pending.append((ds.name, target))

    return _StreamingStore


def _dtype_name(value: Any) -> str:
    return variable_of(value).dtype.name


def _offsets(path: str, pending: list[tuple[str, str]]) -> list[tuple[int, int, str]]:
    """``(file offset, size, target)`` of each pending dataset's contiguous storage."""
    import h5py

    out = []
    with h5py.File(path, "r") as f:
        for name, target in pending:
            ds = f[name]
            size = ds.id.get_storage_size()
            offset = ds.id.get_offset()
            if size and offset is None:
                raise CheckpointCorruptError(f"{name} of {path} has no contiguous storage")
            out.append((offset or 0, size, target))
    return out


def write(
    view: NamedView,
    model: Any,
    path: str,
    targets: dict[str, Any],
    loaded: dict[str, str],
    progress: Progress | None,
) -> Streamed:
    """Writes ``path`` as Keras 3's ``save_weights`` lays it out; returns CRC32C by target."""
    from ..engine.targets.keras_names import keras_flavour

    if _storage.is_url(path):
        raise Unstreamable("the destination is remote")
    flavour = keras_flavour(model)
    if flavour != "keras3":
        raise Unstreamable(f"{flavour} is not streamed")
    try:
        from keras.src.saving import saving_lib
    except ImportError as e:
        raise Unstreamable(f"Keras' saving_lib is not there ({e})") from e
    if not hasattr(saving_lib, "_save_state") or not hasattr(
        saving_lib.H5IOStore, "_create_h5_group"
    ):  # another Keras 3 than the one this follows (3.x stores whose entries write)
        raise Unstreamable("this Keras' saving_lib has no _save_state / H5IOStore groups")
    if not getattr(model, "built", True):
        raise Unstreamable("the model is not built")
    streamed = streamed_variables(view, targets, loaded)
    store = _store_class()(path, streamed)
    try:
        saving_lib._save_state(  # Keras' own walk: the paths save_weights writes
            model, weights_store=store, assets_store=None, inner_path="", visited_saveables=set()
        )
    finally:
        store.close()
    missing = set(loaded) - {t for _, t in store.pending}
    if missing:
        os.remove(path)
        raise Unstreamable(f"Keras' walk does not store {sorted(missing)[0]} as a variable")
    return _fill(view, path, _offsets(path, store.pending), store.pending, loaded, progress)


def _fill(
    view: NamedView,
    path: str,
    places: list[tuple[int, int, str]],
    datasets: list[tuple[str, str]],
    loaded: dict[str, str],
    progress: Progress | None,
) -> Streamed:
    """Streams each target's source bytes into its place in the file; syncs it."""
    done = Streamed()
    done.datasets = list(datasets)
    names = [loaded[t] for _, _, t in places]
    total = sum(view.nbytes(n) for n in names)
    if progress:
        progress(0, total, "")
    written = 0
    fd = os.open(path, os.O_WRONLY)
    try:
        for (offset, size, target), (name, value) in zip(
            places, prefetched(view, names), strict=True
        ):
            pieces = value if isinstance(value, Chunks) else [raw_bytes(np.asarray(value))]
            crc, pos = 0, offset
            for piece in pieces:
                piece = memoryview(piece).cast("B")
                crc = crc32c(piece, crc)
                while piece:
                    n = os.pwrite(fd, piece, pos)
                    pos, piece = pos + n, piece[n:]
            if pos - offset != size:
                raise CheckpointCorruptError(
                    f"{target!r}: {pos - offset} bytes from {name!r}, its dataset holds {size}"
                )
            done.by_target[target] = crc
            del value, pieces  # before the next is read: two large tensors are never held
            written += view.nbytes(name)
            if progress:
                progress(written, total, name)
        os.fsync(fd)
    finally:
        os.close(fd)
    return done


def verify(streamed: Streamed, path: str) -> None:
    """Reads each streamed dataset back through h5py, at the path Keras loads it from, a
    chunk of rows at a time; its bytes must have the CRC32C recorded as written."""
    import h5py

    with h5py.File(path, "r") as f:
        for name, target in streamed.datasets:
            ds = f[name]
            crc = 0
            if ds.ndim == 0:
                crc = crc32c(raw_bytes(np.asarray(ds[()])))
            else:
                row = max(ds.dtype.itemsize * int(np.prod(ds.shape[1:], dtype=np.int64)), 1)
                step = max(_READ // row, 1)
                for begin in range(0, ds.shape[0], step):
                    crc = crc32c(raw_bytes(ds[begin : begin + step]), crc)
            if crc != streamed.by_target[target]:
                raise CheckpointCorruptError(
                    f"{target!r} of the file read back from the output differs from source "
                    f"(dataset {name})"
                )
