# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""The ``"keras"`` output streamed: Keras 3's ``.weights.h5`` layout, the values from the source.

``model.save_weights("x.weights.h5")`` in Keras 3 is ``saving_lib.save_weights_only``: an
``H5IOStore`` and Keras' own walk of the model (``_save_state``), where each layer's
``save_own_variables`` puts its variables at ``<path>/vars/<i>``. Here that same walk
runs with a store that differs in one thing: a variable loaded from the source gets an
empty dataset of its shape and dtype (bfloat16 tagged as Keras tags it), its storage
allocated at once and never filled, and its place in the file noted. Everything else
(groups, their ``name`` attributes, what a layer stores that is not a loaded variable)
is written by Keras' code. While the walk goes on, a thread streams the source's bytes
into the places reserved so far (contiguous, uncompressed: a dataset's bytes are its
array's in C order), their CRC32C recorded as written (:class:`_Filler`; a scalar, which
HDF5 gives no storage until written, gets its value from the walk through h5py). Once
both are done, the file is synced while :func:`verify` finds each dataset through h5py
at its path (its storage must be the one reserved) and reads its bytes back there, on
two threads, against the CRC32C; a model of at most
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
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..bundle.dtypes import numpy_dtype
from ..engine.basics.tensor_bytes import Progress
from ..engine.reading.view import NamedView
from ..errors import CheckpointCorruptError
from ._stream import Chunks, check_in_threads, prefetched, range_crc, value_crc, write_value
from ._tf2_stream import Streamed, Unstreamable, streamed_variables, variable_of

__all__ = ["verify", "write"]


def _store_class() -> Any:
    from keras.src.saving import saving_lib

    class _StreamingStore(saving_lib.H5IOStore):
        """Keras' H5 store, leaving the datasets of loaded variables to be streamed."""

        def __init__(self, path: str, streamed: dict[int, str]) -> None:
            super().__init__(path, mode="w")
            self.streamed = streamed
            self.filler: _Filler | None = None  # set once the file exists

        def __setitem__(self, key: str, value: Any) -> None:
            target = self.streamed.get(id(variable_of(value)))
            if target is None:
                super().__setitem__(key, value)
                return
            if not self._h5_entry_initialized:
                self._create_h5_group(self._h5_entry_path)
            var = variable_of(value)
            assert self.filler is not None
            self.filler.reserve(self._h5_entry_group, key, var.shape, var.dtype.name, target)

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

    def __init__(self, group: Any, filler: _Filler) -> None:
        self._group, self._filler = group, filler

    def __setitem__(self, key: str, value: Any) -> None:
        if isinstance(value, _Reserved):
            self._filler.reserve(self._group, key, value.shape, value.dtype, value.target)
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
    model: Any, path: str, flavour: str, variables: dict[str, Any], filler: Callable[[], _Filler]
) -> None:
    """Keras 2's ``save_weights_only`` walk into ``path``, the ``variables`` (by target)
    reserved by the filler that ``filler()`` starts once the file exists."""
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
            return _Vars(super().make(inner_path), self.filler)

    store = _Keras2Store(path, mode="w")
    store.filler = filler()
    patched = []
    try:
        for target, var in variables.items():
            reserved = _Reserved(target, var)
            var.numpy = lambda reserved=reserved: reserved  # for this walk only
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
    """Writes ``path`` as Keras' ``save_weights`` lays it out, each loaded variable's
    dataset filled from the source while the walk goes on (:class:`_Filler`); returns what
    was written, with CRC32C by target."""
    from ..engine.targets.keras_names import keras_flavour

    if _storage.is_url(path):
        raise Unstreamable("the destination is remote")
    flavour = keras_flavour(model)
    if not getattr(model, "built", True):
        raise Unstreamable("the model is not built")
    streamed = streamed_variables(view, targets, loaded)
    if flavour != "keras3" and not str(path).endswith(".weights.h5"):
        raise Unstreamable(f"{flavour} writes its legacy .h5 layout to a name without .weights")
    fillers: list[_Filler] = []

    def filler() -> _Filler:  # started once the walk has created the file
        fillers.append(_Filler(view, path, loaded, progress))
        return fillers[0]

    try:
        if flavour == "keras3":
            _keras3_walk(model, path, streamed, filler)
        else:
            variables = {t: targets[t].parts[0].variable for t in loaded}
            _keras2_walk(model, path, flavour, variables, filler)
        done = fillers[0].finish()
        missing = set(loaded) - set(done.by_target)
        if missing:
            raise Unstreamable(f"Keras' walk does not store {sorted(missing)[0]} as a variable")
    except BaseException:
        if fillers:
            fillers[0].abort()
        if os.path.exists(path):
            os.remove(path)
        raise
    return done


def _keras3_walk(
    model: Any, path: str, streamed: dict[int, str], filler: Callable[[], _Filler]
) -> None:
    """Keras 3's ``save_weights_only`` walk into ``path``, the ``streamed`` variables
    reserved by the filler that ``filler()`` starts once the file exists."""
    try:
        from keras.src.saving import saving_lib
    except ImportError as e:
        raise Unstreamable(f"Keras' saving_lib is not there ({e})") from e
    if not hasattr(saving_lib, "_save_state") or not hasattr(
        saving_lib.H5IOStore, "_create_h5_group"
    ):  # another Keras 3 than the one this follows (3.x stores whose entries write)
        raise Unstreamable("this Keras' saving_lib has no _save_state / H5IOStore groups")
    store = _store_class()(path, streamed)
    try:
        store.filler = filler()
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


class _Filler:
    """Streams each loaded variable's source bytes into its dataset while Keras' walk is
    still reserving the next ones.

    The walk is Python (BERT 0.07 s, ResNet-50 0.08-0.14 s) and the filling is the disk's,
    so on a thread of its own the filling overlaps it. A dataset's place in the file is
    final from its reservation (contiguous, allocated at once; HDF5 never writes it: no
    fill value), so the bytes go there through a file descriptor of this thread's own
    while h5py writes the file's structure elsewhere; :func:`verify` then finds every
    dataset at the place recorded here before anything is installed. The source is read
    in the walk's order, ahead of the writes (:func:`~._stream.prefetched`). The walk
    calls :meth:`reserve`; then :meth:`finish`, or :meth:`abort` when it failed.
    """

    def __init__(
        self, view: NamedView, path: str, loaded: dict[str, str], progress: Progress | None
    ) -> None:
        self.view, self.path, self.loaded, self.progress = view, path, loaded, progress
        self.done = Streamed()
        # (target, offset, size) in the walk's order; offset None: written by the walk
        self._places: list[tuple[str, int | None, int]] = []
        self._cond = threading.Condition()
        self._closed = False
        self._failed: list[BaseException] = []
        self._fd = os.open(path, os.O_WRONLY)
        self._thread = threading.Thread(
            target=self._run, name="tf1compat-migrate-fill", daemon=True
        )
        self._thread.start()

    def reserve(self, group: Any, key: str, shape: Any, dtype: str, target: str) -> None:
        """The walk's call for a loaded variable: ``group[key]`` is made (:func:`_reserve`)
        and its storage recorded, for the thread to write its bytes there. A dataset that
        HDF5 gives no storage until it is written (a scalar) gets its value here instead,
        through h5py: a few bytes, read from the source in this thread."""
        import h5py

        ds = _reserve(group, key, shape, dtype)
        name = self.loaded[target]
        offset: int | None = None
        if self.view.nbytes(name) and ds.id.get_offset() is None:
            value = np.ascontiguousarray(self.view.read_one(name))
            ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, value.view(ds.dtype))
            self.done.by_target[target] = value_crc(value)
        layout = _storage_of(ds.id, ds.name, self.path)
        if target not in self.done.by_target:
            offset = layout[0]
        self.done.datasets.append((ds.name, target))
        self.done.layouts[ds.name] = layout
        with self._cond:
            self._places.append((target, offset, layout[1]))
            self._cond.notify_all()

    def finish(self) -> Streamed:
        """After the walk: waits for the last bytes; raises the thread's error, if any."""
        self._close()
        if self._failed:
            raise self._failed[0]
        return self.done

    def abort(self) -> None:
        """After a failed walk: stops the thread and waits for it."""
        with self._cond:
            self._failed.append(Unstreamable("the walk stopped"))
        self._close()

    def _close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _following(self) -> Iterator[tuple[str, int | None, int]]:
        """The places as the walk reserves them, until it is done (or the filling failed)."""
        i = 0
        while True:
            with self._cond:
                while i == len(self._places) and not self._closed and not self._failed:
                    self._cond.wait()
                if i == len(self._places) or self._failed:
                    return
                place = self._places[i]
            i += 1
            yield place

    def _run(self) -> None:
        to_read = (self.loaded[t] for t, offset, _ in self._following() if offset is not None)
        values = prefetched(self.view, to_read)
        total = sum(self.view.nbytes(n) for n in self.loaded.values())
        written = 0
        try:
            if self.progress:
                self.progress(0, total, "")
            writeback = _storage.Writeback(self._fd)
            for target, offset, size in self._following():
                name = self.loaded[target]
                if offset is not None:
                    self.done.by_target[target] = self._put(
                        next(values), offset, size, target, writeback
                    )
                written += self.view.nbytes(name)
                if self.progress:
                    self.progress(written, total, name)
        except BaseException as e:  # noqa: BLE001 - raised by finish() in the walk's thread
            with self._cond:
                self._failed.append(e)
                self._cond.notify_all()
        finally:
            values.close()
            os.close(self._fd)

    def _put(
        self, item: tuple[str, Any], offset: int, size: int, target: str, writeback: Any
    ) -> int:
        """Writes one value at ``offset``; returns its CRC32C as written."""
        name, value = item
        pos = offset

        def put(piece: memoryview) -> None:
            nonlocal pos
            pos = _storage.pwrite_all(self._fd, piece, pos, writeback)

        crc = write_value(value if isinstance(value, Chunks) else np.asarray(value), put)
        if pos - offset != size:
            raise CheckpointCorruptError(
                f"{target!r}: {pos - offset} bytes from {name!r}, its dataset holds {size}"
            )
        return crc


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
            crc, n = range_crc(f, offset, offset + size, buf, pread)
            target = target_of[name]
            if n != size or crc != streamed.by_target[target]:
                raise CheckpointCorruptError(
                    f"{target!r} of the file read back from the output differs from source "
                    f"(dataset {name})"
                )

        check_in_threads(target_of, check, threads=2 if pread else 1)
