"""tf1compat_init.view: a checkpoint seen under other names, nothing copied.

The name-based views (renamed, with computed values) need no TensorFlow; the object-based
ones (``object_paths``, ``saved_names``) read checkpoints that ``tf.train.Checkpoint`` wrote.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from support.bundles import same_bits, write_checkpoint

from tf1compat_init import VariableInfo, open_checkpoint, plan_restore
from tf1compat_init.migrate import rename_checkpoint
from tf1compat_init.view import CheckpointView, object_paths, renamed, saved_names, value_nbytes

QKV = np.arange(24, dtype=np.float32).reshape(2, 12)
VALUES = {
    "enc/qkv": QKV,
    "enc/w": np.array([[1.0, -0.0], [np.nan, 4.0]], np.float32),
    "vocab": np.array([b"ab", b"", b"cde"], dtype=object),
}


@pytest.fixture
def info(tmp_path):
    return open_checkpoint(write_checkpoint(tmp_path / "model.ckpt", VALUES))


@pytest.mark.pure
def test_an_opened_checkpoint_and_every_view_are_checkpoint_views(info):
    assert isinstance(info, CheckpointView)
    assert isinstance(renamed(info, {}, {}, {}), CheckpointView)


@pytest.mark.pure
def test_a_renamed_view_reads_the_stored_bytes_under_new_names(info):
    view = renamed(
        info,
        {"new/w": info.variables["enc/w"], "words": info.variables["vocab"]},
        {"new/w": "enc/w", "words": "vocab"},
        {"new/w": "enc/w", "words": "vocab"},
        excluded={"enc/qkv": "exclude pattern"},
    )
    assert view.prefix == info.prefix and view.format == "name-based"
    assert view.data_files == info.data_files and view.info is info
    assert view.renamed == {"enc/w": "new/w", "vocab": "words"}
    values = view.read()
    assert list(values) == ["new/w", "words"]
    assert same_bits(values["new/w"], VALUES["enc/w"])
    assert same_bits(view.read_one("words"), VALUES["vocab"])
    with pytest.raises(KeyError, match="'enc/w' is not a name of the renamed checkpoint"):
        view.read(["enc/w"])  # the stored key is not a name of the view


@pytest.mark.pure
def test_computed_names_are_read_through_their_route(info):
    view = rename_checkpoint(info, {"enc/qkv": "q, k, v | split(-1)", "enc/w": "new/w"})
    assert sorted(view.variables) == ["k", "new/w", "q", "v", "vocab"]
    assert view.variables["k"] == VariableInfo((2, 4), "float32")
    assert sorted(view.routes) == ["k", "q", "v"] and view.keys["new/w"] == "enc/w"
    got = view.read(["v", "new/w", "q"])
    assert list(got) == ["v", "new/w", "q"]
    assert same_bits(got["q"], QKV[:, :4]) and same_bits(got["v"], QKV[:, 8:])
    assert same_bits(got["new/w"], VALUES["enc/w"])
    # sizes without reading: a computed value's own size, a string's stored size
    assert view.nbytes("q") == 2 * 4 * 4
    assert view.nbytes("new/w") == 16
    assert view.nbytes("vocab") == info.bundle.entries["vocab"].size > 0


@pytest.mark.pure
def test_lower_maps_a_plan_back_to_stored_keys(info):
    view = rename_checkpoint(info, {"enc/qkv": "q, k, v | split(-1)", "enc/w": "new/w"})
    plan = plan_restore(view, {"new/w": ((2, 2), "float32"), "k": ((2, 4), "float32")})
    assert plan.report.loaded == {"new/w": "new/w", "k": "k"}
    lowered = {p.target: p for p in view.lower(plan.entries)}
    assert lowered["new/w"].checkpoint_key == "enc/w" and lowered["new/w"].route is None
    assert lowered["k"].checkpoint_key == "enc/qkv"
    assert lowered["k"].route.keys == ("enc/qkv",) and lowered["k"].route.index == 1


@pytest.mark.pure
@pytest.mark.parametrize(
    "shape, dtype, size",
    [((2, 3), "float32", 24), ((), "int64", 8), ((4,), "bfloat16", 8), ((0, 5), "float64", 0)],
)
def test_value_nbytes(shape, dtype, size):
    assert value_nbytes(VariableInfo(shape, dtype)) == size


@pytest.mark.pure
def test_value_nbytes_is_zero_for_a_dtype_without_a_byte_layout():
    assert value_nbytes(VariableInfo((3,), "resource")) == 0
    assert value_nbytes(VariableInfo((3,), "variant")) == 0


# -- object-based checkpoints (written by TensorFlow) --------------------------------------


def _object_checkpoint(tmp_path, shared: bool = False):
    tf = pytest.importorskip("tensorflow")

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.kernel = tf.Variable(np.ones((2, 3), np.float32), name="dense/kernel")
            self.bias = tf.Variable(np.zeros(3, np.float32), name="dense/bias")
            # two variables saved under one name: neither can be known by it
            self.a = tf.Variable([1.0], name="twin" if shared else "a")
            self.b = tf.Variable([2.0], name="twin" if shared else "b")

    net = Net()
    prefix = tf.train.Checkpoint(net=net).write(str(tmp_path / "obj" / "ckpt"))
    return open_checkpoint(prefix)


def test_object_paths_name_the_attributes_not_the_raw_keys(tmp_path):
    info = _object_checkpoint(tmp_path)
    view = object_paths(info)
    assert view.keys["net/kernel"] == "net/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    assert {"net/kernel", "net/bias", "net/a", "net/b"} <= set(view.variables)
    assert "_CHECKPOINTABLE_OBJECT_GRAPH" not in view.variables
    assert view.variables["net/kernel"] == VariableInfo((2, 3), "float32")
    assert same_bits(view.read_one("net/kernel"), np.ones((2, 3), np.float32))
    with pytest.raises(KeyError, match="is not an object path of checkpoint"):
        view.read(["net/kernel/.ATTRIBUTES/VARIABLE_VALUE"])


def test_saved_names_are_the_tf1_names_and_shared_ones_fall_back(tmp_path, caplog):
    view = saved_names(_object_checkpoint(tmp_path))
    assert view.keys["dense/kernel"] == "net/kernel/.ATTRIBUTES/VARIABLE_VALUE"
    assert view.keys["dense/bias"] == "net/bias/.ATTRIBUTES/VARIABLE_VALUE"
    assert view.keys["a"] == "net/a/.ATTRIBUTES/VARIABLE_VALUE"
    with caplog.at_level(logging.INFO, logger="tf1compat_init.view"):
        shared = saved_names(_object_checkpoint(tmp_path / "shared", shared=True))
    assert "twin" not in shared.keys
    assert shared.keys["net/a"] == "net/a/.ATTRIBUTES/VARIABLE_VALUE"
    assert shared.keys["net/b"] == "net/b/.ATTRIBUTES/VARIABLE_VALUE"
    assert "1 saved names are shared by several variables (twin)" in caplog.text
