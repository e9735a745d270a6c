# tf1compat_init: original code. SPDX-License-Identifier: Apache-2.0
"""migrate(): rename, check the destination, lock it, write, verify, install."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..bundle import storage as _storage
from ..engine.basics.tensor_bytes import Progress, human
from ..engine.planning.policy import UNSET, RestorePolicy
from ..engine.planning.preamble import prepare
from . import _behind, _destination, _lock, _model, _safetensors, _stream, _tf1
from ._loaders import load_factory
from ._rename import rename_checkpoint

__all__ = ["FORMATS", "MigrateResult", "migrate"]

logger = logging.getLogger("tf1compat_init.migrate")

FORMATS = ("tf1", "tf2", "keras", "safetensors")


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
        transforms: new name -> the transforms its value went through, naming the part
            of a split it took (``split(-1)[2] | reshape(32, 2, 16)``).
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
        """source name -> new name, for the tensors copied under another name.

        Tensors computed by transforms are in :attr:`transformed` instead: a split
        makes several from one source, a concat one from several, which a
        ``source -> new`` table cannot hold.
        """
        return {s: n for n, s in self.tensors.items() if s != n and n not in self.transforms}

    @property
    def transformed(self) -> dict[str, str]:
        """new name -> its source(s) (``"a + b"`` for a concat), for tensors computed by
        transforms; :attr:`transforms` says how (``split(-1)[1] | reshape(32, 2, 16)``)."""
        return {n: s for n, s in self.tensors.items() if n in self.transforms}

    def counts(self) -> dict[str, int]:
        """How the tensors written came about; the three add up to ``len(tensors)``."""
        transformed = sum(1 for n in self.tensors if n in self.transforms)
        renamed = sum(1 for n, s in self.tensors.items() if s != n and n not in self.transforms)
        return {
            "renamed": renamed,
            "transformed": transformed,
            "unchanged": len(self.tensors) - renamed - transformed,
        }

    def summary(self) -> str:
        c = self.counts()
        made = f"{c['renamed']} renamed"
        if c["transformed"]:
            made += f", {c['transformed']} transformed"
        made += f", {c['unchanged']} unchanged"
        return (
            f"wrote {self.destination} ({self.format}): {len(self.tensors)} tensors ({made}), "
            f"{human(self.nbytes)}, {len(self.excluded)} excluded; read back and verified"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "destination": self.destination,
            "format": self.format,
            "files": list(self.files),
            "tensors": dict(self.tensors),
            "renamed": self.renamed,
            "transformed": self.transformed,
            "counts": self.counts(),
            "excluded": dict(self.excluded),
            "bytes": self.nbytes,
            "replaced": list(self.replaced),
            "transforms": dict(self.transforms),
            "verified": True,
            "report": self.report.to_dict() if self.report is not None else None,
        }


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
            ``"module:function"``); the renamed keys are matched to its variables by name
            (see :mod:`tf1compat_init.checkpoint`). Called once. Its structure gives the
            output's layout (TensorFlow's object graph, Keras' ``.weights.h5`` paths) and
            the values stream from the source into the output, never into the model
            (Keras 2's ``.weights.h5`` and a few other cases load them into the model and
            save it instead, logged); see ``docs/cli.md``.
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
        DiskFullError: (an ``OSError``, ``ENOSPC``) the destination's file system has no
            room for the output: refused before writing where the free space is known
            short, else when a write fails; nothing installed, the temporary output removed.
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
    assignment_map, policy = prepare("migrate", assignment_map, recipe, policy, given)
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
    optional_of_recipe = getattr(assignment_map, "optional", ()) if recipe is not None else ()
    if optional_of_recipe and format in ("tf2", "keras"):
        # The model is loaded from the renamed keys by name, so the recipe's map is gone by
        # then; its optional weights (slim's missing conv biases) must stay allowed, as a
        # load_checkpoint with the same recipe allows them.
        policy = dataclasses.replace(policy, optional=(*policy.optional, *optional_of_recipe))
    built, shapes, src = _model.prebuild(src, assignment_map, model, exclude)
    view = rename_checkpoint(
        src,
        assignment_map,
        exclude=exclude,
        drop_optimizer=drop_optimizer,
        target_shapes=shapes,
    )
    existing = _destination.check(dst, format, view.base, force, locked=False)
    if format == "tf1":
        _tf1.check_writable(view)
    elif format == "safetensors":
        _safetensors.check_writable(view)
    parent, base = _storage.split(dst)
    _storage.makedirs(parent)
    with _lock.locked(dst) as dead_owner:
        _destination.remove_leftovers(dst, format, dead_owner)
        existing = _destination.check(dst, format, view.base, force)  # re-check, locked
        needed = sum(view.nbytes(n) for n in view.variables)
        _stream.check_space(dst, needed)
        tmp_dir = _storage.mkdtemp(f".{base}.tf1compat-tmp-", parent)
        try:
            tmp_out = _storage.join(tmp_dir, base)
            report = None
            with _stream.disk_full_as_error(dst, needed):
                if format == "tf1":
                    behind = _behind.for_output(_tf1.data_path(tmp_out), needed)
                    nbytes = _tf1.write(view, tmp_out, progress, behind)
                    _stream.synced_while(
                        _stream.output_files(tmp_out), lambda: _tf1.verify(view, tmp_out, behind)
                    )
                    tensors = dict(view.source_names)
                elif format == "safetensors":
                    behind = _behind.for_output(tmp_out, needed)
                    crcs = _safetensors.write(view, tmp_out, progress, behind)
                    _stream.synced_while(
                        _stream.output_files(tmp_out),
                        lambda: _safetensors.verify(view, tmp_out, crcs, behind),
                    )
                    nbytes = needed
                    tensors = dict(view.source_names)
                else:
                    assert model is not None
                    written = _model.write(view, model, format, tmp_out, policy, progress, built)
                    _model.check(written, format, tmp_out)
                    report = written.report
                    tensors = {t: view.source_names[n] for t, n in report.loaded.items()}
                    nbytes = sum(view.nbytes(n) for n in report.loaded.values())
                files = _destination.install(tmp_out, dst, format, existing)
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
