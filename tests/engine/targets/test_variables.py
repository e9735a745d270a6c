"""tf1compat_init.variables: variables grouped into targets, partitions checked to tile.

The module reads only a variable's ``name``, ``shape``, ``dtype`` and ``_save_slice_info``,
so most of it is tested on stand-ins without TensorFlow; the end of the file checks the
same on real TF1 partitioned variables and eager ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from tf1compat_init import TargetError
from tf1compat_init.variables import (
    Part,
    collect_targets,
    target_name,
    target_specs,
    variable_shape,
)


@dataclass(frozen=True)
class _DType:  # tf.DType's interface: hashable, with a base dtype
    name: str

    @property
    def base_dtype(self):
        return self


def _var(name, shape, dtype="float32", part=None):
    """A stand-in variable; ``part=(full_name, full_shape, offset, shape)`` makes a partition."""
    slice_info = None
    if part is not None:
        full_name, full_shape, offset, var_shape = part
        slice_info = SimpleNamespace(
            full_name=full_name, full_shape=full_shape, var_offset=offset, var_shape=var_shape
        )
    v = SimpleNamespace(name=name, shape=shape, dtype=_DType(dtype))
    if slice_info is not None:
        v._save_slice_info = slice_info
    return v


def _rows(name, full, splits, dtype="float32"):
    """The partitions of ``name`` along axis 0 at row offsets ``splits``."""
    bounds = [*splits, full[0]]
    return [
        _var(
            f"{name}/part_{i}:0",
            (b - a, *full[1:]),
            dtype,
            (name, list(full), [a] + [0] * (len(full) - 1), [b - a, *full[1:]]),
        )
        for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))
    ]


@pytest.mark.pure
@pytest.mark.parametrize(
    "name, want",
    [("dense/kernel:0", "dense/kernel"), ("w:12", "w"), ("odd:name", "odd:name"), ("bare", "bare")],
)
def test_target_name_drops_only_an_output_suffix(name, want):
    assert target_name(_var(name, (1,))) == want


@pytest.mark.pure
def test_target_name_of_a_partition_is_its_full_name():
    part = _rows("emb", (6, 2), [0, 3])[1]
    assert part.name == "emb/part_1:0" and target_name(part) == "emb"


@pytest.mark.pure
def test_variable_shape_from_a_tensor_shape_or_a_tuple():
    class Shape:  # tf.TensorShape's interface
        def __init__(self, dims):
            self.dims = dims
            self.rank = None if dims is None else len(dims)

        def as_list(self):
            return list(self.dims)

    assert variable_shape(SimpleNamespace(shape=Shape([2, None]))) == (2, None)
    assert variable_shape(SimpleNamespace(shape=Shape(None))) is None
    assert variable_shape(SimpleNamespace(shape=(3, None, 1))) == (3, None, 1)  # Keras 3


@pytest.mark.pure
def test_plain_variables_are_one_target_each():
    w, b = _var("d/w:0", (2, 3)), _var("d/b:0", (3,), "int32")
    targets = collect_targets([w, b, w])  # the same variable twice is one target
    assert list(targets) == ["d/w", "d/b"]
    assert targets["d/w"].parts == (Part(w, (), (2, 3)),) and not targets["d/w"].partitioned
    assert target_specs(targets) == {"d/w": ((2, 3), "float32"), "d/b": ((3,), "int32")}


@pytest.mark.pure
def test_name_of_renames_and_two_variables_under_one_name_are_an_error():
    w = _var("a/w:0", (2,))
    assert list(collect_targets([w], name_of=lambda v: "model/" + v.name[:-2])) == ["model/a/w"]
    with pytest.raises(TargetError, match=r"2 different variables share the name 'w'; give them"):
        collect_targets([_var("w:0", (1,)), _var("w:0", (1,))])


@pytest.mark.pure
def test_partitions_are_one_target_in_offset_order():
    parts = _rows("emb", (10, 4), [0, 3, 7])
    target = collect_targets(list(reversed(parts)))["emb"]
    assert target.shape == (10, 4) and target.dtype == "float32" and target.partitioned
    assert [(p.offset, p.shape) for p in target.parts] == [
        ((0, 0), (3, 4)),
        ((3, 0), (4, 4)),
        ((7, 0), (3, 4)),
    ]
    assert [p.variable for p in target.parts] == parts
    # a single partition at a nonzero offset is still partitioned; one at 0 covering all is not
    assert collect_targets(_rows("one", (5,), [0]))["one"].partitioned is False


@pytest.mark.pure
def test_partitions_along_the_second_axis():
    cols = [
        _var("k/part_0:0", (4, 2), part=("k", [4, 5], [0, 0], [4, 2])),
        _var("k/part_1:0", (4, 3), part=("k", [4, 5], [0, 2], [4, 3])),
    ]
    assert [p.offset for p in collect_targets(cols)["k"].parts] == [(0, 0), (0, 2)]


@pytest.mark.pure
@pytest.mark.parametrize(
    "variables, message",
    [
        (
            _rows("emb", (6, 2), [0, 3])[:1],
            r"the 1 partition\(s\) of 'emb' do not tile its full shape \[6, 2\]: they cover 6 "
            r"of its 12 elements \(\[0:3, 0:2\]\); pass every partition",
        ),
        (
            _rows("emb", (6, 2), [0, 3])
            + [_var("emb/part_9:0", (2, 2), part=("emb", [6, 2], [2, 0], [2, 2]))],
            r"partitions \[0:3, 0:2\] and \[2:4, 0:2\] of 'emb' overlap",
        ),
        (
            [_var("emb/part_0:0", (7, 2), part=("emb", [6, 2], [0, 0], [7, 2]))],
            r"partition \[0:7, 0:2\] of 'emb' lies outside its full shape \[6, 2\]",
        ),
        (
            [_var("emb/part_0:0", (6,), part=("emb", [6, 2], [0], [6]))],
            r"partition \[0:6\] of 'emb' does not have the rank of its full shape \[6, 2\]",
        ),
        (
            _rows("emb", (6, 2), [0, 3])[:1] + _rows("emb", (8, 2), [0, 3])[1:],
            r"the partitions of 'emb' disagree on its full shape: \[6, 2\], \[8, 2\]",
        ),
        (
            _rows("emb", (6, 2), [0, 3])[:1] + _rows("emb", (6, 2), [0, 3], "float16")[1:],
            r"the partitions of 'emb' have different dtypes \(float16, float32\)",
        ),
        (
            _rows("emb", (6, 2), [0, 3]) + [_var("emb:0", (6, 2))],
            r"variable 'emb' mixes partitioned and plain variables under one name",
        ),
    ],
    ids=["gap", "overlap", "outside", "rank", "full-shapes", "dtypes", "mixed"],
)
def test_partitions_that_do_not_tile_are_refused(variables, message):
    with pytest.raises(TargetError, match=message):
        collect_targets(variables)


# -- real TensorFlow variables ---------------------------------------------------------------


def test_tf1_partitioned_variables_graph_mode():
    tf = pytest.importorskip("tensorflow")
    v1 = tf.compat.v1
    with tf.Graph().as_default():
        emb = v1.get_variable(
            "emb", [10, 3], partitioner=v1.fixed_size_partitioner(3), dtype=tf.float64
        )
        dense = v1.get_variable("dense/kernel", [3, 2])
        whole = collect_targets([emb, dense])
        parts = collect_targets(list(emb))  # the part_N variables themselves
        partial = list(emb)[:2]
        with pytest.raises(TargetError, match=r"'emb' do not tile its full shape \[10, 3\]"):
            collect_targets(partial)
    assert target_specs(whole) == {"emb": ((10, 3), "float64"), "dense/kernel": ((3, 2), "float32")}
    assert [p.offset for p in whole["emb"].parts] == [(0, 0), (4, 0), (7, 0)]
    assert [p.shape for p in whole["emb"].parts] == [(4, 3), (3, 3), (3, 3)]
    assert parts["emb"].parts == whole["emb"].parts
    assert whole["dense/kernel"].parts[0].variable is dense


def test_eager_variables_resource_and_unknown_shape():
    tf = pytest.importorskip("tensorflow")
    w = tf.Variable(tf.zeros((2, 3), tf.bfloat16), name="net/w")
    free = tf.Variable(tf.zeros((4, 1)), name="net/free", shape=tf.TensorShape([None, 1]))
    targets = collect_targets([w, free])
    assert target_specs(targets) == {
        "net/w": ((2, 3), "bfloat16"),
        "net/free": ((None, 1), "float32"),
    }
