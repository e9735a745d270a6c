# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"keras"`` output streamed: Keras 3's ``.weights.h5`` layout, the values from the source.

``model.save_weights("x.weights.h5")`` in Keras 3 is ``saving_lib.save_weights_only``: an
``H5IOStore`` and Keras' own walk of the model (``_save_state``), where each layer's
``save_own_variables`` puts its variables at ``<path>/vars/<i>``. Here that same walk
runs with a store that differs in one thing: a variable loaded from the source gets an
empty dataset of its shape and dtype (bfloat16 tagged as Keras tags it), its storage
allocated at once and never filled, and its place in the file noted. Everything else
(groups, their ``name`` attributes, what a layer stores that is not a loaded variable)
is written by Keras' code (a scalar, which HDF5 gives no storage until written, gets its
value there through h5py). After the file is closed, the source's bytes are streamed into
those places (contiguous, uncompressed: a dataset's bytes are its array's in C order),
their CRC32C recorded as written; the file is synced while :func:`verify` finds each
dataset through h5py at its path (its storage must be the one reserved) and reads its
bytes back there, on two threads, against the CRC32C; a model of at most
``RELOAD_LIMIT`` bytes is also loaded back with plain ``model.load_weights``
(:func:`~._model.verify`), which for a big one would cost about twice its largest tensor
(Keras reads a dataset whole, then converts it to a tensor).

Keras 2 (``tf_keras``, TF 2.15's ``tf.keras``) writes ``.weights.h5`` with the same walk
(its ``saving_lib._save_state``), but a layer stores ``variable.numpy()``, a copy, so a
dataset cannot be told by the value it gets. There each loaded variable's ``numpy`` answers,
for the walk only, with a :class:`_Reserved` note of its target, shape and dtype, and the
store reserves that dataset as above; every other value is Keras' own. A walk that stores
a loaded variable any other way (a layer's own ``save_own_variables``) leaves it
unreserved: then nothing is kept and the values go through the model. Remote destinations
and a Keras 2 ``.h5`` without ``.weights`` (its legacy layout) are not streamed either.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..bundle.dtypes import numpy_dtype
from ..engine.basics.tensor_bytes import Progress
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError
from ._behind import for_output
from ._stream import Chunks, check_in_threads, prefetched, range_crc, value_crc, write_value
from ._tf2_stream import Streamed, Unstreamable, streamed_variables, variable_of

__all__ = ["verify", "write"]


def _store_class() -> Any:
    from keras.src.saving import saving_lib

    class _StreamingStore(saving_lib.H5IOStore):
        """Keras' H5 store, leaving the datasets of loaded variables to be streamed."""

        def __init__(self, path: str, streamed: dict[int, str], reserved: _Reservations) -> None:
            super().__init__(path, mode="w")
            self.streamed, self.reserved = streamed, reserved

        def __setitem__(self, key: str, value: Any) -> None:
            target = self.streamed.get(id(variable_of(value)))
            if target is None:
                super().__setitem__(key, value)
                return
            if not self._h5_entry_initialized:
                self._create_h5_group(self._h5_entry_path)
            var = variable_of(value)
            self.reserved.reserve(self._h5_entry_group, key, var.shape, var.dtype.name, target)

    return _StreamingStore


def _reserve(group: Any, key: str, shape: Any, dtype: str) -> Any:
    """An empty dataset ``group[key]`` of ``shape`` and ``dtype`` (bfloat16 tagged as Keras
    3 tags it), its contiguous storage allocated now and never filled."""
    import h5py

    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
    ds = group.create_dataset(
        key, shape=tuple(int(d) for d in shape), dtype=numpy_dtype(dtype), dcpl=dcpl
    )
    if dtype == "bfloat16":
        ds.attrs["dtype"] = "bfloat16"
    return ds


class _Reserved:
    """What a loaded variable's ``numpy()`` returns during a Keras 2 walk: its target."""

    __slots__ = ("dtype", "shape", "target")

    def __init__(self, target: str, var: Any) -> None:
        self.target, self.shape, self.dtype = target, tuple(var.shape), var.dtype.name


class _Vars:
    """A Keras 2 layer's ``vars`` group: a :class:`_Reserved` value reserves its dataset,
    anything else is stored by h5py as Keras would."""

    def __init__(self, group: Any, reserved: _Reservations) -> None:
        self._group, self._reserved = group, reserved

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(value, _Reserved):
            self._reserved.reserve(self._group, key, value.shape, value.dtype, value.target)
        else:
            self._group[key] = value

    def __getitem__(self, key: str) -> Any:
        return self._group[key]

    def __contains__(self, key: object) -> bool:
        return key in self._group

    def __len__(self) -> int:
        return len(self._group)

    def __iter__(self) -> Any:
        return iter(self._group)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._group, name)


def _keras2_walk(
    model: Any, path: str, flavour: str, variables: dict[str, Any], reserved: _Reservations
) -> None:
    """Keras 2's ``save_weights_only`` walk into ``path``, the ``variables``' (by target)
    datasets reserved."""
    import importlib

    package = "tf_keras" if flavour == "tf_keras" else "keras"
    try:
        saving_lib = importlib.import_module(f"{package}.src.saving.saving_lib")
    except ImportError as e:
        raise Unstreamable(f"{package}'s saving_lib is not there ({e})") from e
    if not hasattr(saving_lib, "_save_state") or not hasattr(saving_lib.H5IOStore, "make"):
        raise Unstreamable(f"this {package}'s saving_lib has no _save_state / H5IOStore.make")

    class _Keras2Store(saving_lib.H5IOStore):
        def make(self, inner_path: str) -> _Vars:
            return _Vars(super().make(inner_path), reserved)

    store = _Keras2Store(path, mode="w")
    patched = []
    try:
        for target, var in variables.items():
            note = _Reserved(target, var)
            var.numpy = lambda note=note: note  # for this walk only
            patched.append(var)
        saving_lib._save_state(
            model, weights_store=store, assets_store=None, inner_path="", visited_trackables=set()
        )
    except (TypeError, ValueError, AttributeError) as e:  # a layer used the note as a value
        raise Unstreamable(f"a layer's save_own_variables does not store numpy() ({e})") from e
    finally:
        for var in patched:
            del var.numpy
        store.close()


def _storage_of(ds: Any, name: str, path: str) -> tuple[int, int, str, tuple[int, ...], Any]:
    """What h5py says of the open dataset ``ds``'s storage (a low-level ``DatasetID``):
    ``(file offset, size, dtype, shape, Keras' dtype tag)``; raises unless it is one
    contiguous, unfiltered block (what :func:`_reserve` makes), whose bytes are then
    exactly the array's in C order. Through h5py's low-level calls: ``f[name]`` and the
    high-level properties cost twice as much (0.023 against 0.012 s for ResNet-50's 320
    datasets)."""
    import h5py

    dcpl = ds.get_create_plist()
    size, offset = ds.get_storage_size(), ds.get_offset()
    if dcpl.get_layout() != h5py.h5d.CONTIGUOUS or dcpl.get_nfilters() or (size and offset is None):
        raise CheckpointCorruptError(f"{name} of {path} is not one contiguous block")
    tag = h5py.Dataset(ds).attrs.get("dtype") if ds.dtype.itemsize == 2 else None  # bfloat16
    return offset or 0, size, ds.dtype.str, tuple(ds.shape), tag


def write(
    view: NamedView,
    model: Any,
    path: str,
    targets: dict[str, Any],
    loaded: dict[str, str],
    progress: Progress | None,
) -> Streamed:
    """Writes ``path`` as Keras' ``save_weights`` lays it out, then each loaded variable's
    dataset from the source; returns what was written, with CRC32C by target."""
    from ..engine.targets.keras_names import keras_flavour

    if _storage.is_url(path):
        raise Unstreamable("the destination is remote")
    flavour = keras_flavour(model)
    if not getattr(model, "built", True):
        raise Unstreamable("the model is not built")
    streamed = streamed_variables(view, targets, loaded)
    if flavour != "keras3" and not str(path).endswith(".weights.h5"):
        raise Unstreamable(f"{flavour} writes its legacy .h5 layout to a name without .weights")
    reserved = _Reservations(view, path, loaded)
    try:
        if flavour == "keras3":
            _keras3_walk(model, path, streamed, reserved)
        else:
            variables = {t: targets[t].parts[0].variable for t in loaded}
            _keras2_walk(model, path, flavour, variables, reserved)
        missing = set(loaded) - {t for _, t in reserved.done.datasets}
        if missing:
            raise Unstreamable(f"Keras' walk does not store {sorted(missing)[0]} as a variable")
    except BaseException:
        if os.path.exists(path):
            os.remove(path)
        raise
    return _fill(reserved, progress)


def _keras3_walk(model: Any, path: str, streamed: dict[int, str], reserved: _Reservations) -> None:
    """Keras 3's ``save_weights_only`` walk into ``path``, the ``streamed`` variables'
    datasets reserved."""
    try:
        from keras.src.saving import saving_lib
    except ImportError as e:
        raise Unstreamable(f"Keras' saving_lib is not there ({e})") from e
    if not hasattr(saving_lib, "_save_state") or not hasattr(
        saving_lib.H5IOStore, "_create_h5_group"
    ):  # another Keras 3 than the one this follows (3.x stores whose entries write)
        raise Unstreamable("this Keras' saving_lib has no _save_state / H5IOStore groups")
    store = _store_class()(path, streamed, reserved)
    try:
        with skipsets_cached():
            saving_lib._save_state(  # Keras' own walk: the paths save_weights writes
                model,
                weights_store=store,
                assets_store=None,
                inner_path="",
                visited_saveables=set(),
            )
    finally:
        store.close()


_SKIPSETS_LOCK = threading.Lock()
_skipsets: dict[str, Any] = {"depth": 0, "original": None}


@contextlib.contextmanager
def skipsets_cached() -> Iterator[None]:
    """Keras 3's walk, with each type's attribute skip set computed once.

    For every object it visits, ``_walk_saveable`` asks ``get_attr_skipset(type)``, which
    builds a throwaway ``Layer`` (or ``Operation``, ``Optimizer``...) to list the attributes
    to skip. Keras means to keep that set in its global state, but stores it under
    ``saving_attr_skipset_<type>`` and looks for ``saving_attr_skiplist_<type>`` (3.x up
    to at least 3.15), so a ResNet-50 builds 178 layers per save or load: half of the walk.
    Within this block the function is memoised per type. The sets are the same (Keras
    computes them from the type alone), so what the walk visits and writes does not change;
    Keras' function is put back when the last block (of any thread) leaves, so nothing
    outlives the calls.
    """
    try:
        from keras.src.saving import saving_lib
    except ImportError:
        yield
        return
    if getattr(saving_lib, "get_attr_skipset", None) is None:
        yield
        return
    with _SKIPSETS_LOCK:
        if _skipsets["depth"] == 0:
            _skipsets["original"] = saving_lib.get_attr_skipset
            saving_lib.get_attr_skipset = functools.lru_cache(maxsize=None)(_skipsets["original"])
        _skipsets["depth"] += 1
    try:
        yield
    finally:
        with _SKIPSETS_LOCK:
            _skipsets["depth"] -= 1
            if _skipsets["depth"] == 0:
                saving_lib.get_attr_skipset = _skipsets["original"]
                _skipsets["original"] = None


class _Reservations:
    """The datasets Keras' walk reserved for the loaded variables, as :meth:`reserve` made
    them: ``(dataset path, target)`` in the walk's order, each one's storage as h5py gave
    it then (offset, size, dtype, shape, bfloat16 tag), the CRC32C of those the walk
    wrote itself. A dataset's place in the file is final from its reservation (contiguous,
    allocated at once; HDF5 never writes it: no fill value), so :func:`_fill` writes there
    once the file is closed, and :func:`verify` finds each dataset at that place again
    before anything is installed.

    Filling on a thread while the walk goes on was tried (BERT and ResNet-50 on 2 cores): the
    walk took 2-3 times as long beside it and the whole ran no faster (BERT 0.31-0.47 against
    0.38-0.41 s, ResNet-50 0.23-0.27 against 0.23-0.24 s), so the fill waits for the walk.
    """

    def __init__(self, view: NamedView, path: str, loaded: dict[str, str]) -> None:
        self.view, self.path, self.loaded = view, path, loaded
        self.done = Streamed()

    def reserve(self, group: Any, key: str, shape: Any, dtype: str, target: str) -> None:
        """The walk's call for a loaded variable: ``group[key]`` is made (:func:`_reserve`)
        and its storage recorded. A dataset that HDF5 gives no storage until it is written
        (a scalar) gets its value here, through h5py: a few bytes, read from the source."""
        import h5py

        ds = _reserve(group, key, shape, dtype)
        name = self.loaded[target]
        if self.view.nbytes(name) and ds.id.get_offset() is None:
            value = np.ascontiguousarray(self.view.read_one(name))
            ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, value.view(ds.dtype))
            self.done.by_target[target] = value_crc(value)
        self.done.datasets.append((ds.name, target))
        self.done.layouts[ds.name] = _storage_of(ds.id, ds.name, self.path)


def _fill(reserved: _Reservations, progress: Progress | None) -> Streamed:
    """Streams each reserved dataset's source bytes into its storage in the closed file
    (not synced yet), their CRC32C recorded as written; returns what was written. An
    output too large for the page cache is read back as it is written (:mod:`._behind`)."""
    view, done = reserved.view, reserved.done
    todo = [(n, t) for n, t in done.datasets if t not in done.by_target]
    names = [reserved.loaded[t] for _, t in todo]
    total = sum(view.nbytes(reserved.loaded[t]) for _, t in done.datasets)
    if progress:
        progress(0, total, "")
    written = total - sum(view.nbytes(n) for n in names)  # the walk wrote the scalars
    behind = done.behind = for_output(reserved.path, total)
    fd = os.open(reserved.path, os.O_WRONLY)
    writeback = _storage.Writeback(fd)
    try:
        for (dataset, target), (name, value) in zip(todo, prefetched(view, names), strict=True):
            offset, size = done.layouts[dataset][:2]
            pos = offset

            def put(piece: memoryview, start: int = offset) -> None:
                nonlocal pos
                pos = _storage.pwrite_all(fd, piece, pos, writeback)
                if behind is not None:
                    behind.piece(start, pos)

            crc = write_value(value if isinstance(value, Chunks) else np.asarray(value), put)
            if pos - offset != size:
                raise CheckpointCorruptError(
                    f"{target!r}: {pos - offset} bytes from {name!r}, its dataset holds {size}"
                )
            done.by_target[target] = crc
            del value  # before the next is read: two large tensors are never held at once
            if behind is not None:
                behind.wrote(dataset, offset, pos, crc)
            written += view.nbytes(name)
            if progress:
                progress(written, total, name)
        if behind is not None:
            behind.finish()
    finally:
        os.close(fd)
    return done


def verify(streamed: Streamed, path: str) -> None:
    """Reads the file back once; raises ``CheckpointCorruptError`` unless each streamed
    dataset holds the bytes written.

    h5py opens the closed file and finds each dataset at the path Keras loads it from; its
    storage must be the one reserved (one contiguous, unfiltered block at the same offset,
    of the same size, dtype, shape and bfloat16 tag: what h5py then reads for Keras is
    exactly those bytes). The bytes are read at those offsets, in chunks, on two threads
    (each with one reused buffer), and must have the CRC32C recorded as written. Through
    h5py a chunk of rows at a time, on one thread (h5py holds a global lock), the same
    check took 0.09 s for BERT's 438 MB and 0.06 s for ResNet-50's 102 MB; this way
    0.04-0.05 s and 0.03 s (warm, beside the ``fsync``).
    """
    import h5py

    with h5py.File(path, "r") as f:
        for name, target in streamed.datasets:
            try:
                now: Any = _storage_of(h5py.h5d.open(f.id, name.encode()), name, path)
            except KeyError:  # h5py: no such object
                now = "missing"
            except CheckpointCorruptError:
                now = "not one contiguous block"
            if now != streamed.layouts[name]:
                raise CheckpointCorruptError(
                    f"{target!r} of the file read back from the output: dataset {name} is "
                    f"not stored as it was reserved ((offset, size, dtype, shape, dtype tag) "
                    f"{streamed.layouts[name]}, now {now})"
                )
    target_of = dict(streamed.datasets)
    pread = hasattr(os, "preadv")  # not on Windows: one thread, the file's own position

    with open(path, "rb", buffering=0) as f:

        def check(name: str, buf: bytearray) -> None:
            offset, size = streamed.layouts[name][:2]
            target = target_of[name]
            if streamed.behind is not None and name in streamed.behind.checked:
                # read back as it was written; its storage is the reserved one (above)
                crc = streamed.by_target[target]
                streamed.behind.expect(name, offset, offset + size, crc, repr(target))
                return
            crc, n = range_crc(f, offset, offset + size, buf, pread)
            if n != size or crc != streamed.by_target[target]:
                raise CheckpointCorruptError(
                    f"{target!r} of the file read back from the output differs from source "
                    f"(dataset {name})"
                )

        check_in_threads(target_of, check, threads=2 if pread else 1)
