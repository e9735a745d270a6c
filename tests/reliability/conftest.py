"""Fixtures of the reliability corpus: pristine checkpoints written once per session, and
broken copies of them made per test (the pristine files are never touched)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

from support import reliability as h  # noqa: E402


@pytest.fixture(scope="session")
def ckpts(tmp_path_factory):
    """Pristine checkpoints: ``name`` (1 shard), ``sharded`` (2 shards), ``object``."""
    root = tmp_path_factory.mktemp("pristine")
    out = {
        "name": h.write_name_based(root / "name" / "model.ckpt"),
        "sharded": h.write_name_based(root / "sharded" / "model.ckpt", shards=2),
        "object": h.write_object_based(root / "object" / "ckpt-1"),
    }
    digests = {k: h.tree_digest(os.path.dirname(p)) for k, p in out.items()}
    yield out
    # Every test works on copies; a test that wrote into a pristine checkpoint is a bug.
    for k, p in out.items():
        assert h.tree_digest(os.path.dirname(p)) == digests[k], f"pristine {k} was modified"


@pytest.fixture
def broken(ckpts, tmp_path):
    """``broken(case_id) -> path``: a fresh broken copy (or the pristine path, read-only)."""

    def make(case_id: str) -> str:
        return h.make_source(case_id, ckpts, tmp_path / "src")

    return make


@pytest.fixture
def frontend_model():
    """``frontend_model(name, spec)``: a model of one front end; closed after the test."""
    made = []

    def make(name: str, spec: h.Spec) -> h.Model:
        model = h.FRONTENDS[name](spec)
        made.append(model)
        return model

    yield make
    for model in made:
        model.close()


@pytest.fixture
def clean_dir(tmp_path) -> Path:
    d = tmp_path / "out"
    d.mkdir()
    yield d
    shutil.rmtree(d, ignore_errors=True)
