"""tf1compat_init.reader: which checkpoint a path means, its file checks, listing and reads.

No TensorFlow: the checkpoints are written by the library's own bundle writer.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from support.bundles import same_bits, write_checkpoint

from tf1compat_init import CheckpointCorruptError, CheckpointNotFoundError, open_checkpoint
from tf1compat_init.reader import (
    VariableInfo,
    checkpoint_absent,
    pretrained_path,
    resolve_checkpoint_path,
)

pytestmark = pytest.mark.pure

VALUES = {
    "dense/kernel": np.arange(6, dtype=np.float32).reshape(2, 3),
    "dense/bias": np.array([-0.0, np.nan, 1.5], np.float32),
    "global_step": np.array(7, np.int64),
    "vocab": np.array([b"a", b"", b"xyz"], dtype=object),
}


def _state_file(directory, path):
    (directory / "checkpoint").write_text(
        f'model_checkpoint_path: "{path}"\nall_model_checkpoint_paths: "{path}"\n'
    )


# -- which checkpoint a path designates --------------------------------------------------


def test_every_spelling_of_one_checkpoint_resolves_to_its_prefix(tmp_path):
    prefix = write_checkpoint(tmp_path / "run" / "model.ckpt-7", VALUES)
    for path in (
        prefix,
        prefix + ".index",
        prefix + ".data-00000-of-00001",
        os.fsencode(prefix),
        tmp_path / "run" / "model.ckpt-7",
        tmp_path / "run",  # a directory without a state file: its only index
    ):
        assert resolve_checkpoint_path(path) == prefix, path


def test_a_directory_follows_its_state_file_relative_or_absolute(tmp_path):
    run = tmp_path / "run"
    old = write_checkpoint(run / "model.ckpt-100", VALUES)
    write_checkpoint(run / "model.ckpt-200", VALUES)
    _state_file(run, "model.ckpt-100")  # relative to the directory, as TF writes it
    assert resolve_checkpoint_path(run) == old
    elsewhere = write_checkpoint(tmp_path / "other" / "best.ckpt", VALUES)
    _state_file(run, elsewhere)
    assert resolve_checkpoint_path(run) == elsewhere


def test_without_a_state_file_the_highest_step_wins_not_the_longest_name(tmp_path):
    run = tmp_path / "run"
    for step in (9, 10, 2):
        write_checkpoint(run / f"model.ckpt-{step}", VALUES)
    write_checkpoint(run / "model.ckpt", VALUES)  # no step: ranks below any numbered one
    assert resolve_checkpoint_path(run) == str(run / "model.ckpt-10")


def test_a_state_file_with_escapes_is_unescaped(tmp_path):
    run = tmp_path / "run"
    prefix = write_checkpoint(run / 'we"ird' / "model.ckpt", VALUES)
    _state_file(run, prefix.replace('"', '\\"'))
    assert resolve_checkpoint_path(run) == prefix


def test_a_state_file_pointing_to_a_deleted_checkpoint_says_so(tmp_path):
    run = tmp_path / "run"
    write_checkpoint(run / "model.ckpt-1", VALUES)
    _state_file(run, "model.ckpt-5")
    with pytest.raises(CheckpointNotFoundError, match=r"points to .*model\.ckpt-5, but .*"):
        resolve_checkpoint_path(run)
    # even where a missing checkpoint is allowed: this one is broken, not absent
    with pytest.raises(CheckpointNotFoundError, match="was the checkpoint deleted"):
        pretrained_path(run, allow_missing=True, who="test")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: d, r"no checkpoint in directory .*: it has no 'checkpoint' state file"),
        (lambda d: d / "nowhere" / "model.ckpt", r"directory .*nowhere does not exist"),
        (lambda d: d / "model.ckpt-3", r"model\.ckpt-3\.index does not exist$"),
    ],
)
def test_what_is_missing_is_named(tmp_path, make, message):
    with pytest.raises(CheckpointNotFoundError, match=message):
        resolve_checkpoint_path(make(tmp_path))


def test_a_near_miss_lists_the_checkpoints_that_are_there(tmp_path):
    write_checkpoint(tmp_path / "model.ckpt-10", VALUES)
    with pytest.raises(CheckpointNotFoundError, match=r"checkpoints in .*: model\.ckpt-10$"):
        resolve_checkpoint_path(tmp_path / "model.ckpt-1")


def test_a_keras_file_gets_advice(tmp_path):
    (tmp_path / "weights.h5").write_bytes(b"\x89HDF")
    with pytest.raises(CheckpointNotFoundError, match=r"not a TensorFlow checkpoint.*load_weights"):
        resolve_checkpoint_path(tmp_path / "weights.h5")


def test_no_path_and_a_wrong_type_are_clear_errors():
    with pytest.raises(CheckpointNotFoundError, match=r"got None.*allow_missing=True"):
        resolve_checkpoint_path(None)
    with pytest.raises(TypeError, match="must be a str or os.PathLike, got int"):
        resolve_checkpoint_path(3)


def test_absent_is_only_nothing_at_all(tmp_path, caplog):
    assert checkpoint_absent(None)
    assert checkpoint_absent(tmp_path / "nothing" / "model.ckpt")
    assert checkpoint_absent(tmp_path)  # an empty directory: a first run
    with caplog.at_level(logging.WARNING, logger="tf1compat_init.reader"):
        assert pretrained_path(tmp_path, allow_missing=True, who="warm start") is None
    assert "warm start: no pretrained checkpoint at" in caplog.text
    with pytest.raises(CheckpointNotFoundError):
        pretrained_path(tmp_path, allow_missing=False, who="warm start")
    (tmp_path / "model.ckpt.index").write_bytes(b"")  # something is there, if broken
    assert not checkpoint_absent(tmp_path)


# -- opening: files checked, keys listed ---------------------------------------------------


def test_open_lists_keys_shapes_and_dtypes(tmp_path):
    prefix = write_checkpoint(tmp_path / "model.ckpt-7", VALUES)
    info = open_checkpoint(prefix)
    assert info.prefix == prefix and info.index_file == prefix + ".index"
    assert info.format == "name-based" and info.object_paths == {}
    assert info.data_files == [prefix + ".data-00000-of-00001"]
    assert info.variables == {
        "dense/bias": VariableInfo((3,), "float32"),
        "dense/kernel": VariableInfo((2, 3), "float32"),
        "global_step": VariableInfo((), "int64"),
        "vocab": VariableInfo((3,), "string"),
    }
    assert list(info.variables) == sorted(VALUES)  # index order


def test_a_missing_shard_and_a_short_shard_are_named(tmp_path):
    prefix = write_checkpoint(tmp_path / "m" / "model.ckpt", VALUES)
    data = prefix + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) - 1)
    with pytest.raises(CheckpointCorruptError, match=r"is truncated: .*copy it again"):
        open_checkpoint(prefix)
    os.remove(data)
    with pytest.raises(CheckpointNotFoundError, match=r"incomplete: missing .*data-00000-of"):
        open_checkpoint(prefix)


# -- reading ------------------------------------------------------------------------------


def test_read_returns_the_written_bits_in_the_order_asked(tmp_path):
    info = open_checkpoint(write_checkpoint(tmp_path / "model.ckpt", VALUES))
    everything = info.read()
    assert list(everything) == list(info.variables)
    for key, value in VALUES.items():
        assert same_bits(everything[key], value), key
    some = info.read(["vocab", "dense/bias"])
    assert list(some) == ["vocab", "dense/bias"]


def test_an_unknown_key_names_the_nearest_ones(tmp_path):
    info = open_checkpoint(write_checkpoint(tmp_path / "model.ckpt", VALUES))
    with pytest.raises(KeyError, match=r"'dense/kernal' is not in checkpoint .*'dense/kernel'"):
        info.read(["dense/bias", "dense/kernal"])


def test_a_flipped_data_byte_is_caught_unless_verification_is_off(tmp_path):
    prefix = write_checkpoint(tmp_path / "model.ckpt", {"w": np.zeros(16, np.float32)})
    data = prefix + ".data-00000-of-00001"
    raw = bytearray(open(data, "rb").read())
    raw[5] ^= 0x40
    open(data, "wb").write(bytes(raw))
    info = open_checkpoint(prefix)
    with pytest.raises(CheckpointCorruptError, match="'w'"):
        info.read(["w"])
    assert info.read(["w"], verify=False)["w"].view(np.uint8)[5] == 0x40
