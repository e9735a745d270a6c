"""Tests of the native tensor bundle reader.

Most tests are differential: TensorFlow writes a checkpoint and every key's
value, dtype and shape must equal what ``tf.train.load_checkpoint`` returns,
bit for bit.  Crafted indexes (written by a tiny table writer below) test the
validation that real TensorFlow files never exercise.
"""

from __future__ import annotations

import os
import shutil
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from support.crafted_bundle import (
    _f_len,
    entry_proto,
    header_proto,
    table_bytes,
    write_bundle,
)

from tf1compat_init.bundle import crc as _crc
from tf1compat_init.bundle.crc import crc32c, mask_crc, unmask_crc
from tf1compat_init.bundle.dtypes import numpy_dtype
from tf1compat_init.bundle.entries import parse_entry
from tf1compat_init.bundle.reader import BundleReader
from tf1compat_init.bundle.slice_keys import encode_tensor_name_slice
from tf1compat_init.bundle.table import _read_table
from tf1compat_init.errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    UnsupportedCheckpointError,
)

# ---------------------------------------------------------------------------
# TensorFlow fixtures.
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return pytest.importorskip("tensorflow")


def _specials(a: np.ndarray) -> np.ndarray:
    flat = a.reshape(-1)
    flat[:3] = [np.nan, -0.0, np.inf]
    return a


@pytest.fixture(scope="module")
def dtype_ckpt(tf, tmp_path_factory):
    """SaveV2 of every dtype, strings, scalars, empty and sliced tensors.

    Returns:
        (prefix, expected values by key).
    """
    rng = np.random.default_rng(1234)
    ii = np.iinfo
    exp = {
        "float16": _specials(rng.standard_normal((3, 5)).astype(np.float16)),
        "float32": _specials(rng.standard_normal((4, 7)).astype(np.float32)),
        "float64": _specials(rng.standard_normal((2, 3, 2))),
        "int8": np.array([ii(np.int8).min, -1, 0, 1, ii(np.int8).max], np.int8),
        "int16": np.array([ii(np.int16).min, -7, ii(np.int16).max], np.int16),
        "int32": rng.integers(ii(np.int32).min, ii(np.int32).max, (3, 3), dtype=np.int32),
        "int64": np.array([ii(np.int64).min, -1, ii(np.int64).max], np.int64),
        "uint8": np.arange(256, dtype=np.uint8).reshape(16, 16),
        "uint16": np.array([0, 1, ii(np.uint16).max], np.uint16),
        "uint32": np.array([0, ii(np.uint32).max], np.uint32),
        "uint64": np.array([0, ii(np.uint64).max], np.uint64),
        "bool": np.array([[True, False], [False, True]]),
        "complex64": (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64),
        "complex128": rng.standard_normal((2, 2)) + 1j * rng.standard_normal((2, 2)),
        "scalar/float32": np.array(3.5, np.float32),
        "scalar/int64": np.array(-(2**40), np.int64),
        "scalar/bool": np.array(True),
        "zero/float32": np.zeros((0, 3), np.float32),
        "zero/int8": np.zeros((0,), np.int8),
        "strings/mixed": np.array(
            [b"", "héllo wörld ✓".encode(), bytes(range(256)), b"x" * 200, b"\x00", b"\xff\x00"],
            dtype=object,
        ),
        "strings/2d": np.array([[b"a", b""], [b"bc", b"\x80\x81"], [b"", b""]], dtype=object),
        "strings/long": np.array([b"L" * 70000, b"s"], dtype=object),
        "strings/empty": np.zeros((2, 0), dtype=object),
        "strings/scalar": np.array(b"scalar\x00value", dtype=object),
        "strings/scalar_empty": np.array(b"", dtype=object),
    }
    tensors = {k: tf.constant(v) for k, v in exp.items() if not k.startswith("strings/")}
    for k, v in exp.items():
        if k.startswith("strings/"):
            tensors[k] = tf.constant(
                v.tolist() if v.ndim else v[()], dtype=tf.string, shape=v.shape
            )
    tensors["bfloat16"] = tf.constant(_specials(rng.standard_normal((3, 4))), dtype=tf.bfloat16)
    exp["bfloat16"] = tensors["bfloat16"].numpy()
    experimental = getattr(tf.dtypes, "experimental", None)
    for name in ("float8_e4m3fn", "float8_e5m2", "int4", "uint4"):
        dt = getattr(experimental, name, None)
        if dt is not None:
            source = [1, 2, -3, 0, 5] if name.startswith("int") else [1, 2, 3, 0, 5]
            source = [0.5, 2.0, -3.0, 0.0, 448.0] if name.startswith("float") else source
            tensors[name] = tf.cast(tf.constant(source), dt)
            exp[name] = tensors[name].numpy()

    names = sorted(tensors)
    prefix = str(tmp_path_factory.mktemp("dtypes") / "ckpt")
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tensors[n] for n in names],
    )

    # Sliced (partitioned) tensors, written slice by slice, including full
    # extents ("-") in the slice specs.
    rows = rng.standard_normal((6, 4)).astype(np.float32)
    grid = rng.integers(-1000, 1000, (4, 6), dtype=np.int32)
    cube = rng.standard_normal((2, 3, 4))
    exp_sliced = {"sliced/rows": rows, "sliced/grid": grid, "sliced/cube": cube}
    parts = [
        ("sliced/rows", "6 4 0,2:-", rows[0:2]),
        ("sliced/rows", "6 4 2,4:-", rows[2:6]),
        ("sliced/grid", "4 6 0,2:0,3", grid[0:2, 0:3]),
        ("sliced/grid", "4 6 0,2:3,3", grid[0:2, 3:6]),
        ("sliced/grid", "4 6 2,2:0,6", grid[2:4, 0:6]),
        ("sliced/cube", "2 3 4 -:0,1:-", cube[:, 0:1]),
        ("sliced/cube", "2 3 4 -:1,2:-", cube[:, 1:3]),
    ]
    sprefix = str(tmp_path_factory.mktemp("sliced") / "ckpt")
    tf.raw_ops.SaveV2(
        prefix=sprefix,
        tensor_names=[p[0] for p in parts],
        shape_and_slices=[p[1] for p in parts],
        tensors=[tf.constant(p[2]) for p in parts],
    )
    return prefix, exp, sprefix, exp_sliced


@pytest.fixture(scope="module")
def saver_ckpt(tf, tmp_path_factory):
    """A name-based, 2-shard Saver checkpoint with partitioned variables.

    Two CPU devices come from the session config (not the process-wide
    logical device configuration, which other tests may have frozen), and
    ``Saver(sharded=True)`` writes one shard per device.
    """
    d = tmp_path_factory.mktemp("saver")
    g = tf.Graph()

    def device_fn(op):
        # Put one partition and the int variable on the second CPU so that
        # the partitioned tensor's slices are spread over both shards.
        return "/cpu:1" if "part_1" in op.name or op.name.startswith("counts") else "/cpu:0"

    with g.as_default(), g.device(device_fn):
        tf.compat.v1.get_variable(
            "dense/kernel",
            initializer=tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
        )
        tf.compat.v1.get_variable(
            "emb",
            shape=(10, 3),
            dtype=tf.float32,
            partitioner=tf.compat.v1.fixed_size_partitioner(3),
        )
        tf.compat.v1.get_variable(
            "wide",
            shape=(4, 9),
            dtype=tf.float64,
            partitioner=tf.compat.v1.fixed_size_partitioner(3, axis=1),
        )
        tf.compat.v1.get_variable("counts", initializer=tf.constant([1, 2, 3], tf.int64))
        tf.compat.v1.get_variable(
            "vocab", initializer=tf.constant([b"a", b"", "ü".encode()]), trainable=False
        )
        tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver(sharded=True)
        config = tf.compat.v1.ConfigProto(device_count={"CPU": 2}, allow_soft_placement=True)
        with tf.compat.v1.Session(graph=g, config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            prefix = saver.save(sess, str(d / "model.ckpt"), global_step=3)
    return prefix


@pytest.fixture(scope="module")
def object_ckpt(tf, tmp_path_factory):
    """A tf.train.Checkpoint of nested tf.Modules plus a v1 Adam with slots."""

    class Dense(tf.Module):
        def __init__(self, i, o):
            super().__init__()
            self.kernel = tf.Variable(tf.random.normal((i, o), seed=1), name="kernel")
            self.bias = tf.Variable(tf.zeros((o,)), name="bias")

    class Net(tf.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(3, 4), Dense(4, 2)]
            self.head = tf.Module()
            self.head.scale = tf.Variable(2.0, name="scale")

        def __call__(self, x):
            for layer in self.layers:
                x = x @ layer.kernel + layer.bias
            return x * self.head.scale

    net = Net()
    opt = tf.compat.v1.train.AdamOptimizer(0.1)
    opt.minimize(lambda: tf.reduce_sum(net(tf.ones((1, 3)))), var_list=net.trainable_variables)
    ckpt = tf.train.Checkpoint(model=net, optimizer=opt)
    return ckpt.save(str(tmp_path_factory.mktemp("object") / "ckpt"))


@pytest.fixture(scope="module")
def many_keys_ckpt(tf, tmp_path_factory):
    """Enough keys (with shared prefixes) for a multi-block index."""
    names = [f"model/encoder/layer_{i:04d}/attention/query/kernel" for i in range(6000)]
    prefix = str(tmp_path_factory.mktemp("many") / "ckpt")
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant([float(i), -float(i)]) for i in range(len(names))],
    )
    return prefix


# ---------------------------------------------------------------------------
# Differential helpers.
# ---------------------------------------------------------------------------


def assert_same_value(ours: np.ndarray, theirs, key: str = "") -> None:
    assert isinstance(ours, np.ndarray), key
    if isinstance(theirs, bytes):  # TensorFlow returns a scalar string as bytes
        assert ours.dtype == object and ours.shape == (), key
        assert ours[()] == theirs, key
        return
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape, key
    assert ours.dtype == theirs.dtype, (key, ours.dtype, theirs.dtype)
    if theirs.dtype == object:
        assert [type(x) for x in ours.reshape(-1)] == [bytes] * ours.size, key
        assert ours.reshape(-1).tolist() == theirs.reshape(-1).tolist(), key
    else:
        assert ours.tobytes() == theirs.tobytes(), key  # bit for bit, NaNs included


def assert_matches_tf(tf, prefix: str) -> BundleReader:
    ref = tf.train.load_checkpoint(prefix)
    dtypes = ref.get_variable_to_dtype_map()
    shapes = ref.get_variable_to_shape_map()
    reader = BundleReader(prefix)
    assert set(reader.entries) == set(dtypes)
    assert reader.missing_files() == []
    for key, entry in reader.entries.items():
        assert entry.key == key
        assert entry.dtype == dtypes[key].name, key
        assert list(entry.shape) == shapes[key], key
        assert_same_value(reader.read(key), ref.get_tensor(key), key)
    return reader


# ---------------------------------------------------------------------------
# CRC, OrderedCode and protobuf primitives (no TensorFlow needed).
# ---------------------------------------------------------------------------


@pytest.mark.pure
def test_crc32c_known_values_and_mask():
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283
    # Vectors from RFC 3720 (iSCSI), B.4.
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    rng = np.random.default_rng(0)
    for v in [0, 1, 0xFFFFFFFF, *rng.integers(0, 2**32, 100).tolist()]:
        assert unmask_crc(mask_crc(v)) == v
    assert mask_crc(0) == 0xA282EAD8


@pytest.mark.pure
def test_crc32c_accepts_arrays_and_views():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((33, 17)).astype(np.float32)
    raw = a.tobytes()
    assert crc32c(a) == crc32c(raw) == crc32c(memoryview(raw)) == crc32c(bytearray(raw))
    assert crc32c(a[:, ::2]) == crc32c(np.ascontiguousarray(a[:, ::2]).tobytes())
    assert crc32c(raw[5:], crc32c(raw[:5])) == crc32c(raw)


@pytest.mark.pure
def test_python_fallback_crc_matches():
    rng = np.random.default_rng(2)
    for n in [0, 1, 7, 64, 1000, 4099]:
        data = rng.integers(0, 256, n, dtype=np.uint8)
        for seed in (0, 0x12345678):
            assert _crc._crc_python(data, seed) == crc32c(data, seed)
    google_crc32c = pytest.importorskip("google_crc32c")
    blob = rng.integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    assert crc32c(blob) == google_crc32c.value(blob)
    assert crc32c(blob[3:]) == google_crc32c.value(blob[3:])  # unaligned start


# ---------------------------------------------------------------------------
# Crafted bundles (no TensorFlow needed).
# ---------------------------------------------------------------------------


@pytest.mark.pure
def test_crafted_bundle_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    tensors = {f"v/{i:02d}/w": rng.standard_normal((i % 4, 3)) for i in range(20)}
    tensors["i"] = np.arange(5, dtype=np.int64)
    write_bundle(tmp_path / "c", tensors)
    reader = BundleReader(str(tmp_path / "c"))
    assert reader.num_shards == 1 and reader.object_graph() is None
    assert reader.data_path(0) == f"{tmp_path}/c.data-00000-of-00001"
    assert set(reader.entries) == set(tensors)
    got = reader.read_many(tensors, threads=3)
    assert list(got) == list(tensors)
    for key, value in tensors.items():
        assert got[key].tobytes() == value.tobytes() and got[key].shape == value.shape


def _crafted(tmp_path, extra, **kw):
    write_bundle(tmp_path / "c", {"ok": np.arange(4.0)}, extra=extra, **kw)
    return str(tmp_path / "c")


@pytest.mark.pure
def test_huge_bogus_shape_does_not_allocate(tmp_path):
    huge = entry_proto("float32", (1 << 20, 1 << 20), 0, 0, 4 << 40, 0)
    small = entry_proto("float32", (1 << 30, 1 << 10), 0, 0, 16, 0)
    strings = entry_proto("string", (1 << 40,), 0, 0, 40, 0)
    prefix = _crafted(tmp_path, [(b"huge", huge), (b"small", small), (b"strs", strings)])
    reader = BundleReader(prefix)
    tracemalloc.start()
    try:
        start = time.perf_counter()
        with pytest.raises(CheckpointCorruptError, match=r"huge.*needs 4398046511104 bytes"):
            reader.read("huge")
        with pytest.raises(CheckpointCorruptError, match="small.*has size 16"):
            reader.read("small")
        with pytest.raises(CheckpointCorruptError, match="strs.*too small"):
            reader.read("strs")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert time.perf_counter() - start < 1


@pytest.mark.pure
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([(b"neg", entry_proto("float32", (-1, 2)))], "invalid shape"),
        ([(b"negs", entry_proto("float32", (-1, -2), size=8))], r"invalid shape \(-1, -2\)"),
        ([(b"shard", entry_proto("float32", (1,), shard_id=-1, size=4))], "shard -1"),
        ([(b"size", entry_proto("float32", (1,), size=-4))], "negative offset 0 or size -4"),
        ([(b"ref", entry_proto(101, (1,), size=4))], "dtype float32_ref cannot be stored"),
        ([(b"shard", entry_proto("float32", (1,), shard_id=1, size=4))], "shard 1"),
        ([(b"off", entry_proto("float32", (1,), offset=-4, size=4))], "negative offset"),
        ([(b"badslice", entry_proto("float32", (4,), slices=[((2, 3),)]))], "outside shape"),
        ([(b"rank", entry_proto("float32", (4, 2), slices=[((0, 2),)]))], "rank"),
        ([(b"junk", b"\x0a\xff")], "bad protobuf"),
        ([(b"wire", _f_len(1, b"x"))], "wire type"),
    ],
)
def test_crafted_bad_entries_fail_on_open(tmp_path, extra, message):
    prefix = _crafted(tmp_path, extra)
    with pytest.raises(CheckpointCorruptError, match=message) as info:
        BundleReader(prefix)
    assert prefix + ".index" in str(info.value)


@pytest.mark.pure
def test_crafted_bad_headers(tmp_path):
    for header, error, message in [
        (header_proto(num_shards=0), CheckpointCorruptError, "num_shards=0"),
        (header_proto(min_consumer=2), UnsupportedCheckpointError, "newer"),
    ]:
        write_bundle(tmp_path / "h", {"x": np.zeros(1)}, header=header)
        with pytest.raises(error, match=message):
            BundleReader(str(tmp_path / "h"))
    write_bundle(tmp_path / "be", {"x": np.zeros(1)}, header=header_proto(big_endian=True))
    reader = BundleReader(str(tmp_path / "be"))
    assert reader.entries["x"].shape == (1,)
    with pytest.raises(UnsupportedCheckpointError, match="big-endian"):
        reader.read("x")


@pytest.mark.pure
def test_crafted_compressed_block_is_unsupported(tmp_path):
    write_bundle(tmp_path / "z", {"x": np.zeros(1)}, ctype=1)
    with pytest.raises(UnsupportedCheckpointError, match="snappy"):
        BundleReader(str(tmp_path / "z"))
    write_bundle(tmp_path / "t", {"x": np.zeros(1)}, ctype=7)
    with pytest.raises(CheckpointCorruptError, match="block type 7"):
        BundleReader(str(tmp_path / "t"))


@pytest.mark.pure
def test_crafted_table_structure_errors(tmp_path):
    path = tmp_path / "c.index"
    good_items = [(b"", header_proto()), (b"a", entry_proto("float32", ()))]
    path.write_bytes(table_bytes(good_items[1:]))
    with pytest.raises(CheckpointCorruptError, match="no header"):
        BundleReader(str(tmp_path / "c"))
    path.write_bytes(table_bytes([good_items[0], (b"b", b""), (b"a", b"")], per_block=10))
    with pytest.raises(CheckpointCorruptError, match="out of order"):
        BundleReader(str(tmp_path / "c"))
    path.write_bytes(table_bytes(good_items))
    BundleReader(str(tmp_path / "c"))  # the writer itself is sound


@pytest.mark.pure
def test_crafted_unsupported_dtype(tmp_path):
    prefix = _crafted(tmp_path, [(b"var", entry_proto("variant", (), size=3))])
    reader = BundleReader(prefix)
    assert reader.entries["var"].dtype == "variant"
    with pytest.raises(UnsupportedCheckpointError, match="variant"):
        reader.read("var")
    assert reader.read("ok").tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.pure
def test_crafted_slice_problems(tmp_path):
    data = np.arange(6.0)
    raw = data.tobytes()
    crc = mask_crc(crc32c(raw[:24]))

    def slice_entry(start, length, offset=0):
        key = encode_tensor_name_slice(b"s", [(start, length)])
        return key, entry_proto("float64", (length,), 0, offset, 8 * length, crc)

    full = [((0, 3),), ((3, 3),)]
    cases = {
        "missing": (
            [(b"s", entry_proto("float64", (6,), slices=full)), slice_entry(0, 3)],
            "no entry",
        ),
        "overlap": (
            [(b"s", entry_proto("float64", (6,), slices=[((0, 3),), ((2, 3),)]))],
            "overlap",
        ),
        "gap": ([(b"s", entry_proto("float64", (6,), slices=[((0, 3),)]))], "cover 3 of its 6"),
    }
    for name, (extra, message) in cases.items():
        (tmp_path / name).mkdir()
        prefix = _crafted(tmp_path / name, extra)
        with pytest.raises(CheckpointCorruptError, match=message):
            BundleReader(prefix).read("s")


@pytest.mark.pure
def test_missing_index_and_data(tmp_path):
    with pytest.raises(CheckpointNotFoundError, match="nope.index") as info:
        BundleReader(str(tmp_path / "nope"))
    assert isinstance(info.value, FileNotFoundError)
    write_bundle(tmp_path / "c", {"x": np.zeros(2)})
    os.remove(tmp_path / "c.data-00000-of-00001")
    reader = BundleReader(str(tmp_path / "c"))
    assert reader.missing_files() == [str(tmp_path / "c.data-00000-of-00001")]
    with pytest.raises(CheckpointNotFoundError, match="c.data-00000-of-00001"):
        reader.read("x")


# ---------------------------------------------------------------------------
# Differential tests against TensorFlow.
# ---------------------------------------------------------------------------


def test_every_dtype_matches_tf(tf, dtype_ckpt):
    prefix, expected, _, _ = dtype_ckpt
    reader = assert_matches_tf(tf, prefix)
    assert set(reader.entries) == set(expected)
    for key, value in expected.items():  # and the values we wrote
        ours = reader.read(key)
        if value.dtype == object:
            assert ours.reshape(-1).tolist() == value.reshape(-1).tolist(), key
        else:
            assert ours.dtype == value.dtype and ours.tobytes() == value.tobytes(), key


def test_sliced_tensors_match_tf(tf, dtype_ckpt):
    _, _, prefix, expected = dtype_ckpt
    reader = assert_matches_tf(tf, prefix)
    assert set(reader.entries) == set(expected)
    for key, value in expected.items():
        assert reader.entries[key].slices
        assert reader.read(key).tobytes() == value.tobytes()
    assert reader.entries["sliced/rows"].slices == (((0, 2), (0, -1)), ((2, 4), (0, -1)))


def test_saver_sharded_partitioned_matches_tf(tf, saver_ckpt):
    reader = assert_matches_tf(tf, saver_ckpt)
    assert reader.num_shards == 2
    assert reader.object_graph() is None
    assert {e.shard_id for e in reader.entries.values() if not e.slices} == {0, 1}
    assert {e.shard_id for e in reader._slice_entries.values()} == {0, 1}
    assert len(reader.entries["emb"].slices) == 3
    assert len(reader.entries["wide"].slices) == 3
    assert reader.entries["global_step"].dtype == "int64"


def test_index_entries_decode_as_tensorflow_reads_them(tf, dtype_ckpt, saver_ckpt, object_ckpt):
    """Every entry TensorFlow wrote (whole and sliced, every dtype, two shards) decodes to
    what TensorFlow's own generated class reads from it."""
    from tensorflow.core.protobuf import tensor_bundle_pb2

    prefix, _, sliced_prefix, _ = dtype_ckpt
    seen = set()
    for p in (prefix, sliced_prefix, saver_ckpt, object_ckpt):
        for key, value in _read_table(p + ".index")[1:]:
            m = tensor_bundle_pb2.BundleEntryProto.FromString(value)
            slices = tuple(
                tuple((e.start, e.length if e.HasField("length") else -1) for e in s.extent)
                for s in m.slices
            )
            dims = tuple(d.size for d in m.shape.dim)
            expected = (m.dtype, dims, m.shard_id, m.offset, m.size, m.crc32c, slices)
            assert parse_entry(value) == expected, key
            seen.update({"sliced" if slices else "whole", f"shard {m.shard_id}"})
    assert seen == {"sliced", "whole", "shard 0", "shard 1"}


def test_object_checkpoint_matches_tf(tf, object_ckpt):
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    reader = assert_matches_tf(tf, object_ckpt)
    graph = reader.object_graph()
    assert reader.object_graph() is graph  # parsed once

    proto = trackable_object_graph_pb2.TrackableObjectGraph.FromString(
        tf.train.load_checkpoint(object_ckpt).get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH")
    )
    assert len(graph.nodes) == len(proto.nodes)
    for ours, theirs in zip(graph.nodes, proto.nodes, strict=True):
        assert ours.children == tuple((c.node_id, c.local_name) for c in theirs.children)
        assert ours.attributes == tuple(
            (a.name, a.full_name, a.checkpoint_key) for a in theirs.attributes
        )
        assert ours.slot_variables == tuple(
            (s.original_variable_node_id, s.slot_name, s.slot_variable_node_id)
            for s in theirs.slot_variables
        )

    paths = graph.paths()
    value = ".ATTRIBUTES/VARIABLE_VALUE"
    assert paths[f"model/layers/0/kernel/{value}"] == "model/layers/0/kernel"
    assert paths[f"model/head/scale/{value}"] == "model/head/scale"
    assert paths[f"save_counter/{value}"] == "save_counter"
    assert paths[f"optimizer/beta1_power/{value}"] == "optimizer/beta1_power"
    slot = f"model/layers/1/bias/.OPTIMIZER_SLOT/optimizer/v/{value}"
    assert paths[slot] == "model/layers/1/bias/v"
    assert set(paths) == set(reader.entries) - {"_CHECKPOINTABLE_OBJECT_GRAPH"}
    names = graph.full_names()
    assert names[f"model/layers/0/kernel/{value}"] == "kernel"
    assert names[f"model/head/scale/.OPTIMIZER_SLOT/optimizer/m/{value}"] == "scale/Adam"


def test_multi_block_index_matches_tf(tf, many_keys_ckpt):
    index_size = os.path.getsize(many_keys_ckpt + ".index")
    assert index_size > 262144  # more than one of TensorFlow's 256 KiB blocks
    reader = BundleReader(many_keys_ckpt)
    ref = tf.train.load_checkpoint(many_keys_ckpt)
    shapes = ref.get_variable_to_shape_map()
    assert set(reader.entries) == set(shapes)
    got = reader.read_many(reader.entries)
    for key in sorted(reader.entries)[::500]:
        assert_same_value(got[key], ref.get_tensor(key), key)
    assert got["model/encoder/layer_5999/attention/query/kernel"].tolist() == [5999.0, -5999.0]


def test_read_and_read_many(tf, dtype_ckpt):
    prefix, expected, sprefix, _ = dtype_ckpt
    reader = BundleReader(prefix)
    for key in ["float32", "bfloat16", "complex128", "scalar/int64", "zero/float32", "strings/2d"]:
        entry = reader.entries[key]
        value = reader.read(key)
        assert value.shape == entry.shape and value.dtype == numpy_dtype(entry.dtype)
        assert_same_value(value, expected[key], key)
    rows = BundleReader(sprefix).read("sliced/rows")
    assert rows.shape == (6, 4) and rows.dtype == np.float32
    with pytest.raises(KeyError, match="nope"):
        reader.read("nope")

    for threads in (None, 1, 4):
        many = reader.read_many(list(expected) + ["float32"], threads=threads)
        assert list(many) == list(expected)
        for key, value in many.items():
            assert_same_value(value, reader.read(key), key)


@pytest.mark.parametrize("backend", ["python", "google-crc32c"])
def test_fallback_crc_backends_read_the_same(tf, dtype_ckpt, monkeypatch, backend):
    prefix, expected, _, _ = dtype_ckpt
    monkeypatch.setattr(_crc, "_chosen", None)
    _crc._select(backend)
    reader = BundleReader(prefix)
    for key in ["float64", "strings/mixed", "strings/long", "int64"]:
        assert_same_value(reader.read(key), expected[key], key)


# ---------------------------------------------------------------------------
# Corruption of TensorFlow-written files.
# ---------------------------------------------------------------------------


def _copy_ckpt(prefix: str, dest: Path) -> str:
    dest.mkdir(parents=True, exist_ok=True)
    base = os.path.basename(prefix)
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(base + "."):
            shutil.copy(os.path.join(os.path.dirname(prefix), name), dest / name)
    return str(dest / base)


def _read_all(reader: BundleReader) -> dict:
    return {k: reader.read(k) for k in reader.entries}


def test_truncated_index(tf, saver_ckpt, tmp_path):
    prefix = _copy_ckpt(saver_ckpt, tmp_path)
    index = Path(prefix + ".index")
    data = index.read_bytes()
    # Every cut inside the footer and the last blocks, then a sample.
    cuts = sorted(set(range(len(data) - 120, len(data))) | set(range(0, len(data), 7)))
    for cut in cuts:
        index.write_bytes(data[:cut])
        with pytest.raises(CheckpointCorruptError) as info:
            BundleReader(prefix)
        assert str(index) in str(info.value)
    index.write_bytes(data + b"\x00")  # trailing junk moves the footer
    with pytest.raises(CheckpointCorruptError, match="magic"):
        BundleReader(prefix)


def test_garbage_index(tf, saver_ckpt, tmp_path):
    prefix = _copy_ckpt(saver_ckpt, tmp_path)
    index = Path(prefix + ".index")
    good = index.read_bytes()
    rng = np.random.default_rng(5)
    for n in [0, 1, 47, 48, 200, 5000]:
        index.write_bytes(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
        with pytest.raises(CheckpointCorruptError, match="corrupt checkpoint index"):
            BundleReader(prefix)
        # Garbage that ends in a valid footer.
        index.write_bytes(rng.integers(0, 256, n, dtype=np.uint8).tobytes() + good[-48:])
        with pytest.raises(CheckpointCorruptError, match="corrupt checkpoint index"):
            BundleReader(prefix)


def test_every_index_byte_flip_is_caught(tf, saver_ckpt, tmp_path):
    prefix = _copy_ckpt(saver_ckpt, tmp_path)
    index = Path(prefix + ".index")
    good = index.read_bytes()
    expected = BundleReader(prefix).entries
    footer_padding = set()
    for pos in range(len(good)):
        bad = bytearray(good)
        bad[pos] ^= 0x41  # two bits: a one-bit flip and a high bit
        index.write_bytes(bytes(bad))
        try:
            reader = BundleReader(prefix)
        except CheckpointCorruptError as e:
            assert str(index) in str(e)
            continue
        # Only the footer's padding may change without being noticed, and
        # then nothing the reader sees changed.
        assert pos >= len(good) - 48
        assert reader.entries == expected
        footer_padding.add(pos)
    assert len(footer_padding) < 40


def _owner(reader: BundleReader, shard: int, pos: int) -> str:
    entries = list(reader.entries.items()) + [
        (repr(k), e) for k, e in reader._slice_entries.items()
    ]
    for key, e in entries:
        if not e.slices and e.shard_id == shard and e.offset <= pos < e.offset + e.size:
            return key
    raise AssertionError(f"byte {pos} of shard {shard} belongs to no tensor")


def test_every_data_byte_flip_is_caught(tf, saver_ckpt, tmp_path):
    prefix = _copy_ckpt(saver_ckpt, tmp_path)
    reader = BundleReader(prefix)
    good_values = _read_all(reader)
    slice_owner = {}
    for key, e in reader.entries.items():
        for ext in e.slices:
            slice_owner[repr(encode_tensor_name_slice(key.encode(), ext))] = key
    for shard in range(reader.num_shards):
        path = Path(reader.data_path(shard))
        good = path.read_bytes()
        for pos in range(len(good)):
            owner = _owner(reader, shard, pos)
            owner = slice_owner.get(owner, owner)
            bad = bytearray(good)
            bad[pos] ^= 0x10
            path.write_bytes(bytes(bad))
            for key in reader.entries:
                if key == owner:
                    with pytest.raises(CheckpointCorruptError) as info:
                        reader.read(key)
                    assert repr(key) in str(info.value) and str(path) in str(info.value)
                else:
                    assert_same_value(reader.read(key), good_values[key], key)
        path.write_bytes(good)


def test_flipped_byte_names_key_and_file(tf, dtype_ckpt, tmp_path):
    prefix = _copy_ckpt(dtype_ckpt[0], tmp_path)
    reader = BundleReader(prefix)
    for key in ["float32", "strings/long", "strings/mixed", "bool"]:
        entry = reader.entries[key]
        path = Path(reader.data_path(entry.shard_id))
        good = path.read_bytes()
        good_value = reader.read(key)
        bad = bytearray(good)
        bad[entry.offset + entry.size - 1] ^= 0x01
        path.write_bytes(bytes(bad))
        with pytest.raises(CheckpointCorruptError, match="checksum mismatch") as info:
            reader.read(key)
        assert repr(key) in str(info.value) and str(path) in str(info.value)
        with pytest.raises(CheckpointCorruptError):
            reader.read_many([key, "int8"])
        # Without verification the damaged value comes back unchecked.
        damaged = reader.read(key, verify=False)
        assert damaged.reshape(-1).tolist() != good_value.reshape(-1).tolist()
        path.write_bytes(good)


def test_truncated_data_file(tf, saver_ckpt, tmp_path):
    prefix = _copy_ckpt(saver_ckpt, tmp_path)
    reader = BundleReader(prefix)
    entry = reader.entries["dense/kernel"]
    path = Path(reader.data_path(entry.shard_id))
    cut = entry.offset + entry.size - 1
    with open(path, "r+b") as f:
        f.truncate(cut)
    with pytest.raises(CheckpointCorruptError) as info:
        reader.read("dense/kernel")
    message = str(info.value)
    assert "'dense/kernel'" in message and str(path) in message
    assert str(entry.offset + entry.size) in message and f"has {cut}" in message


def test_missing_shard(tf, saver_ckpt, tmp_path):
    prefix = _copy_ckpt(saver_ckpt, tmp_path)
    reader = BundleReader(prefix)
    gone = reader.data_path(1)
    os.remove(gone)
    assert reader.missing_files() == [gone]
    on_shard_1 = [k for k, e in reader.entries.items() if not e.slices and e.shard_id == 1]
    on_shard_0 = [k for k, e in reader.entries.items() if not e.slices and e.shard_id == 0]
    assert on_shard_1 and on_shard_0
    for key in on_shard_1 + ["emb"]:  # emb has a slice on shard 1
        with pytest.raises(CheckpointNotFoundError, match=gone):
            reader.read(key)
    for key in on_shard_0:
        reader.read(key)
    with pytest.raises(CheckpointNotFoundError):
        reader.read_many(reader.entries)


@pytest.mark.pure
def test_parsing_the_index_pauses_the_garbage_collector(tmp_path, monkeypatch):
    """A full collection with TensorFlow's heap loaded costs 100+ ms; parsing makes no
    cycles, so it runs with the collector off, and leaves it as it found it."""
    import gc

    prefix = str(tmp_path / "c")
    write_bundle(prefix, {"a": np.ones(3, np.float32), "b": np.zeros(2, np.float64)})
    seen = []
    real = BundleReader._init_from_table

    def spy(self, table):
        seen.append(gc.isenabled())
        return real(self, table)

    monkeypatch.setattr(BundleReader, "_init_from_table", spy)
    assert gc.isenabled()
    BundleReader(prefix)
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        BundleReader(prefix)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
