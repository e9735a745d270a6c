"""apply_plan: bit-exact values, partitions, all or nothing, memory bound, devices.

Runs on both legs (TF 2.15 and TF 2.21). Checkpoints are written by TensorFlow
itself (``Saver`` in eager mode, or a TF1 graph for stored slices).
"""

import gc
import json
import logging
import mmap
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from support.bundles import same_bits

tf = pytest.importorskip("tensorflow")

import tf1compat_init as tci  # noqa: E402
from tf1compat_init.apply import apply_plan  # noqa: E402
from tf1compat_init.apply._assigner import Assigner  # noqa: E402
from tf1compat_init.bundle import fastread as _fastread  # noqa: E402
from tf1compat_init.bundle.crc import crc32c  # noqa: E402
from tf1compat_init.bundle.fastread import (  # noqa: E402
    FastReader,
    ReadRequest,
    aligned_empty,
    crc32c_combine,
)
from tf1compat_init.variables import Part, TargetVariable, collect_targets, target_specs  # noqa: E402

ml_dtypes = pytest.importorskip("ml_dtypes")

# "stream" with a tiny window takes the two-pass path even on these small checkpoints;
# with the default window they fit, and are staged whole ("stream_auto").
MODES = {
    "stream": {"staging": "stream", "window_bytes": 1024},
    # Every tensor above 16 bytes is "big": its buffer comes from TensorFlow's allocator.
    "stream_tf_buffers": {"staging": "stream", "window_bytes": 16},
    "stream_auto": {"staging": "stream"},
    "all": {"staging": "all"},
}
STAGINGS = list(MODES)

NUMERIC = [
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
]


def _np_dtype(name):
    return np.dtype(getattr(ml_dtypes, name)) if name == "bfloat16" else np.dtype(name)


def _random_value(name, shape, rng):
    """Random bit patterns (NaN payloads, -0.0, inf, denormals included)."""
    if name == "string":
        n = int(np.prod(shape))
        flat = [rng.bytes(int(rng.integers(0, 300))) for _ in range(n)]
        flat[0] = b""
        return np.array(flat, dtype=object).reshape(shape)
    dtype = _np_dtype(name)
    if name == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _save(prefix, values):
    """A name-based checkpoint (keys = names) written by TF's Saver in eager mode."""
    variables = {k: tf.Variable(v) for k, v in values.items()}
    return tf.compat.v1.train.Saver(var_list=variables).save(None, prefix)


def _fresh_variables(values, fill=7):
    """Variables of the same shapes/dtypes, holding a recognisable old value."""
    out = {}
    for k, v in values.items():
        v = np.asarray(v)
        if v.dtype.hasobject:
            old = np.full(v.shape, b"old", dtype=object)
        else:
            old = np.full(v.shape, fill).astype(v.dtype)
        out[k] = tf.Variable(old, name=k.replace("/", "_"))
    return out


def _targets(variables):
    return collect_targets(variables.values(), name_of=lambda v: _NAMES[id(v)])


_NAMES: dict = {}


def _named(variables):
    for k, v in variables.items():
        _NAMES[id(v)] = k
    return _targets(variables)


def _restore(prefix, variables, **kwargs):
    targets = _named(variables)
    plan = tci.plan_restore(prefix, target_specs(targets))
    return apply_plan(plan, targets, **kwargs)


@pytest.fixture(scope="module")
def all_dtypes(tmp_path_factory):
    rng = np.random.default_rng(5)
    values = {f"v/{name}": _random_value(name, (5, 7), rng) for name in NUMERIC + ["string"]}
    values["v/scalar"] = np.float32(3.5)
    values["v/empty"] = np.zeros((0, 3), np.float32)
    values["v/big"] = _random_value("float32", (300, 1000), rng)  # several pieces when split
    prefix = _save(str(tmp_path_factory.mktemp("dtypes") / "model.ckpt"), values)
    return prefix, values


@pytest.mark.parametrize("staging", STAGINGS)
def test_values_bit_exact_every_dtype(all_dtypes, staging, monkeypatch):
    prefix, values = all_dtypes
    monkeypatch.setattr(_fastread, "PIECE_BYTES", 64 << 10)  # split big tensors, batch small
    variables = _fresh_variables(values)
    report = _restore(prefix, variables, **MODES[staging])
    assert report.applied and len(report.loaded) == len(values)
    for k, expected in values.items():
        got = variables[k].numpy()
        assert same_bits(got, expected), k


def test_values_equal_tf_reader(all_dtypes):
    """Differential: what apply_plan assigns is what tf.train.load_checkpoint reads."""
    prefix, values = all_dtypes
    variables = _fresh_variables(values)
    _restore(prefix, variables)
    reader = tf.train.load_checkpoint(prefix)
    for k in values:
        assert same_bits(variables[k].numpy(), reader.get_tensor(k)), k


def test_numeric_buffers_are_adopted_without_copy(all_dtypes, caplog):
    prefix, values = all_dtypes
    variables = _fresh_variables(values)
    with caplog.at_level("INFO", logger="tf1compat_init.apply"):
        _restore(prefix, variables)
    line = next(r.getMessage() for r in caplog.records if "adopted without a copy" in r.message)
    adopted = int(line.split("MiB, ")[1].split(" adopted")[0])
    # float/int/uint/complex always; bool on TF >= 2.16; not bfloat16 or strings.
    assert adopted >= 13, line


def test_resource_variables_keep_identity_and_device(all_dtypes):
    prefix, values = all_dtypes
    with tf.device("/CPU:0"):
        variables = _fresh_variables({"v/float32": values["v/float32"]})
    var = variables["v/float32"]
    handle_before, device_before = var.handle, var.device
    _restore(prefix, variables)
    assert var.handle is handle_before
    assert var.device == device_before and "CPU:0" in var.device
    assert var.value().device == device_before
    np.testing.assert_array_equal(var.numpy(), values["v/float32"])
    var.assign_add(np.ones_like(values["v/float32"]))  # still a working variable
    np.testing.assert_array_equal(var.numpy(), values["v/float32"] + 1)


def test_adopted_buffer_is_private_to_its_variable(tmp_path):
    """Two targets loading one key must not share memory that TF updates in place."""
    value = np.arange(12, dtype=np.float32).reshape(3, 4)
    prefix = _save(str(tmp_path / "m"), {"w": value})
    a = tf.Variable(np.zeros((3, 4), np.float32))
    b = tf.Variable(np.zeros((3, 4), np.float32))
    _NAMES[id(a)], _NAMES[id(b)] = "a", "b"
    targets = _targets({"a": a, "b": b})
    plan = tci.plan_restore(prefix, target_specs(targets), {"w": "a"})
    plan2 = tci.plan_restore(prefix, target_specs(targets), {"w": "b"})
    plan.entries += plan2.entries
    apply_plan(plan, targets)
    a.assign_add(np.ones((3, 4), np.float32))
    np.testing.assert_array_equal(b.numpy(), value)
    np.testing.assert_array_equal(a.numpy(), value + 1)


# -- partitions -----------------------------------------------------------------


def _slice_initializer(full):
    def init(shape, dtype=None, partition_info=None):
        offset = partition_info.var_offset if partition_info is not None else [0] * len(shape)
        index = tuple(slice(o, o + int(n)) for o, n in zip(offset, shape, strict=True))
        return tf.constant(full[index])

    return init


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory):
    """A TF1 graph checkpoint: one partitioned variable (stored in slices) and a plain one."""
    rng = np.random.default_rng(2)
    emb = rng.standard_normal((10, 6)).astype(np.float32)
    dense = rng.standard_normal((6, 9)).astype(np.float32)
    prefix = str(tmp_path_factory.mktemp("parts") / "model.ckpt")
    with tf.Graph().as_default():
        tf.compat.v1.get_variable(
            "emb",
            shape=emb.shape,
            initializer=_slice_initializer(emb),
            partitioner=tf.compat.v1.fixed_size_partitioner(3),
        )
        tf.compat.v1.get_variable("dense", initializer=dense)
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            saver.save(sess, prefix)
    return prefix, {"emb": emb, "dense": dense}


def _partition(name, full, splits, axis):
    """Eager variables carrying TF's SaveSliceInfo, as a partitioner makes them."""
    parts, start = [], 0
    for i, size in enumerate(splits):
        shape = list(full.shape)
        shape[axis] = size
        offset = [0] * full.ndim
        offset[axis] = start
        v = tf.Variable(np.full(shape, 7, full.dtype), name=f"{name}/part_{i}")
        v._set_save_slice_info(tf.Variable.SaveSliceInfo(name, list(full.shape), offset, shape))
        parts.append(v)
        start += size
    return parts


@pytest.mark.parametrize("staging", STAGINGS)
@pytest.mark.parametrize(
    "axis,emb_splits,dense_splits",
    [(0, (4, 3, 3), (2, 4)), (0, (5, 5), (6,)), (1, (2, 4), (3, 3, 3)), (1, (3, 3), (1, 8))],
)
def test_partitioned_targets(partitioned, staging, axis, emb_splits, dense_splits):
    prefix, values = partitioned
    emb_parts = _partition("emb", values["emb"], emb_splits, axis)  # repartitioned on load
    dense_parts = _partition("dense", values["dense"], dense_splits, axis)
    targets = collect_targets(emb_parts + dense_parts)
    assert targets["emb"].partitioned
    plan = tci.plan_restore(prefix, target_specs(targets))
    apply_plan(plan, targets, **MODES[staging])
    for name, parts in (("emb", emb_parts), ("dense", dense_parts)):
        got = np.concatenate([p.numpy() for p in parts], axis=axis)
        assert same_bits(got, values[name]), name


def test_stored_slices_into_plain_variable(partitioned):
    prefix, values = partitioned
    info = tci.open_checkpoint(prefix)
    assert info.bundle.entries["emb"].slices  # stored in slices: read in memory, not streamed
    variables = _fresh_variables(values)
    _restore(prefix, variables)
    for k, v in values.items():
        assert same_bits(variables[k].numpy(), v)


# -- all or nothing ----------------------------------------------------------------


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    rng = np.random.default_rng(3)
    values = {f"layer_{i}/kernel": _random_value("float32", (64, 33), rng) for i in range(6)}
    values["names"] = _random_value("string", (4,), rng)
    values["layer_0/bias"] = _random_value("float64", (33,), rng)
    prefix = _save(str(tmp_path_factory.mktemp("pristine") / "model.ckpt"), values)
    return prefix, values


def _copy_checkpoint(prefix, directory):
    src_dir = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    for name in os.listdir(src_dir):
        if name.startswith(base + "."):
            shutil.copy(os.path.join(src_dir, name), directory / name)
    return str(directory / base)


def _entries_in_file_order(prefix):
    entries = tci.open_checkpoint(prefix).bundle.entries
    return sorted((e for e in entries.values() if e.size), key=lambda e: e.offset)


def _flip_byte(prefix, entry, at=0):
    path = f"{prefix}.data-{entry.shard_id:05d}-of-00001"
    with open(path, "r+b") as f:
        f.seek(entry.offset + at)
        b = f.read(1)
        f.seek(entry.offset + at)
        f.write(bytes([b[0] ^ 0x40]))


def _assert_all_old(variables):
    for k, v in variables.items():
        got = v.numpy()
        if got.dtype.hasobject:
            assert all(x == b"old" for x in got.reshape(-1)), k
        else:
            assert (got == 7).all(), k


@pytest.mark.parametrize("staging", STAGINGS)
@pytest.mark.parametrize("which", ["second", "last", "string"])
def test_corrupt_tensor_changes_nothing(pristine, tmp_path, staging, which):
    prefix, values = pristine
    prefix = _copy_checkpoint(prefix, tmp_path)
    entries = _entries_in_file_order(prefix)
    if which == "second":
        entry = entries[1]
    elif which == "last":
        entry = entries[-1]
    else:
        entry = next(e for e in entries if e.key == "names")
    _flip_byte(prefix, entry, at=min(5, entry.size - 1))
    variables = _fresh_variables(values)
    with pytest.raises(tci.CheckpointCorruptError, match=entry.key) as e:
        _restore(prefix, variables, **MODES[staging])
    assert "checksum" in str(e.value)
    _assert_all_old(variables)


def test_corruption_found_after_reads_began(pristine, tmp_path, monkeypatch):
    """The fault appears after the first tensors were read and checked: still nothing assigned."""
    prefix, values = pristine
    prefix = _copy_checkpoint(prefix, tmp_path)
    entries = [e for e in _entries_in_file_order(prefix) if e.dtype != "string"]
    real = _fastread._crc_views
    calls = []

    def crc_then_corrupt(jobs):
        out = real(jobs)
        if not calls:  # after the first batch was checksummed, damage a later tensor
            _flip_byte(prefix, entries[-1], at=3)
        calls.append(len(jobs))
        return out

    monkeypatch.setattr(_fastread, "_crc_views", crc_then_corrupt)
    monkeypatch.setattr(_fastread, "PIECE_BYTES", 4096)  # one task per tensor or so
    variables = _fresh_variables(values)
    with pytest.raises(tci.CheckpointCorruptError, match=entries[-1].key):
        _restore(prefix, variables, threads=1, window_bytes=1024)
    assert len(calls) > 1
    _assert_all_old(variables)


def test_corruption_found_after_staged_reads_began(pristine, tmp_path, monkeypatch):
    """Staging whole: the fault appears after the first buffers were filled and checked."""
    prefix, values = pristine
    prefix = _copy_checkpoint(prefix, tmp_path)
    entries = [e for e in _entries_in_file_order(prefix) if e.dtype != "string"]
    real = _fastread._run_task
    calls = []

    def run_then_corrupt(task):
        out = real(task)
        if not calls:
            _flip_byte(prefix, entries[-1], at=3)
        calls.append(1)
        return out

    monkeypatch.setattr(_fastread, "_run_task", run_then_corrupt)
    monkeypatch.setattr(_fastread, "PIECE_BYTES", 4096)
    variables = _fresh_variables(values)
    with pytest.raises(tci.CheckpointCorruptError, match=entries[-1].key):
        _restore(prefix, variables, threads=1, staging="all")
    assert len(calls) > 1
    _assert_all_old(variables)


@pytest.mark.parametrize("window,two_pass", [(1024, True), (None, False)])
def test_small_restores_are_staged_whole(pristine, monkeypatch, window, two_pass):
    prefix, values = pristine
    verified = []
    real = FastReader.verify
    monkeypatch.setattr(
        FastReader, "verify", lambda self, keys: verified.append(1) or real(self, keys)
    )
    variables = _fresh_variables(values)
    kwargs = {} if window is None else {"window_bytes": window}
    _restore(prefix, variables, **kwargs)
    assert bool(verified) is two_pass
    for k, v in values.items():
        assert same_bits(variables[k].numpy(), v), k


def test_stream_stages_what_fits_its_window_and_verifies_only_the_rest(
    tmp_path, monkeypatch, caplog
):
    """A restore larger than the window: the first values in file order that fit the
    bound (window + largest) are staged whole, in one pass; only the rest take the
    separate checksum pass, and the read-ahead stays within the bound."""
    tensor = 64 << 10
    values = {f"t{i:02d}": np.full(tensor // 4, i, np.float32) for i in range(12)}
    prefix = _save(str(tmp_path / "ckpt"), values)
    variables = _fresh_variables(values)
    verified = []
    real = FastReader.verify
    monkeypatch.setattr(
        FastReader, "verify", lambda self, keys: verified.append(sorted(keys)) or real(self, keys)
    )
    with caplog.at_level(logging.INFO, logger="tf1compat_init.apply"):
        _restore(prefix, variables, window_bytes=2 * tensor)
    # window (2 tensors) + largest (1 tensor): the first 3 are staged, 9 verified.
    assert verified == [[f"t{i:02d}" for i in range(3, 12)]]
    (record,) = [r for r in caplog.records if "peak read-ahead" in r.msg]
    assert 0 < record.args[3] * 2**20 <= 3 * tensor
    for k, v in values.items():
        assert same_bits(variables[k].numpy(), v), k


@pytest.mark.parametrize("staging", STAGINGS)
def test_truncated_data_file_changes_nothing(pristine, tmp_path, staging):
    prefix, values = pristine
    prefix = _copy_checkpoint(prefix, tmp_path)
    info = tci.open_checkpoint(prefix)
    last = _entries_in_file_order(prefix)[-1]
    with open(info.data_files[0], "r+b") as f:
        f.truncate(last.offset + last.size // 2)
    variables = _fresh_variables(values)
    targets = _named(variables)
    plan = tci.plan_restore(info, target_specs(targets))
    with pytest.raises(tci.CheckpointCorruptError, match="too short"):
        apply_plan(plan, targets, **MODES[staging])
    _assert_all_old(variables)


def test_missing_data_file_changes_nothing(pristine, tmp_path):
    prefix, values = pristine
    prefix = _copy_checkpoint(prefix, tmp_path)
    info = tci.open_checkpoint(prefix)
    variables = _fresh_variables(values)
    targets = _named(variables)
    plan = tci.plan_restore(info, target_specs(targets))
    os.remove(info.data_files[0])
    with pytest.raises(tci.CheckpointNotFoundError, match="does not exist"):
        apply_plan(plan, targets)
    _assert_all_old(variables)


def test_variable_changed_after_planning_changes_nothing(pristine):
    prefix, values = pristine
    variables = _fresh_variables(values)
    targets = _named(variables)
    plan = tci.plan_restore(prefix, target_specs(targets))
    other = tf.Variable(np.zeros((64, 34), np.float32))  # a new variable under an old name
    _NAMES[id(other)] = "layer_5/kernel"
    targets = dict(targets, **_targets({"layer_5/kernel": other}))
    with pytest.raises(ValueError, match="layer_5/kernel.*nothing was assigned"):
        apply_plan(plan, targets)
    _assert_all_old(variables)


def test_graph_mode_is_refused(pristine):
    prefix, values = pristine
    with tf.Graph().as_default():
        v = tf.compat.v1.Variable(np.zeros((33,), np.float64), name="b")
        _NAMES[id(v)] = "layer_0/bias"
        targets = _targets({"layer_0/bias": v})
        plan = tci.plan_restore(prefix, target_specs(targets))
        with pytest.raises(RuntimeError, match="graph mode"):
            apply_plan(plan, targets)


def test_graph_variables_are_refused_before_any_assign(pristine):
    prefix, values = pristine
    variables = _fresh_variables({"layer_0/kernel": values["layer_0/kernel"]})
    with tf.Graph().as_default():
        g = tf.compat.v1.Variable(np.zeros((33,), np.float64), name="b")
    _NAMES[id(g)] = "layer_0/bias"
    targets = {**_named(variables), **_targets({"layer_0/bias": g})}
    plan = tci.plan_restore(prefix, target_specs(targets))
    with pytest.raises(RuntimeError, match="layer_0/bias belongs to a tf.Graph"):
        apply_plan(plan, targets)
    _assert_all_old(variables)


def test_bad_staging_is_refused(pristine):
    prefix, values = pristine
    plan = tci.plan_restore(prefix, {})
    with pytest.raises(ValueError, match="Invalid value for argument staging"):
        apply_plan(plan, {}, staging="lazy")


def test_empty_plan_is_applied():
    plan = tci.plan_restore(_FakeInfo({}), {})
    assert apply_plan(plan, {}).applied


# -- checkpoints without a native reader --------------------------------------------


class _FakeInfo:
    """A checkpoint that only offers read(): the engine's in-memory fallback."""

    def __init__(self, values):
        self.values = values
        self.prefix = "/fake/model.ckpt"
        self.variables = {
            k: tci.VariableInfo(
                np.shape(v), "string" if np.asarray(v).dtype.hasobject else np.asarray(v).dtype.name
            )
            for k, v in values.items()
        }

    def read(self, keys):
        return {k: self.values[k] for k in keys}


def test_checkpoint_without_bundle_uses_read(partitioned):
    _, values = partitioned
    info = _FakeInfo(values)
    parts = _partition("emb", values["emb"], (6, 4), 0)
    dense = tf.Variable(np.zeros((6, 9), np.float32))
    _NAMES[id(dense)] = "dense"
    targets = {**collect_targets(parts), **_targets({"dense": dense})}
    apply_plan(tci.plan_restore(info, target_specs(targets)), targets)
    np.testing.assert_array_equal(np.concatenate([p.numpy() for p in parts]), values["emb"])
    np.testing.assert_array_equal(dense.numpy(), values["dense"])


# -- the fast reader on its own -----------------------------------------------------


@pytest.mark.parametrize("align", [16, 64, 4096])
@pytest.mark.parametrize("dtype", ["float32", "complex128", "bool", "bfloat16"])
def test_aligned_empty(align, dtype):
    for shape in [(0,), (), (3, 5), (1000,)]:
        a = aligned_empty(shape, _np_dtype(dtype), align)
        assert a.shape == shape and a.dtype == _np_dtype(dtype) and a.flags.c_contiguous
        assert a.size == 0 or a.ctypes.data % align == 0


def test_target_names_drop_only_an_output_suffix():
    from types import SimpleNamespace

    from tf1compat_init.variables import target_name

    for name, expected in [
        ("dense/kernel:0", "dense/kernel"),
        ("dense/kernel:12", "dense/kernel"),
        ("dense/kernel", "dense/kernel"),
        ("odd:name", "odd:name"),  # not an output suffix
        ("trailing:", "trailing:"),
    ]:
        assert target_name(SimpleNamespace(name=name)) == expected, name


def test_variable_shapes_of_every_kind():
    from types import SimpleNamespace

    from tf1compat_init.variables import variable_shape

    assert variable_shape(tf.Variable(np.zeros((2, 3), np.float32))) == (2, 3)
    assert variable_shape(SimpleNamespace(shape=tf.TensorShape(None))) is None
    assert variable_shape(SimpleNamespace(shape=tf.TensorShape([None, 4]))) == (None, 4)
    assert variable_shape(SimpleNamespace(shape=(np.int64(5), None))) == (5, None)  # Keras 3


def test_crc32c_combine_matches_direct():
    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, size=70_000, dtype=np.uint8)
    whole = crc32c(data)
    for cut in [0, 1, 7, 8, 63, 64, 4095, 4096, 65_537, 69_999, 70_000]:
        a, b = data[:cut], data[cut:]
        assert crc32c_combine(crc32c(a), crc32c(b), b.size) == whole, cut
    # three pieces, left to right
    a, b, c = data[:100], data[100:5000], data[5000:]
    crc = crc32c_combine(crc32c_combine(crc32c(a), crc32c(b), b.size), crc32c(c), c.size)
    assert crc == whole


def test_stream_keeps_memory_bounded(tmp_path):
    rng = np.random.default_rng(4)
    values = {f"t{i:02d}": _random_value("float32", (256, 256), rng) for i in range(12)}  # 256 KiB
    prefix = _save(str(tmp_path / "m"), values)
    info = tci.open_checkpoint(prefix)
    tensor = 256 * 256 * 4
    with FastReader(info.bundle, threads=2, window_bytes=tensor) as reader:
        reader.verify(values)
        seen = {}
        for request, buffer, owner in reader.stream([ReadRequest(k) for k in values]):
            seen[request.key] = buffer.copy()
            assert buffer.ctypes.data % 64 == 0 and owner is None
        assert reader.peak_inflight_bytes <= 2 * tensor  # largest + window, not 12 tensors
    assert set(seen) == set(values)
    for k, v in values.items():
        assert same_bits(seen[k], v)


def test_release_pages_drops_only_whole_pages_inside_each_range(monkeypatch):
    calls = []
    monkeypatch.setattr(_fastread, "_drop_pages", lambda a, n: calls.append((a, n)))
    page = mmap.PAGESIZE
    _fastread._release_pages(
        [
            (10 * page + 1, 3 * page),  # unaligned: only the 2 pages wholly inside
            (20 * page, 2 * page),  # aligned: both pages
            (30 * page + 5, page),  # no whole page inside: nothing
            (40 * page, 0),  # empty
        ]
    )
    assert calls == [(11 * page, 2 * page), (20 * page, 2 * page)]


def test_stream_releases_the_mapped_pages_it_copied(tmp_path, monkeypatch):
    """Without ``preadv``, copies read the file mapping: every byte a copy read is handed
    to the page release, big tensors (in pieces) and grouped small ones alike; the values
    stay exact."""
    monkeypatch.setattr(_fastread, "_PREAD", False)
    monkeypatch.setattr(_fastread, "PIECE_BYTES", 64 << 10)  # the big tensor: 4 pieces
    rng = np.random.default_rng(5)
    values = {"big": _random_value("float32", (256, 256), rng)}  # 256 KiB
    values.update({f"s{i}": _random_value("float32", (8, 8), rng) for i in range(20)})
    prefix = _save(str(tmp_path / "r"), values)
    info = tci.open_checkpoint(prefix)
    released = []
    real = _fastread._release_pages
    monkeypatch.setattr(_fastread, "_release_pages", lambda r: (released.extend(r), real(r)))
    with FastReader(info.bundle, threads=2) as reader:
        seen = {
            loaded.request.key: loaded.buffer.copy()
            for loaded in reader.stream([ReadRequest(k) for k in values])
        }
        base = reader._addresses[0]
        covered = np.zeros(reader._sizes[0], dtype=bool)
        for address, length in released:
            covered[address - base : address - base + length] = True
        for key in values:
            e = info.bundle.entries[key]
            assert covered[e.offset : e.offset + e.size].all(), key
        # Pages dropped from the mapping read back as the file's bytes.
        with open(info.data_files[0], "rb") as f:
            assert bytes(reader._bases[0]) == f.read()
    for key, value in values.items():
        assert same_bits(seen[key], value), key


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "streamed"])
def test_staged_copies_read_with_pread_streamed_ones_from_the_mapping(
    tmp_path, monkeypatch, staged
):
    """A checksumming (staging) stream reads bytes nothing has mapped yet: its copies (big
    pieces and groups of small tensors) use ``preadv`` and touch no mapped page. A plain
    stream follows the verify pass, which mapped the bytes: it copies from the mapping and
    drops the pages. Values exact either way."""
    assert _fastread._PREAD  # Linux
    monkeypatch.setattr(_fastread, "PIECE_BYTES", 64 << 10)
    released = []
    real_release = _fastread._release_pages
    monkeypatch.setattr(
        _fastread, "_release_pages", lambda r: (released.extend(r), real_release(r))
    )
    reads = []
    real = _fastread._read_into
    monkeypatch.setattr(
        _fastread, "_read_into", lambda src, dst: (reads.append(src), real(src, dst))
    )
    rng = np.random.default_rng(7)
    values = {"big": _random_value("float32", (256, 256), rng)}
    values.update({f"s{i}": _random_value("float32", (8, 8), rng) for i in range(20)})
    prefix = _save(str(tmp_path / "p"), values)
    info = tci.open_checkpoint(prefix)
    with FastReader(info.bundle, threads=2) as reader:
        seen = {
            x.request.key: x.buffer.copy()
            for x in reader.stream([ReadRequest(k) for k in values], crc=staged)
        }
    for key, value in values.items():
        assert same_bits(seen[key], value), key
    if staged:
        assert not released
        assert {r.path for r in reads} == set(info.data_files)
        assert len(reads) == 5  # the 4 pieces of "big", then one run for the 20 neighbours
    else:
        assert not reads
        entries = info.bundle.entries
        assert sum(n for _, n in released) == sum(entries[k].size for k in values)


def test_a_data_file_truncated_during_the_copies_is_an_error_not_a_crash(tmp_path):
    """Truncated in place after the reader checked its size: the copy finds the end of
    the file and raises, naming it (a mapped copy would die of SIGBUS)."""
    rng = np.random.default_rng(8)
    values = {
        "a": _random_value("float32", (64, 64), rng),
        "b": _random_value("float32", (64,), rng),
    }
    prefix = _save(str(tmp_path / "t"), values)
    info = tci.open_checkpoint(prefix)
    data = info.data_files[0]
    with FastReader(info.bundle, threads=2) as reader:
        for key in values:
            reader._checked(key)  # sizes checked and the file opened, as a restore does first
        os.truncate(data, info.bundle.entries["a"].offset + 100)
        with pytest.raises(tci.CheckpointCorruptError, match="truncated during the restore") as e:
            list(reader.stream([ReadRequest(k) for k in values], crc=True))
    assert data in str(e.value)


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 3 * 4096 + 123])
def test_copy_and_checksum_copies_and_checksums_in_chunks(monkeypatch, n):
    monkeypatch.setattr(_fastread, "INTERLEAVE_BYTES", 4096)
    src = np.random.default_rng(n).integers(0, 256, size=n, dtype=np.uint8)
    dst = aligned_empty((n,), np.uint8)
    crc = _fastread._copy_and_checksum(src, dst, memoryview(dst))
    assert crc == crc32c(src) and np.array_equal(dst, src)


def test_copy_and_checksum_declines_what_is_not_its_whole_destination():
    src = np.arange(64, dtype=np.uint8)
    dst = aligned_empty((64,), np.uint8)
    dst[...] = 0
    other = aligned_empty((64,), np.uint8)
    for checked in [
        memoryview(dst)[8:],  # part of the destination
        memoryview(dst)[:32],
        memoryview(other),  # as long, but another buffer's
    ]:
        assert _fastread._copy_and_checksum(src, dst, checked) is None
    floats = aligned_empty((16,), np.float32)
    checked = memoryview(floats.view(np.uint8))
    assert _fastread._copy_and_checksum(src.view(np.float32), floats, checked) is None
    assert not dst.any()  # declined before copying anything
    assert _fastread._copy_and_checksum(src, dst, memoryview(dst[:])) == crc32c(src)  # same bytes


def test_staged_big_tensors_are_checksummed_chunk_by_chunk(tmp_path, monkeypatch):
    """Pieces of big tensors staged with their checksums take the chunked copy, whose
    checksums are exact: pristine values load, one flipped byte late in a piece (in a
    chunk after the first) is caught and named."""
    monkeypatch.setattr(_fastread, "PIECE_BYTES", 64 << 10)  # 256 KiB: 4 pieces
    monkeypatch.setattr(_fastread, "INTERLEAVE_BYTES", 5000)  # does not divide a piece
    chunked = []
    real = _fastread._copy_and_checksum
    monkeypatch.setattr(
        _fastread, "_copy_and_checksum", lambda *a: chunked.append(real(*a)) or chunked[-1]
    )
    rng = np.random.default_rng(6)
    values = {"big": _random_value("float32", (256, 256), rng)}
    values["small"] = _random_value("float32", (4,), rng)
    prefix = _save(str(tmp_path / "c"), values)
    info = tci.open_checkpoint(prefix)
    requests = [ReadRequest(k) for k in values]
    with FastReader(info.bundle, threads=2, window_bytes=1024) as reader:
        seen = {x.request.key: x.buffer.copy() for x in reader.stream(requests, crc=True)}
    assert len(chunked) == 5 and None not in chunked  # 4 pieces; "small" is a one-run group
    for key, value in values.items():
        assert same_bits(seen[key], value), key
    entry = info.bundle.entries["big"]
    _flip_byte(prefix, entry, at=3 * (64 << 10) + 40_000)
    info = tci.open_checkpoint(prefix)
    with FastReader(info.bundle, threads=2, window_bytes=1024) as reader:
        with pytest.raises(tci.CheckpointCorruptError, match="big"):
            list(reader.stream(requests, crc=True))


@pytest.mark.parametrize("threshold", [0, 1 << 20], ids=["allocated", "below_threshold"])
def test_stream_groups_small_tensors_in_buffers_from_the_allocator(
    tmp_path, monkeypatch, threshold
):
    """Groups of small tensors land in byte buffers the caller allocates (from
    ALLOCATED_GROUP_BYTES on; smaller ones in the reader's own memory), big tensors in
    buffers of their own shape; where the allocator declines, the reader's memory serves."""
    monkeypatch.setattr(_fastread, "ALLOCATED_GROUP_BYTES", threshold)
    rng = np.random.default_rng(7)
    values = {f"s{i}": _random_value("float32", (8, 8), rng) for i in range(6)}
    values["big"] = _random_value("float32", (64, 64), rng)  # 16 KiB
    prefix = _save(str(tmp_path / "g"), values)
    info = tci.open_checkpoint(prefix)
    given = []

    def allocate(shape, dtype):
        array = aligned_empty(shape, dtype)
        given.append((shape, dtype, array))
        return array, ("owner", len(given))

    for alloc in (allocate, lambda shape, dtype: None):
        given.clear()
        with FastReader(info.bundle, threads=2, window_bytes=4096) as reader:
            loaded = list(reader.stream([ReadRequest(k) for k in values], allocate=alloc))
        for x in loaded:
            assert same_bits(x.buffer, values[x.request.key]), x.request.key
        if alloc is not allocate:
            assert all(x.owner is None for x in loaded)
            continue
        byte_buffers = [a for _, dtype, a in given if dtype == np.uint8]
        bigs = [a for _, dtype, a in given if dtype != np.uint8]
        assert len(bigs) == 1 and bool(byte_buffers) == (threshold == 0)
        for x in loaded:
            if x.request.key == "big":
                assert x.owner is not None and x.buffer is bigs[0]
                continue
            assert x.owner is None  # a grouped view keeps its buffer alive itself
            start = x.buffer.ctypes.data
            inside = any(
                a.ctypes.data <= start and start + x.buffer.nbytes <= a.ctypes.data + a.nbytes
                for a in byte_buffers
            )
            assert inside == (threshold == 0), x.request.key


def test_allocated_views_keep_their_memory_after_the_tensor_goes():
    """The stream drops the tensor behind a group's buffer and keeps only views of it:
    TensorFlow's view must keep the memory alive, or the next allocation reuses it."""
    assigner = Assigner()
    got = assigner.allocate((1 << 20,), np.dtype(np.uint8))
    assert got is not None
    view, tensor = got
    pattern = np.random.default_rng(8).integers(0, 256, size=view.size, dtype=np.uint8)
    view[...] = pattern
    part = np.ndarray((1000,), np.float32, buffer=view, offset=64)  # as the stream cuts
    del tensor, view, got
    gc.collect()
    others = [assigner.allocate((1 << 20,), np.dtype(np.uint8)) for _ in range(8)]
    for other, _ in others:
        other[...] = 0xFF
    assert np.array_equal(part.view(np.uint8), pattern[64 : 64 + 4000])


def test_stream_with_crc_detects_damage(pristine, tmp_path):
    prefix, values = pristine
    prefix = _copy_checkpoint(prefix, tmp_path)
    entry = _entries_in_file_order(prefix)[2]
    _flip_byte(prefix, entry, at=1)
    info = tci.open_checkpoint(prefix)
    keys = [k for k in values if k != "names"]
    with FastReader(info.bundle) as reader:
        with pytest.raises(tci.CheckpointCorruptError, match=entry.key):
            list(reader.stream([ReadRequest(k) for k in keys], crc=True))


# -- devices (CPU-only machines: two logical CPU devices, in a fresh process) ---------

_DEVICE_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, tempfile
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import tf1compat_init as tci
    from tf1compat_init.apply import apply_plan
    from tf1compat_init.variables import collect_targets, target_specs

    d = tempfile.mkdtemp()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(5, dtype=np.int64)
    src = {"a": tf.Variable(a), "b": tf.Variable(b), "m": tf.Variable(a)}
    prefix = tf.compat.v1.train.Saver(var_list=src).save(None, os.path.join(d, "m"))
    with tf.device("/CPU:1"):
        va = tf.Variable(np.zeros((3, 4), np.float32), name="a")
    with tf.device("/CPU:0"):
        vb = tf.Variable(np.zeros(5, np.int64), name="b")
    strategy = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    with strategy.scope():
        vm = tf.Variable(np.zeros((3, 4), np.float32), name="m")
    names = {id(va): "a", id(vb): "b", id(vm): "m"}
    before = {k: v.device for k, v in (("a", va), ("b", vb))}
    targets = collect_targets([va, vb, vm], name_of=lambda v: names[id(v)])
    plan = tci.plan_restore(prefix, target_specs(targets))
    apply_plan(plan, targets)
    out = {
        "before": before,
        "after": {"a": va.device, "b": vb.device},
        "value_device": {"a": va.value().device, "b": vb.value().device},
        "a_ok": bool((va.numpy() == a).all()),
        "b_ok": bool((vb.numpy() == b).all()),
        "replicas": [v.device for v in vm.values],
        "replicas_ok": [bool((v.numpy() == a).all()) for v in vm.values],
    }
    print("RESULT" + json.dumps(out))
    """
)


def test_device_placement_is_kept_across_devices(tmp_path):
    script = tmp_path / "devices.py"
    script.write_text(_DEVICE_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=180
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    assert line is not None, proc.stderr[-3000:]
    out = json.loads(line[len("RESULT") :])
    assert out["before"] == out["after"]
    assert out["after"]["a"].endswith("CPU:1") and out["after"]["b"].endswith("CPU:0")
    assert out["value_device"] == out["after"]
    assert out["a_ok"] and out["b_ok"]
    assert len(out["replicas"]) == 2 and all(out["replicas_ok"]), out


def test_views_with_raw_keys_take_the_fast_path(pristine):
    """A plan against a view under other names is lowered to stored keys by apply_plan."""
    from tf1compat_init.view import NamedView

    prefix, values = pristine
    info = tci.open_checkpoint(prefix)
    keys = {f"renamed/{k}": k for k in info.variables}
    view = NamedView(info, {n: info.variables[k] for n, k in keys.items()}, keys)
    view.read = None  # the fast path reads the base checkpoint, never the view
    numeric = {k: v for k, v in values.items() if k != "names"}
    variables = _fresh_variables(numeric)
    renamed = {f"renamed/{k}": v for k, v in variables.items()}
    targets = _named(renamed)
    apply_plan(tci.plan_restore(view, target_specs(targets)), targets)
    for k, v in numeric.items():
        assert same_bits(variables[k].numpy(), v), k


def test_adopted_buffers_outlive_the_restore(all_dtypes):
    """TF owns the adopted memory: freeing our references and reusing memory changes nothing."""
    import gc

    prefix, values = all_dtypes
    keys = ["v/big", "v/float64", "v/int8", "v/complex64"]
    variables = _fresh_variables({k: values[k] for k in keys})
    _restore(prefix, variables)
    gc.collect()
    junk = [np.full(values[k].nbytes + 64, 0xAB, np.uint8) for k in keys for _ in range(4)]
    for k in keys:
        assert same_bits(variables[k].numpy(), values[k]), k
    del junk


def _keras_layer_and_checkpoint(tmp_path):
    keras = pytest.importorskip("keras")
    layer = keras.layers.Dense(3)
    layer.build((None, 4))
    rng = np.random.default_rng(8)
    values = {"k": rng.standard_normal((4, 3)).astype(np.float32)}
    values["b"] = rng.standard_normal(3).astype(np.float32)
    prefix = _save(str(tmp_path / "m"), values)
    weights = {"k": layer.kernel, "b": layer.bias}
    targets = {
        name: TargetVariable(
            name, tuple(values[name].shape), "float32", (Part(w, (), tuple(w.shape)),)
        )
        for name, w in weights.items()
    }
    return keras, layer, values, prefix, weights, targets


def test_keras_weights_are_restored(tmp_path, monkeypatch):
    keras, layer, values, prefix, weights, targets = _keras_layer_and_checkpoint(tmp_path)
    inner = []
    real = Assigner._keras_inner
    monkeypatch.setattr(
        Assigner,
        "_keras_inner",
        lambda self, v: inner.append(real(self, v)) or inner[-1],
    )
    apply_plan(tci.plan_restore(prefix, target_specs(targets)), targets)
    keras3 = hasattr(keras, "StatelessScope")  # Keras 2 weights are plain tf.Variables
    assert len(inner) == (2 if keras3 else 0) and all(v is not None for v in inner)
    for name, w in weights.items():
        np.testing.assert_array_equal(np.asarray(w.numpy()), values[name])
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(np.asarray(layer(x)), x @ values["k"] + values["b"], rtol=1e-6)


@pytest.mark.tf221  # Keras 3 only: Keras 2 (the TF 2.15 leg) has no stateless scope
def test_keras_stateless_scope_collects_instead_of_assigning(tmp_path):
    keras, layer, values, prefix, weights, targets = _keras_layer_and_checkpoint(tmp_path)
    if not hasattr(keras, "StatelessScope"):
        pytest.skip("Keras 2 has no stateless scope")
    before = np.asarray(weights["k"].numpy()).copy()
    with keras.StatelessScope() as scope:
        apply_plan(tci.plan_restore(prefix, target_specs(targets)), targets)
        collected = scope.get_current_value(weights["k"])
    np.testing.assert_array_equal(np.asarray(weights["k"].numpy()), before)
    np.testing.assert_array_equal(np.asarray(collected), values["k"])


def test_tf_allocated_buffers_are_proven_shared(all_dtypes, monkeypatch):
    """Big buffers come from TensorFlow only where a write through the view is seen."""
    from tf1compat_init.apply import _assigner as apply_module

    prefix, values = all_dtypes
    monkeypatch.setattr(apply_module, "_SHARES_MEMORY", {"float64": False})  # as if it copied
    variables = _fresh_variables(values)
    _restore(prefix, variables, window_bytes=16)
    for k, v in values.items():
        assert same_bits(variables[k].numpy(), v), k
    shares = apply_module._SHARES_MEMORY
    assert shares["float64"] is False  # kept: float64 used numpy buffers instead
    assert shares["float32"] is True and shares["bfloat16"] is True and shares["bool"] is True
