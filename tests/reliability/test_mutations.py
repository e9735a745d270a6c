"""Property: random byte-level damage to a checkpoint gives only this library's errors.

Hypothesis flips, overwrites, inserts, deletes and truncates bytes of the ``.index`` or
of a ``.data`` shard of a small 2-shard checkpoint (floats, ints, bools, strings,
partitions stored as slices). Then the checkpoint is opened, every tensor read (checksums
verified) and restored into eager variables with ``apply_plan``. The only acceptable
outcomes:

- a :class:`~tf1compat_init.errors.Tf1CompatError` subclass (never a crash, a numpy or
  struct error, a ``MemoryError``, a TensorFlow error);
- or success with every value bit-identical to the pristine checkpoint's (damage that
  touched nothing read, such as the footer's padding or bytes appended to a shard):
  never a silent wrong value.

Bounded: 60 examples per property, no deadline, derandomized (the same examples on
every run, so CI is reproducible), and a per-example timeout that fails a hang instead
of waiting for it. ``RELIABILITY_EXAMPLES=5000`` runs that many random examples instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support import reliability as h  # noqa: E402

import tf1compat_init as tci  # noqa: E402
from tf1compat_init.apply import apply_plan  # noqa: E402
from tf1compat_init.errors import Tf1CompatError  # noqa: E402
from tf1compat_init.variables import collect_targets, target_specs  # noqa: E402

EXAMPLE_TIMEOUT_S = 20
#: RELIABILITY_EXAMPLES=N runs N random (not derandomized) examples per property, on demand.
_ON_DEMAND = int(os.environ.get("RELIABILITY_EXAMPLES", "0"))
SETTINGS = settings(
    max_examples=_ON_DEMAND or 60,
    deadline=None,
    derandomize=not _ON_DEMAND,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    prefix = h.write_rich(tmp_path_factory.mktemp("rich") / "model.ckpt")
    info = tci.open_checkpoint(prefix)
    values = info.read()
    assert len(info.data_files) == 2 and "b/vocab" in values
    files = {"index": prefix + ".index", "data0": info.data_files[0], "data1": info.data_files[1]}
    return prefix, values, {k: Path(p).read_bytes() for k, p in files.items()}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("mutated")


class Hang(Exception):
    """An example ran past EXAMPLE_TIMEOUT_S."""


@contextlib.contextmanager
def time_limit(seconds: float):
    def alarm(signum, frame):
        raise Hang(f"an example ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


MUTATION = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 2**31), st.integers(1, 255)),
    st.tuples(st.just("set"), st.integers(0, 2**31), st.integers(0, 255)),
    st.tuples(st.just("overwrite"), st.integers(0, 2**31), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("insert"), st.integers(0, 2**31), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("delete"), st.integers(0, 2**31), st.integers(1, 64)),
    st.tuples(st.just("truncate"), st.integers(0, 2**31), st.just(0)),
    st.tuples(st.just("append"), st.just(0), st.binary(min_size=1, max_size=64)),
)


def mutate(data: bytes, mutations) -> bytes:
    buf = bytearray(data)
    for kind, where, arg in mutations:
        pos = where % (len(buf) + 1)
        at = min(pos, len(buf) - 1) if buf else 0
        if kind == "flip" and buf:
            buf[at] ^= arg
        elif kind == "set" and buf:
            buf[at] = arg
        elif kind == "overwrite":
            buf[pos : pos + len(arg)] = arg
        elif kind == "insert":
            buf[pos:pos] = arg
        elif kind == "delete":
            del buf[pos : pos + arg]
        elif kind == "truncate":
            del buf[pos:]
        elif kind == "append":
            buf += arg
    return bytes(buf)


def _restore_all(prefix, pristine_values):
    """Opens, reads everything, restores the numeric keys into fresh variables."""
    info = tci.open_checkpoint(prefix)
    values = info.read()
    numeric = {k: v for k, v in pristine_values.items() if not v.dtype.hasobject}
    variables = {k: tf.Variable(tf.zeros_like(v), name=k) for k, v in numeric.items()}
    targets = collect_targets(variables.values())
    apply_plan(tci.plan_restore(info, target_specs(targets)), targets)
    return values, {k: v.numpy() for k, v in variables.items()}


def check(pristine, work, which, mutations, event=hypothesis.event):
    prefix, good_values, good_bytes = pristine
    shutil.rmtree(work, ignore_errors=True)
    target = h.copy_checkpoint(prefix, Path(work))
    info_files = {
        "index": target + ".index",
        **dict(zip(("data0", "data1"), h.data_files(target), strict=True)),
    }
    damaged = mutate(good_bytes[which], mutations)
    Path(info_files[which]).write_bytes(damaged)
    try:
        with time_limit(EXAMPLE_TIMEOUT_S):
            values, restored = _restore_all(target, good_values)
    except Tf1CompatError as e:
        event(f"error: {type(e).__name__}")
        return "error"  # the library said what is wrong
    event("no error: values identical")
    # No error: then nothing that was read may differ from the pristine checkpoint.
    assert values.keys() == good_values.keys()
    for k, v in good_values.items():
        assert h.same_bits(values[k], v), f"silent wrong value for {k} after {mutations}"
        if k in restored:
            assert h.same_bits(restored[k], v), f"silent wrong restore of {k} after {mutations}"
    return "identical"


@SETTINGS
@given(mutations=st.lists(MUTATION, min_size=1, max_size=3))
def test_index_mutations(pristine, work, mutations):
    check(pristine, work, "index", mutations)


@SETTINGS
@given(
    which=st.sampled_from(["data0", "data1"]), mutations=st.lists(MUTATION, min_size=1, max_size=3)
)
def test_data_mutations(pristine, work, which, mutations):
    check(pristine, work, which, mutations)


def test_mutate_is_what_it_says():
    assert mutate(b"abcd", [("flip", 1, 0x01)]) == b"accd"
    assert mutate(b"abcd", [("truncate", 2, 0)]) == b"ab"
    assert mutate(b"abcd", [("delete", 1, 2)]) == b"ad"
    assert mutate(b"abcd", [("insert", 4, b"xy")]) == b"abcdxy"
    assert mutate(b"abcd", [("append", 0, b"!")]) == b"abcd!"
    assert mutate(b"abcd", [("overwrite", 3, b"XYZ")]) == b"abcXYZ"


@pytest.mark.parametrize(
    "which, mutations, outcome",
    [
        ("data1", [("append", 0, b"tail")], "identical"),  # bytes nothing reads
        ("data1", [("flip", 10, 0x04)], "error"),
        ("index", [("flip", 0, 0x01)], "error"),
        ("data0", [("truncate", 5, 0)], "error"),
    ],
)
def test_both_outcomes_are_reachable(pristine, work, which, mutations, outcome):
    """The property's two branches both happen, so neither is vacuous."""
    assert check(pristine, work, which, mutations, event=lambda _: None) == outcome


# -- damage that keeps every checksum valid ---------------------------------------------------
#
# Random bytes rarely get past the index's block checksums, so the entry parser sees little
# of them. Here the index is re-written with correct checksums around mutated entries
# (dtype, shape, shard, offset, size, crc, slices), dropped or duplicated keys: a
# self-consistent but wrong index. Outcomes: a library error, or success where the fast
# restore path (apply_plan) and the reader (info.read) agree on every value.


def _rebuild_index(path: str, ops) -> None:
    from tf1compat_init.bundle.table import _read_table
    from tf1compat_init.bundle.writer import build_table

    items = _read_table(path)
    for kind, where, arg in ops:
        i = 1 + where % (len(items) - 1) if len(items) > 1 else 0
        key, value = items[i]
        if kind == "entry":
            items[i] = (key, mutate(value, [arg]))
        elif kind == "key":
            items[i] = (mutate(key, [arg]) or b"k", value)
        elif kind == "drop":
            del items[i]
        elif kind == "header":
            items[0] = (items[0][0], mutate(items[0][1], [arg]))
    unique = dict(sorted(items, key=lambda kv: kv[0]))  # strictly increasing keys
    Path(path).write_bytes(build_table(list(unique.items())))


INDEX_OP = st.one_of(
    st.tuples(st.sampled_from(["entry", "key", "header"]), st.integers(0, 2**31), MUTATION),
    st.tuples(st.just("drop"), st.integers(0, 2**31), st.just(None)),
)


def check_consistent(pristine, work, ops, event=hypothesis.event):
    from tf1compat_init.bundle.dtypes import numpy_dtype

    prefix = pristine[0]
    shutil.rmtree(work, ignore_errors=True)
    target = h.copy_checkpoint(prefix, Path(work))
    _rebuild_index(target + ".index", ops)
    try:
        with time_limit(EXAMPLE_TIMEOUT_S):
            info = tci.open_checkpoint(target)
            values = info.read()
            variables = {}
            for k, v in info.variables.items():
                try:
                    ok = not numpy_dtype(v.dtype).hasobject
                except Tf1CompatError:
                    ok = False
                if ok and len(variables) < 16:
                    variables[k] = tf.Variable(
                        tf.zeros(v.shape, dtype=v.dtype), name=f"v{len(variables)}"
                    )
            names = {id(var): k for k, var in variables.items()}
            targets = collect_targets(variables.values(), name_of=lambda var: names[id(var)])
            apply_plan(tci.plan_restore(info, target_specs(targets)), targets)
    except Tf1CompatError as e:
        event(f"error: {type(e).__name__}")
        return "error"
    event("no error")
    for k, var in variables.items():
        assert h.same_bits(var.numpy(), values[k]), f"apply and read disagree on {k} after {ops}"
    return "consistent"


@SETTINGS
@given(ops=st.lists(INDEX_OP, min_size=1, max_size=3))
def test_checksum_valid_index_damage(pristine, work, ops):
    check_consistent(pristine, work, ops)


# -- regressions the properties found ---------------------------------------------------------

_READ_IN_CHILD = """
import json, sys
import tf1compat_init as tci
for path in sys.argv[1:]:
    try:
        info = tci.open_checkpoint(path)
        info.read()
        out = "read"
    except tci.Tf1CompatError as e:
        out = type(e).__name__ + ": " + str(e)
    print("RESULT " + json.dumps([path, out]), flush=True)
"""

#: (dtype enum written over a/step's, the error, a fragment of its message), by id
DAMAGED_DTYPES = {
    "ref_type": (
        101,
        "CheckpointCorruptError",
        "dtype float32_ref cannot be stored in a checkpoint",
    ),
    "invalid": (0, "CheckpointCorruptError", "dtype unknown_dtype_0 cannot be stored"),
    "unknown": (83, "CheckpointCorruptError", "has dtype unknown_dtype_83, which neither"),
    "variant": (21, "CheckpointCorruptError", "TensorFlow cannot read tensor 'a/step'"),
    "int2": (31, "CheckpointCorruptError", "'a/step' of checkpoint"),
}


@pytest.fixture(scope="module")
def damaged_dtype_reads(pristine, tmp_path_factory):
    """Each damaged copy read in one child process (TensorFlow imported once for all)."""
    import json
    import subprocess
    import sys

    from tf1compat_init.bundle.entries import parse_entry
    from tf1compat_init.bundle.table import _read_table
    from tf1compat_init.bundle.writer import _entry_proto, build_table

    targets = {}
    for case, (enum, _, _) in DAMAGED_DTYPES.items():
        target = h.copy_checkpoint(pristine[0], tmp_path_factory.mktemp(case))
        items = _read_table(target + ".index")
        i = next(n for n, (k, _) in enumerate(items) if k == b"a/step")
        _, shape, _, offset, size, crc, _ = parse_entry(items[i][1])
        items[i] = (b"a/step", _entry_proto(enum, shape, offset, size, crc))
        Path(target + ".index").write_bytes(build_table(items))
        targets[target] = case
    proc = subprocess.run(
        [sys.executable, "-c", _READ_IN_CHILD, *targets],
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard: other test processes share the cores
    )
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            path, out = json.loads(line[len("RESULT ") :])
            results[targets[path]] = out
    return results, proc


@pytest.mark.parametrize("case", list(DAMAGED_DTYPES))
def test_dtype_the_native_reader_leaves_to_tensorflow(damaged_dtype_reads, case):
    """A damaged dtype once reached TensorFlow's reader, which aborted the process
    (``tensor.cc: Unexpected type``) or raised its own errors. In a child process, so an
    abort fails these tests instead of ending the run: a case the child never reported
    (it died on it or before it) fails with the child's exit code and its stderr."""
    _, error, fragment = DAMAGED_DTYPES[case]
    results, proc = damaged_dtype_reads
    assert case in results, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert results[case].startswith(error + ": ") and fragment in results[case], results[case]
