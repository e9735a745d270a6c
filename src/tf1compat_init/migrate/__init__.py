"""Migrating checkpoints: rename keys, change format, stream, verify, then install atomically.

:func:`migrate` writes a renamed copy of a checkpoint (TF1 name-based or TF2
object-based) as

- ``"tf1"``: a name-based checkpoint (``tf.compat.v1.train.Saver`` format), written
  natively, no TensorFlow;
- ``"safetensors"``: a ``.safetensors`` file for PyTorch / JAX users, no TensorFlow;
- ``"tf2"``: an object-based checkpoint of a model (``tf.train.Checkpoint(model=m)``);
- ``"keras"``: a Keras ``.weights.h5`` file of a model.

Names are renamed forward, from the source key to the new name, with the grammar of
the Python API (``{checkpoint_key_or_scope: new_name_or_scope}``, regex keys, a
callable); a key that no rule matches keeps its name, and ``exclude`` patterns drop
keys. Object-based sources are named by their readable object paths.

Tensors stream: ``"tf1"`` and ``"safetensors"`` hold one tensor (two while verifying)
in memory at a time. The output is written into a hidden temporary directory next to
the destination, read back and compared bit for bit with the source, and only then
renamed into place. An exclusive lock file makes a second concurrent migrate to the same
destination fail cleanly. The source is only ever read.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import logging
import os
import re
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..bundle import storage as _storage
from ..errors import (
    AssignmentMapError,
    CheckpointCorruptError,
    CheckpointMismatchError,
    Tf1CompatError,
)
from ..mapping import AssignmentMap, Rule
from ..policy import EAGER_KEYWORDS, OPTIMIZER_STATE, UNSET, RestorePolicy, resolve_policy
from ..reader import (
    INTERNAL_KEYS,
    CheckpointInfo,
    VariableInfo,
    checkpoint_from_reader,
    is_directory,
    open_checkpoint,
)
from ..view import NamedView, object_paths
from ..view import renamed as renamed_view

__all__ = [
    "FORMATS",
    "OPTIMIZER_PATTERNS",
    "MigrateResult",
    "RenamedCheckpoint",
    "load_factory",
    "load_map_file",
    "migrate",
    "rename_checkpoint",
]

logger = logging.getLogger(__name__)

FORMATS = ("tf1", "tf2", "keras", "safetensors")

#: Name-based optimizer state dropped by ``drop_optimizer`` (``re.search``). Object-based
#: checkpoints are judged by their object graph instead (see :func:`rename_checkpoint`).
#: The policy's :data:`~tf1compat_init.policy.OPTIMIZER_STATE`, plus Keras's object-path
#: slot marker.
OPTIMIZER_PATTERNS: tuple[str, ...] = (*OPTIMIZER_STATE, r"/\.OPTIMIZER_SLOT/")

Progress = Callable[[int, int, str], None]


# -- the renamed view of a source checkpoint -------------------------------------------------

#: A source checkpoint seen under its new names (a :class:`~tf1compat_init.view.NamedView`;
#: ``sources`` and ``keys``: new name -> the source's raw key; ``source_names``: new name ->
#: the source's name; ``excluded``, ``routes``, ``renamed``, ``nbytes``, ``read``).
RenamedCheckpoint = renamed_view


def _source_names(info: CheckpointInfo) -> dict[str, str]:
    if info.format == "object-based":
        return dict(object_paths(info).keys)
    return {k: k for k in info.variables if k not in INTERNAL_KEYS}


def _optimizer_only_keys(info: CheckpointInfo) -> set[str]:
    """Keys of objects reachable only through an ``optimizer`` child or as slots."""
    graph = info.bundle.object_graph() if info.bundle is not None else None
    if graph is None or not graph.nodes:
        return set()
    reachable = {0}
    queue = [0]
    while queue:  # everything reachable without entering an optimizer
        node = graph.nodes[queue.pop()]
        for child in node.children:
            if child.local_name == "optimizer" or child.node_id in reachable:
                continue
            if 0 <= child.node_id < len(graph.nodes):
                reachable.add(child.node_id)
                queue.append(child.node_id)
    out = set()
    for node_id, node in enumerate(graph.nodes):
        if node_id not in reachable:
            out.update(a.checkpoint_key for a in node.attributes)
    return out


def rename_checkpoint(
    checkpoint: Any,
    assignment_map: Any = None,
    *,
    exclude: Any = (),
    drop_optimizer: bool = False,
    target_shapes: dict[str, Any] | None = None,
) -> NamedView:
    """Opens ``checkpoint`` and renames its keys forward, checking the rules.

    Args:
        checkpoint: a path (directory, prefix, ``.index`` / ``.data-*``) or an opened
            :class:`~tf1compat_init.CheckpointInfo`.
        assignment_map: ``{checkpoint_key_or_scope: new_name_or_scope}`` (a dict, a list
            of pairs, regex keys with templates, a callable ``key -> name or None``, or an
            :class:`~tf1compat_init.AssignmentMap`); ``None`` keeps every name. Every rule
            that matches a key renames it (two rules give two copies); keys that no rule
            matches keep their names.
        exclude: regexes (``re.search``); a key is left out when its source name or its
            new name matches one.
        drop_optimizer: leave out optimizer state: slots and beta powers of name-based
            checkpoints (:data:`OPTIMIZER_PATTERNS`), and of object-based ones every
            object reachable only through an ``optimizer`` attribute.
        target_shapes: new name -> shape, where known (a model's); ``reshape()``
            without a shape takes it from here, and needs it.

    Rules with tensor transforms (:mod:`tf1compat_init.transforms`) make new names
    whose value is computed from their source keys when read; the keys they read are
    not copied under their own names. A ``Recipe`` as the map also drops the keys its
    ``drop`` patterns match (listed in ``excluded``) and checks its ``requires``.

    Returns:
        The :class:`RenamedCheckpoint`.

    Raises:
        CheckpointNotFoundError: no checkpoint there.
        AssignmentMapError: a rule is malformed or matches nothing, or two keys would get
            the same new name.

    Example:
        >>> view = rename_checkpoint("tf1/", {"sub_model_1/": "encoder/"})  # doctest: +SKIP
        >>> view.renamed  # doctest: +SKIP
        {'sub_model_1/dense/kernel': 'encoder/dense/kernel'}
    """
    from . import _routes

    info = checkpoint if isinstance(checkpoint, CheckpointInfo) else open_checkpoint(checkpoint)
    amap = AssignmentMap(assignment_map, exclude=exclude)
    name_to_key = _source_names(info)
    names = sorted(name_to_key)
    amap.check_requires(names)
    explicit = assignment_map is not None  # None means identity: nothing to check
    targets: dict[str, list[str]] = {n: [] for n in names}
    rule_of: dict[tuple[str, str], str] = {}
    routed: list[tuple[Rule, tuple[str, ...], tuple[str, ...]]] = []
    if explicit:
        for rule, srcs, news in amap.rename(names):
            if rule.to is not None:
                routed.append((rule, srcs, news))
                continue
            src, new = srcs[0], news[0]
            if new not in targets[src]:
                targets[src].append(new)
                rule_of[(src, new)] = rule.text

    dropped: set[str] = set()
    if drop_optimizer:
        opt_res = [re.compile(p) for p in OPTIMIZER_PATTERNS]
        graph_keys = _optimizer_only_keys(info) if info.format == "object-based" else set()
        for n in names:
            key = name_to_key[n]
            if key in graph_keys or any(p.search(n) or p.search(key) for p in opt_res):
                dropped.add(n)

    variables: dict[str, VariableInfo] = {}
    sources: dict[str, str] = {}
    source_names: dict[str, str] = {}
    excluded: dict[str, str] = {}
    recipe_dropped = {n: why for n in names if (why := amap.dropped_by(n)) is not None}
    consumed = {k for _, keys, _ in routed for k in keys}
    for src in names:
        if src in dropped:
            excluded[src] = "optimizer state"
            continue
        if src in recipe_dropped:
            excluded[src] = recipe_dropped[src]
            continue
        for new in targets[src] or ([] if src in consumed else [src]):
            if amap.excluded(src) or amap.excluded(new):
                excluded[src] = "exclude pattern"
                continue
            prev = source_names.get(new)
            if prev is not None and prev != src:
                why = [rule_of.get((s, new), "no rule (kept its name)") for s in (prev, src)]
                raise AssignmentMapError(
                    f"two keys would both be named {new!r}: {prev!r} ({why[0]}) and {src!r} "
                    f"({why[1]}). Rename one of them, or leave one out with an exclude pattern "
                    f"such as {('^' + re.escape(src) + '$')!r}"
                )
            source_names[new] = src
            sources[new] = name_to_key[src]
    routes = _routes.route_names(
        routed, name_to_key, info, source_names, sources, excluded, target_shapes or {}, amap
    )
    for new in sorted(sources):
        variables[new] = routes[new][1] if new in routes else info.variables[sources[new]]
    if not variables:
        raise AssignmentMapError(
            f"nothing is left to migrate from {info.prefix}: all {len(names)} keys were excluded"
        )
    return renamed_view(
        base=info,
        variables=variables,
        sources={n: sources[n] for n in variables},
        source_names={n: source_names[n] for n in variables},
        excluded=excluded,
        routes={n: r for n, (r, _) in routes.items()},
    )


# -- map files and model factories ------------------------------------------------------------


def load_map_file(path: str | os.PathLike) -> list[tuple[str, str]]:
    """Reads a JSON map file: an object ``{"old/": "new/"}`` or a list of ``[old, new]`` pairs.

    Raises:
        AssignmentMapError: unreadable file, invalid JSON, or a value that is not a string.
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise AssignmentMapError(f"cannot read map file {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise AssignmentMapError(
            f"map file {path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    if isinstance(data, dict):
        pairs = list(data.items())
    elif isinstance(data, list) and all(isinstance(p, list) and len(p) == 2 for p in data):
        pairs = [tuple(p) for p in data]
    else:
        raise AssignmentMapError(
            f'map file {path} must hold a JSON object {{"old/": "new/"}} or a list of '
            f'["old", "new"] pairs'
        )
    for k, v in pairs:
        if not isinstance(k, str) or not isinstance(v, str):
            raise AssignmentMapError(
                f"map file {path}: rule {k!r}: {v!r} must map a string to a string"
            )
    try:  # the transform syntax ("x | reshape(2, 3)"), checked before anything is opened
        AssignmentMap(pairs)
    except AssignmentMapError as e:
        raise AssignmentMapError(f"map file {path}: {e}") from None
    return pairs


def load_factory(spec: str) -> Callable[[], Any]:
    """Imports ``module:function`` (or ``path/to/file.py:function``) and returns the function.

    The current directory is importable, as with ``python -m``.

    Raises:
        ValueError: ``spec`` is not of that form, or the attribute is not callable.
        ImportError: the module cannot be imported.
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"a model factory is given as module:function, got {spec!r}")
    if module_name.endswith(".py") or os.sep in module_name:
        if not os.path.isfile(module_name):
            raise ImportError(f"model factory file {module_name} does not exist")
        mod_id = "_tf1compat_factory_" + re.sub(r"\W", "_", os.path.abspath(module_name))
        spec_obj = importlib.util.spec_from_file_location(mod_id, module_name)
        assert spec_obj is not None and spec_obj.loader is not None
        module = importlib.util.module_from_spec(spec_obj)
        sys.modules[mod_id] = module
        spec_obj.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_name)
    fn = module
    for part in attr.split("."):
        try:
            fn = getattr(fn, part)
        except AttributeError:
            raise ValueError(f"module {module_name} has no attribute {attr!r}") from None
    if not callable(fn):
        raise ValueError(f"{spec} is not callable")
    return fn


# -- destinations, locks, temporary directories ---------------------------------------------


def _check_destination(
    dst: str, fmt: str, source: CheckpointInfo, force: bool, *, locked: bool = True
) -> list[str]:
    """Validates ``dst`` for ``fmt``; returns the existing files that ``force`` replaces.

    Before the lock is taken (``locked=False``), data shards without an index are not
    held against ``dst``: they may be an interrupted install that the lock holder removes.
    """
    if is_directory(dst):
        what = "a checkpoint prefix such as" if fmt in ("tf1", "tf2") else "a file path such as"
        example = {
            "tf1": "model.ckpt",
            "tf2": "ckpt-1",
            "keras": "model.weights.h5",
            "safetensors": "model.safetensors",
        }[fmt]
        raise IsADirectoryError(
            f"destination {dst} is a directory; give {what} {_storage.join(dst, example)}"
        )
    if fmt in ("tf1", "tf2"):
        file_suffix = re.search(r"(\.index|\.data-\d{5}-of-\d{5})$", dst)
        if file_suffix:
            raise ValueError(
                f"destination {dst} names a checkpoint file; give the prefix "
                f"{dst[: file_suffix.start()]}"
            )
        has_index = _storage.exists(dst + ".index")
        existing = ([dst + ".index"] if has_index else []) + sorted(
            p
            for p in _glob_data(dst)
            if _storage.exists(p) and (has_index or locked)  # a dangling name is not an output
        )
        same = _storage.realpath(dst) == _storage.realpath(source.prefix)
    else:
        if fmt == "keras" and not dst.endswith(".weights.h5"):
            raise ValueError(
                f"destination {dst} must end with .weights.h5 (Keras 3 saves weights only to "
                f"such a name)"
            )
        existing = [dst] if _storage.exists(dst) else []
        same = False
    src_files = {_storage.realpath(p) for p in [source.index_file, *source.data_files]}
    if same or any(_storage.realpath(p) in src_files for p in existing):
        raise ValueError(
            f"destination {dst} is the source checkpoint; migrate never modifies its source, "
            f"so choose another destination"
        )
    if existing and not force:
        raise FileExistsError(
            f"destination {existing[0]} already exists; pass --force (force=True) to replace it"
        )
    return existing


def _glob_data(prefix: str) -> list[str]:
    import glob

    pattern = ".data-[0-9][0-9][0-9][0-9][0-9]-of-[0-9]*"
    if _storage.is_url(prefix):
        parent, base = _storage.split(prefix)
        return _storage.glob(parent, glob.escape(base) + pattern)
    return glob.glob(glob.escape(prefix) + pattern)


class MigrationLockedError(Tf1CompatError, FileExistsError):
    """Another migrate is writing the same destination."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@contextlib.contextmanager
def _locked(dst: str) -> Iterator[bool]:
    """Holds ``.<name>.tf1compat-lock`` next to ``dst``, created exclusively.

    Yields whether the lock was taken over from a dead migrate, whose leftovers
    (:func:`_remove_leftovers`) may then be removed.
    """
    parent, base = _storage.split(dst)
    lock = _storage.join(parent, f".{base}.tf1compat-lock")
    me = f"{socket.gethostname()} {os.getpid()}\n"
    if _storage.is_url(lock):
        with _remote_lock(dst, lock, me) as took_over:
            yield took_over
        return
    took_over = False
    for attempt in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if attempt == 0 and _stale(lock):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(lock)
                took_over = True
                continue
            raise MigrationLockedError(
                f"another migrate is writing {dst} (lock file {lock}); wait for it, or remove "
                f"the lock file if no migrate is running"
            ) from None
        try:
            with os.fdopen(fd, "w") as f:
                f.write(me)
        except BaseException:
            os.remove(lock)  # an empty lock would refuse every later migrate
            raise
        break
    try:
        yield took_over
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(lock)


@contextlib.contextmanager
def _remote_lock(dst: str, lock: str, me: str) -> Iterator[bool]:
    """The lock of :func:`_locked` on a remote store: advisory, best effort.

    Object stores have no exclusive create, so the lock is written, then read back:
    a migrate that finds another's lock, or loses the write race it can see, stops.
    Two migrates starting within the same moment can still both proceed (each then
    installs a complete, verified output; the last rename wins).
    """
    took_over = False
    if _storage.exists(lock):
        if not _stale(lock):
            raise MigrationLockedError(
                f"another migrate is writing {dst} (lock file {lock}); wait for it, or remove "
                f"the lock file if no migrate is running"
            )
        with contextlib.suppress(FileNotFoundError):
            _storage.remove(lock)
        took_over = True
    token = f"{me.strip()} {os.urandom(8).hex()}\n"
    with _storage.RemoteWriter(lock) as f:
        f.write(token.encode("utf-8"))
    if _storage.read_text(lock) != token:
        raise MigrationLockedError(
            f"another migrate took the lock {lock} of {dst} at the same moment; wait for it"
        )
    try:
        yield took_over
    finally:
        with contextlib.suppress(OSError):
            if _storage.read_text(lock) == token:
                _storage.remove(lock)


def _remove_leftovers(dst: str, fmt: str, dead_owner: bool) -> None:
    """Removes what an interrupted migrate to ``dst`` left; call only under the lock.

    Temporary directories of this destination are always dead once we hold its lock.
    Data shards without an index are an install cut between its two renames, but only
    when the lock was taken over from a dead migrate; otherwise they are not ours.
    """
    import glob

    parent, base = _storage.split(dst)
    for tmp in _storage.glob(parent, f".{glob.escape(base)}.tf1compat-tmp-*"):
        logger.info("removing %s, left by an interrupted migrate", tmp)
        _storage.rmtree(tmp)
    if dead_owner and fmt in ("tf1", "tf2") and not _storage.exists(dst + ".index"):
        for path in _glob_data(dst):
            logger.info("removing %s, left by an interrupted install", path)
            _storage.remove(path)


def _stale(lock: str) -> bool:
    """True for a lock left by a dead process of this host."""
    try:
        host, pid = _storage.read_text(lock).split()[:2]
        if host != socket.gethostname():
            return False
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (OSError, ValueError):
        return False
    return False


# -- writers ----------------------------------------------------------------------------------


_SAFETENSORS_DTYPES = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint64": "U64",
    "uint32": "U32",
    "uint16": "U16",
    "uint8": "U8",
    "bool": "BOOL",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
}


def _raw_bytes(value: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(value).reshape(-1).view(np.uint8)


def _equal(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.hasobject or b.dtype.hasobject:
        return [bytes(x) for x in a.reshape(-1)] == [bytes(x) for x in b.reshape(-1)]
    if a.dtype.itemsize != b.dtype.itemsize:
        return False
    return memoryview(_raw_bytes(a)) == memoryview(_raw_bytes(b))  # memcmp, no temporaries


def _check_writable(view: NamedView, fmt: str) -> None:
    if fmt == "safetensors":
        bad = [
            (n, i.dtype) for n, i in view.variables.items() if i.dtype not in _SAFETENSORS_DTYPES
        ]
        if bad:
            name, dtype = bad[0]
            raise ValueError(
                f"safetensors cannot hold dtype {dtype} (key {name!r}"
                + (f" and {len(bad) - 1} more" if len(bad) > 1 else "")
                + f"); leave such keys out with --exclude {('^' + re.escape(name) + '$')!r}"
            )
    elif fmt == "tf1":
        from ..bundle.writer import dtype_enum

        for name, info in view.variables.items():
            try:
                dtype_enum(info.dtype)
            except Tf1CompatError as e:
                raise ValueError(f"key {name!r}: {e}") from None


#: The temporary output's index is named so that no loader or ``*.index`` glob takes an
#: unverified (or killed) output for a checkpoint; :func:`_install` renames it last.
_PENDING_INDEX = ".index-pending"


def _write_tf1(view: NamedView, prefix: str, progress: Progress | None) -> int:
    from ..bundle.writer import BundleWriter

    total = sum(view.nbytes(n) for n in view.variables)
    done = 0
    with BundleWriter(prefix, index_path=prefix + _PENDING_INDEX) as writer:
        for name, info in view.variables.items():
            writer.add(name, view.read_one(name), info.dtype)
            done += view.nbytes(name)
            if progress:
                progress(done, total, name)
        return writer.bytes_written


def _verify_tf1(view: NamedView, prefix: str) -> None:
    from ..bundle.reader import BundleReader

    out = checkpoint_from_reader(BundleReader(prefix, index_path=prefix + _PENDING_INDEX))
    if set(out.variables) != set(view.variables):
        raise CheckpointCorruptError(f"the written checkpoint {prefix} lists other keys")
    for name, info in view.variables.items():
        if out.variables[name] != info:
            raise CheckpointCorruptError(
                f"{name!r} was written as {out.variables[name]} instead of {info}"
            )
        if not _equal(out.read([name])[name], view.read_one(name)):
            raise CheckpointCorruptError(f"{name!r} reads back different from the source")


def _safetensors_header(view: NamedView) -> tuple[bytes, dict[str, tuple[int, int]]]:
    offsets = {}
    header: dict[str, Any] = {
        "__metadata__": {"format": "np", "source": os.path.basename(view.prefix)}
    }
    pos = 0
    for name, info in view.variables.items():
        size = view.nbytes(name)
        offsets[name] = (pos, pos + size)
        header[name] = {
            "dtype": _SAFETENSORS_DTYPES[info.dtype],
            "shape": list(info.shape),
            "data_offsets": [pos, pos + size],
        }
        pos += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # the data buffer starts 8-byte aligned
    return raw, offsets


def _write_safetensors(view: NamedView, path: str, progress: Progress | None) -> int:
    header, offsets = _safetensors_header(view)
    total = sum(e - b for b, e in offsets.values())
    done = 0
    with _storage.open_exclusive(path) as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        for name in view.variables:
            data = _raw_bytes(view.read_one(name))
            if data.size != offsets[name][1] - offsets[name][0]:
                raise CheckpointCorruptError(f"{name!r}: read {data.size} bytes, expected more")
            f.write(memoryview(data))
            done += int(data.size)
            if progress:
                progress(done, total, name)
        f.flush()
        _storage.sync(f)
    return total


def _verify_safetensors(view: NamedView, path: str) -> None:
    with _storage.RemoteFile(path) if _storage.is_url(path) else open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        base = 8 + n
        header.pop("__metadata__", None)
        if set(header) != set(view.variables):
            raise CheckpointCorruptError(f"the written file {path} lists other tensors")
        for name in view.variables:
            begin, end = header[name]["data_offsets"]
            f.seek(base + begin)
            stored = np.frombuffer(f.read(end - begin), dtype=np.uint8)
            if memoryview(stored) != memoryview(_raw_bytes(view.read_one(name))):
                raise CheckpointCorruptError(f"{name!r} reads back different from the source")


def _build_model(factory: Callable[[], Any]) -> Any:
    name = getattr(factory, "__qualname__", repr(factory))
    try:
        model = factory()
    except Exception as e:  # the user's code: say whose error it is, keep the cause
        raise ValueError(f"the model factory {name} raised {type(e).__name__}: {e}") from e
    if model is None:
        raise ValueError("the model factory returned None; it must return the model")
    return model


def _model_shapes(
    src: Any, assignment_map: Any, factory: Callable[[], Any] | None, exclude: Any
) -> tuple[Any, dict[str, Any] | None, Any]:
    """For a map with transforms and a model: ``(model, its shapes by name, opened src)``.

    ``reshape()`` takes the target's shape, so the model is built before the view; it is
    then the one the output is written from. Otherwise ``(None, None, src)``.
    """
    if factory is None:
        return None, None, src
    amap = AssignmentMap(assignment_map, exclude=exclude)
    if not any(r.to is not None for r in amap.rule_list):
        return None, None, src
    from ..checkpoint import target_variables

    info = src if isinstance(src, CheckpointInfo) else open_checkpoint(src)
    model = _build_model(factory)
    targets = target_variables(model, readable=info.format != "object-based")
    return model, {n: t.shape for n, t in targets.items()}, info


def _model_values(targets: dict[str, Any], names: Sequence[str]) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        t = targets[name]
        if len(t.parts) == 1 and not t.partitioned:
            out[name] = t.parts[0].variable.numpy()
            continue
        full = np.empty(t.shape, dtype=t.parts[0].variable.numpy().dtype)
        for p in t.parts:
            full[tuple(slice(o, o + s) for o, s in zip(p.offset, p.shape, strict=True))] = (
                p.variable.numpy()
            )
        out[name] = full
    return out


def _write_model(
    view: NamedView,
    factory: Callable[[], Any],
    fmt: str,
    out_path: str,
    policy: RestorePolicy,
    progress: Progress | None,
    built: Any = None,
) -> Any:
    from ..apply import apply_plan
    from ..checkpoint import plan_for_root

    model = _build_model(factory) if built is None else built
    if fmt == "keras" and not hasattr(model, "save_weights"):
        raise ValueError(
            f"--format keras needs a Keras model, but the factory returned "
            f"{type(model).__name__}; use --format tf2"
        )
    if fmt == "keras" and _storage.is_url(out_path):
        from ..keras._names import keras_flavour

        if keras_flavour(model) != "keras3":
            raise ValueError(
                f"--format keras to a URL needs Keras 3: {keras_flavour(model)} writes .h5 "
                f"files only to local paths. Migrate to a local file and copy it, or use "
                f"--format tf2"
            )
    try:
        plan, targets = plan_for_root(model, view, None, policy=policy)
    except CheckpointMismatchError as e:
        notes = [
            f"{m.checkpoint_key} is {view.source_names[m.checkpoint_key]} | "
            f"{view.routes[m.checkpoint_key].text}"
            for m in (e.report.mismatched if e.report is not None else [])
            if m.checkpoint_key in view.routes
        ]
        if not notes:
            raise
        raise CheckpointMismatchError(
            f"{e}\nThe transforms made those values:\n  " + "\n  ".join(notes), e.report
        ) from None
    if progress:
        total = sum(view.nbytes(view_name) for view_name in plan.report.loaded.values())
        progress(0, total, "")
    report = apply_plan(plan, targets)
    if progress:
        progress(total, total, "")
    import tensorflow as tf

    if fmt == "tf2":
        root = model if isinstance(model, tf.train.Checkpoint) else tf.train.Checkpoint(model=model)
        # Created now, so that Checkpoint(model=...).restore(out).assert_consumed() holds: a
        # restore creates the counter and asks for its value.
        _ = root.save_counter
        root.write(out_path)
    else:
        model.save_weights(out_path)
    return report


def _verify_model(
    view: NamedView,
    factory: Callable[[], Any],
    fmt: str,
    out_path: str,
    report: Any,
) -> None:
    import tensorflow as tf

    from ..checkpoint import target_variables

    fresh = _build_model(factory)
    if fmt == "tf2":
        open_checkpoint(out_path)  # every index block and tensor checksum
        root = fresh if isinstance(fresh, tf.train.Checkpoint) else tf.train.Checkpoint(model=fresh)
        root.restore(out_path).assert_consumed()
    else:
        fresh.load_weights(out_path)
    targets = target_variables(fresh, readable=view.format != "object-based")
    got = _model_values(targets, list(report.loaded))
    for target, name in report.loaded.items():
        if not _equal(got[target], view.read_one(name)):
            raise CheckpointCorruptError(
                f"{target!r} of the reloaded model differs from source {name!r}"
            )


# -- migrate ----------------------------------------------------------------------------------


@dataclass
class MigrateResult:
    """What :func:`migrate` wrote.

    Attributes:
        source: the source checkpoint prefix.
        destination: the output prefix (tf1, tf2) or file (keras, safetensors).
        format: the output format.
        files: the files written.
        tensors: new name -> source name, for every tensor written (or loaded into the
            model, for tf2 and keras).
        excluded: source name -> why it was left out.
        nbytes: bytes of tensor data written (tf1, safetensors) or loaded (tf2, keras).
        report: for tf2 and keras, the :class:`~tf1compat_init.RestoreReport` of loading
            the model.
        replaced: the existing files that ``force`` replaced.
        transforms: new name -> the transforms its value went through.
    """

    source: str
    destination: str
    format: str
    files: list[str]
    tensors: dict[str, str]
    excluded: dict[str, str]
    nbytes: int
    report: Any = None
    replaced: list[str] = field(default_factory=list)
    transforms: dict[str, str] = field(default_factory=dict)

    @property
    def renamed(self) -> dict[str, str]:
        """source name -> new name, for the names that changed."""
        return {s: n for n, s in self.tensors.items() if s != n}

    def summary(self) -> str:
        return (
            f"wrote {self.destination} ({self.format}): {len(self.tensors)} tensors, "
            f"{_human(self.nbytes)}, {len(self.renamed)} renamed, {len(self.excluded)} "
            f"excluded; read back and verified"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "destination": self.destination,
            "format": self.format,
            "files": list(self.files),
            "tensors": dict(self.tensors),
            "renamed": self.renamed,
            "excluded": dict(self.excluded),
            "bytes": self.nbytes,
            "replaced": list(self.replaced),
            "transforms": dict(self.transforms),
            "verified": True,
            "report": self.report.to_dict() if self.report is not None else None,
        }


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def _install(tmp_out: str, dst: str, fmt: str, existing: list[str]) -> list[str]:
    """Moves the verified output into place; the index last, so no loader sees half of it."""
    if fmt in ("tf1", "tf2"):
        for old in sorted(existing, key=lambda p: not p.endswith(".index")):
            _storage.remove(old)  # the old index first: a torn old+new checkpoint is never visible
        files = []
        data = sorted(_glob_data(tmp_out))
        for path in data:
            target = dst + path[len(tmp_out) :]
            _storage.replace(path, target)
            files.append(target)
        pending = tmp_out + (_PENDING_INDEX if fmt == "tf1" else ".index")
        _storage.replace(pending, dst + ".index")
        return [dst + ".index", *files]
    _storage.replace(tmp_out, dst)
    return [dst]


def migrate(
    src: Any,
    dst: str | os.PathLike,
    assignment_map: Any = None,
    *,
    exclude: Any = (),
    format: str = "tf1",  # noqa: A002 - the CLI's --format
    model: Callable[[], Any] | str | None = None,
    drop_optimizer: bool = False,
    force: bool = False,
    on_missing: str = UNSET,
    on_mismatch: str = UNSET,
    optional: Any = UNSET,
    policy: RestorePolicy | None = None,
    progress: Progress | None = None,
    recipe: Any = None,
) -> MigrateResult:
    """Writes a renamed, verified copy of a checkpoint in another format.

    Args:
        src: the source checkpoint (directory, prefix, ``.index`` / ``.data-*`` path).
        dst: a checkpoint prefix for ``"tf1"`` and ``"tf2"``, a ``.weights.h5`` path for
            ``"keras"``, a file path for ``"safetensors"``. Missing parent directories
            are created.
        assignment_map: forward renames ``{old_key_or_scope: new_name_or_scope}``; see
            :func:`rename_checkpoint`.
        exclude: regexes of source or new names to leave out.
        format: ``"tf1"``, ``"tf2"``, ``"keras"`` or ``"safetensors"``.
        model: for ``"tf2"`` and ``"keras"``, a function returning a built model (or
            ``"module:function"``); the renamed keys are loaded into it by name (see
            :mod:`tf1compat_init.checkpoint`) before it is saved. Called twice: once to
            write, once to verify the output.
        drop_optimizer: leave out optimizer slots and state.
        force: replace an existing output.
        on_missing, on_mismatch, optional: loading policies for ``"tf2"`` and ``"keras"``
            (defaults ``"error"``, ``"error"``, :data:`~tf1compat_init.DEFAULT_OPTIONAL`).
        policy: the loading policy as one :class:`~tf1compat_init.RestorePolicy`
            (``staging`` included); a keyword given as well replaces that field. Its
            ``exclude`` applies to loading; ``exclude=`` above to renaming.
        progress: called as ``progress(bytes_done, bytes_total, name)``.
        recipe: a registered recipe's name or a ``Recipe``, instead of
            ``assignment_map``. Its ``drop`` patterns leave keys out (in ``excluded``).

    Rules with tensor transforms are applied as each tensor is written, one at a time
    (its source tensors and its output in memory). ``reshape()`` without a shape takes
    the model's shape (tf2, keras); a tf1 or safetensors migrate needs it written.

    Returns:
        A :class:`MigrateResult`.

    Raises:
        CheckpointNotFoundError: no source checkpoint.
        AssignmentMapError: a bad rule, a rule that matches nothing, a name clash.
        FileExistsError: the output exists (without ``force``), or another migrate
            holds the destination's lock.
        ValueError: a bad destination, a dtype the format cannot hold.
        CheckpointMismatchError: (tf2, keras) the model and the checkpoint do not fit.
        CheckpointCorruptError: the output did not read back identical (nothing installed).

    Example:
        >>> migrate("tf1_ckpt/", "out/model.ckpt", {"model/": "sub_model_2/"})
        ...     # doctest: +SKIP
        >>> migrate("tf1_ckpt/", "out/model.safetensors", format="safetensors")
        ...     # doctest: +SKIP
    """
    given = {"on_missing": on_missing, "on_mismatch": on_mismatch, "optional": optional}
    policy = resolve_policy("migrate", policy, given, allowed=EAGER_KEYWORDS)
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
    dst = os.fspath(dst)
    if isinstance(model, str):
        model = load_factory(model)
    if format in ("tf2", "keras") and model is None:
        raise ValueError(
            f"--format {format} writes a model's checkpoint: give the model with --model "
            f"module:function (a function returning the built model)"
        )
    if format in ("tf1", "safetensors") and model is not None:
        raise ValueError(f"--model is only used with --format tf2 or keras, not {format}")
    from ..transforms import recipe_map

    assignment_map = recipe_map(assignment_map, recipe)
    built, shapes, src = _model_shapes(src, assignment_map, model, exclude)
    view = rename_checkpoint(
        src,
        assignment_map,
        exclude=exclude,
        drop_optimizer=drop_optimizer,
        target_shapes=shapes,
    )
    existing = _check_destination(dst, format, view.base, force, locked=False)
    _check_writable(view, format)
    parent, base = _storage.split(dst)
    _storage.makedirs(parent)
    with _locked(dst) as dead_owner:
        _remove_leftovers(dst, format, dead_owner)
        existing = _check_destination(dst, format, view.base, force)  # re-check, locked
        tmp_dir = _storage.mkdtemp(f".{base}.tf1compat-tmp-", parent)
        try:
            tmp_out = _storage.join(tmp_dir, base)
            report = None
            if format == "tf1":
                nbytes = _write_tf1(view, tmp_out, progress)
                _verify_tf1(view, tmp_out)
                tensors = dict(view.source_names)
            elif format == "safetensors":
                nbytes = _write_safetensors(view, tmp_out, progress)
                _verify_safetensors(view, tmp_out)
                tensors = dict(view.source_names)
            else:
                assert model is not None
                report = _write_model(view, model, format, tmp_out, policy, progress, built)
                _verify_model(view, model, format, tmp_out, report)
                tensors = {t: view.source_names[n] for t, n in report.loaded.items()}
                nbytes = sum(view.nbytes(n) for n in report.loaded.values())
            files = _install(tmp_out, dst, format, existing)
        finally:
            _storage.rmtree(tmp_dir)
    result = MigrateResult(
        source=view.prefix,
        destination=dst,
        format=format,
        files=files,
        tensors=tensors,
        excluded=dict(view.excluded),
        nbytes=nbytes,
        report=report,
        replaced=existing,
        transforms={n: r.text for n, r in view.routes.items() if n in tensors},
    )
    logger.info("%s", result.summary())
    return result
