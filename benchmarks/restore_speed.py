"""Restore speed: tf1compat_init's engine against TensorFlow's own restores, on the same files.

One checkpoint per size is written with ``tf.train.Checkpoint`` (object-based keys, which
every method below can read), its files are read once so the page cache is hot, and
then every method restores it into existing eager variables, round-robin, ``--repeats``
times. Before each run the variables are zeroed; after each run every variable's bytes
are checked against the CRC32C TensorFlow stored for it, so a method that skips or
garbles a value fails instead of looking fast. The median is reported.

Methods (each skipped, with the reason, when it cannot run here):

- ``raw_read``: the ``.data`` bytes read into one preallocated buffer (an upper bound);
- ``memcpy``: a copy between two preallocated buffers (the memory bandwidth);
- ``fresh_memory``: one write per page of freshly mapped memory (what page faults cost);
- ``saver_restore``: ``tf.compat.v1.train.Saver.restore`` into the eager variables;
- ``saver_restore_graph``: the same in a TF1 graph and session (variables of its own);
- ``checkpoint_restore``: ``tf.train.Checkpoint.restore``;
- ``get_tensor_assign``: ``tf.train.load_checkpoint`` + ``get_tensor`` + ``assign`` per variable;
- ``restorev2_single`` / ``restorev2_parallel``: one ``RestoreV2`` op, or one per thread
  with batches balanced by size, then one assign per variable;
- ``restorev2_batched``: an experiment, not TensorFlow's way: our ``open_checkpoint`` and
  ``plan_restore``, then every read and checksum left to ``RestoreV2`` ops in parallel
  threads (all of them before the first assign, as ours), then our batched assigns (128
  per call): what the engine would cost if TensorFlow's C++ did its reading;
- ``ours``: ``open_checkpoint`` + ``plan_restore`` + ``apply_plan`` (all timed);
- ``ours_staged``: the same with ``staging="all"`` (everything verified in place first);
- ``ours_v1`` / ``ours_checkpoint`` / ``ours_keras``: the front ends
  (``v1.init_from_checkpoint``, ``checkpoint.restore``, ``keras.load_checkpoint``).

Also measured, in fresh processes (``--cold N``, default 3): the first restore of a
process for ``saver_restore``, ``checkpoint_restore`` and ``ours``, what a user who
warm-starts once pays (fresh memory and first-use setup included, the page cache
still hot); the goals are checked on these medians too. And, in extra untimed runs:
the peak of extra anonymous memory per method
(resident memory not backed by files, sampled every half millisecond by a separate
process; TensorFlow's allocator keeps freed memory for reuse, so this depends on what
ran before), and for ``ours*`` the restore's own peak read-ahead (bytes read but not
yet assigned, from ``apply_plan``'s log line: exact).

Usage:
    python benchmarks/restore_speed.py --sizes 512M,small2000
    python benchmarks/restore_speed.py --sizes 64M,512M,2G,small2000 --repeats 5
    python benchmarks/restore_speed.py --device gpu     # variables on /GPU:0
    python benchmarks/restore_speed.py --quick          # seconds: CI smoke test

Sizes: ``<n>M`` / ``<n>G`` are float32 kernels of 4096x4096 (64 MiB) plus their biases
of 4096 (``512M`` = 8 of each; below 64 MiB smaller square kernels); ``small<n>`` is ``n``
float32 tensors of 64 KiB. Results: ``benchmarks/results/restore_speed_<device>.json``
and ``.png`` (override with ``--out`` / ``--chart``). Timings taken while other programs
run are noisy: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import logging
import mmap
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
import _first_restore  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
MiB = 1 << 20
KERNEL = 4096
SMALL_ELEMENTS = 16384  # 64 KiB of float32
MEMCPY_MAX = 512 * MiB

# Goals of the restore-speed issue, checked in every run (ratios of medians, same run).
# Large checkpoints: the default (bounded-memory) restore at least as fast as reading the
# same files and at least half of memcpy. 2,000 small tensors: at least the TF1 graph +
# session Saver with its session built, and the eager comparators' earlier goals (1.5x
# Saver.restore into the same eager variables, 5x Checkpoint.restore).
LARGE_GOALS = {"raw_read": 1.0, "memcpy": 0.5}
SMALL_GOALS = {"saver_restore_graph": 1.0, "saver_restore": 1.5, "checkpoint_restore": 5.0}


class Skip(Exception):
    """A method that cannot run here; the message says why."""


# -- sizes and checkpoints ------------------------------------------------------------


@dataclass
class Spec:
    name: str
    tensors: dict[str, tuple[int, ...]]  # attribute name -> shape (float32)
    kind: str  # "large" or "small"

    @property
    def nbytes(self) -> int:
        return sum(int(np.prod(s)) * 4 for s in self.tensors.values())

    @property
    def largest(self) -> int:
        return max(int(np.prod(s)) * 4 for s in self.tensors.values())


def parse_size(token: str) -> Spec:
    token = token.strip()
    m = re.fullmatch(r"small(\d+)", token)
    if m:
        n = int(m.group(1))
        return Spec(token, {f"s{i:05d}": (SMALL_ELEMENTS,) for i in range(n)}, "small")
    m = re.fullmatch(r"(\d+)([KMG])", token.upper())
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {token!r}: use e.g. 64M, 512M, 2G, small2000")
    total = int(m.group(1)) << {"K": 10, "M": 20, "G": 30}[m.group(2)]
    dim = KERNEL
    while dim > 8 and dim * dim * 4 > total:
        dim //= 2
    count = max(1, total // (dim * dim * 4))
    tensors: dict[str, tuple[int, ...]] = {}
    for i in range(count):
        tensors[f"k{i:03d}"] = (dim, dim)
        tensors[f"b{i:03d}"] = (dim,)
    return Spec(token, tensors, "large" if total >= 64 * MiB else "tiny")


def key_of(attr: str) -> str:
    return f"{attr}/.ATTRIBUTES/VARIABLE_VALUE"


def write_checkpoint(spec: Spec, directory: Path) -> str:
    """Writes (or reuses) the checkpoint of ``spec`` under ``directory``."""
    import tensorflow as tf

    directory.mkdir(parents=True, exist_ok=True)
    prefix = directory / "ckpt"
    stamp = directory / "spec.json"
    described = json.dumps(
        {"version": 2, "tensors": {k: list(v) for k, v in spec.tensors.items()}}, sort_keys=True
    )
    if stamp.exists() and stamp.read_text() == described and Path(f"{prefix}.index").exists():
        return str(prefix)
    for old in directory.glob("ckpt*"):
        old.unlink()
    rng = np.random.default_rng(1234)
    variables = {}
    with tf.device("/CPU:0"):
        for attr, shape in spec.tensors.items():
            bits = rng.integers(0, 1 << 32, size=int(np.prod(shape)), dtype=np.uint32)
            # Random finite floats: bit patterns with the top exponent bit cleared.
            value = (bits & np.uint32(0xBFFFFFFF)).view(np.float32).reshape(shape)
            variables[attr] = tf.Variable(value, name=attr)  # the saved name Keras plans by
    tf.train.Checkpoint(**variables).write(str(prefix))
    del variables
    gc.collect()
    stamp.write_text(described)
    return str(prefix)


# -- the case: files, variables, checks -----------------------------------------------


@dataclass
class Case:
    spec: Spec
    prefix: str
    device: str
    variables: dict[str, Any] = field(default_factory=dict)  # checkpoint key -> tf.Variable
    expected_crc: dict[str, int] = field(default_factory=dict)
    data_files: list[str] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return list(self.variables)


def make_case(spec: Spec, prefix: str, device: str) -> Case:
    import tensorflow as tf

    from tf1compat_init import open_checkpoint
    from tf1compat_init.bundle.crc import unmask_crc

    info = open_checkpoint(prefix)
    case = Case(spec, prefix, device, data_files=list(info.data_files))
    with tf.device(device):
        for attr, shape in spec.tensors.items():
            case.variables[key_of(attr)] = tf.Variable(tf.zeros(shape, tf.float32), name=attr)
    for key in case.variables:
        case.expected_crc[key] = unmask_crc(info.bundle.entries[key].crc32c)
    return case


def zero(variables: dict[str, Any]) -> None:
    # From numpy, so each variable gets a buffer of its own (TensorFlow caches the
    # result of tf.zeros, which would make variables share one).
    for v in variables.values():
        v.assign(np.zeros(tuple(v.shape), v.dtype.as_numpy_dtype))


def check_values(case: Case, values: dict[str, np.ndarray]) -> list[str]:
    """Keys whose bytes differ from what the checkpoint stored (by its CRC32C)."""
    from tf1compat_init.bundle.crc import crc32c

    return [k for k, v in values.items() if crc32c(np.ascontiguousarray(v)) != case.expected_crc[k]]


def read_back(variables: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: v.numpy() for k, v in variables.items()}


# -- methods ----------------------------------------------------------------------------


class Method:
    """One way of restoring; ``run`` is timed, the rest is not."""

    name = ""
    label = ""
    verifies = True  # False: moves bytes only (raw_read, memcpy, fresh_memory)

    def setup(self, case: Case) -> None:
        """Prepares (untimed); raises Skip when the method cannot run."""

    def reset(self, case: Case) -> None:
        zero(case.variables)

    def run(self, case: Case) -> None:
        raise NotImplementedError

    def values(self, case: Case) -> dict[str, np.ndarray]:
        return read_back(case.variables)

    def nbytes(self, case: Case) -> int:
        return case.spec.nbytes

    def teardown(self) -> None:
        """Frees what setup made."""


class RawRead(Method):
    name, label, verifies = "raw_read", "raw read (.data into a preallocated buffer)", False

    def setup(self, case: Case) -> None:
        self.sizes = [os.path.getsize(p) for p in case.data_files]
        self.buffer = np.ones(max(self.sizes), dtype=np.uint8)  # touched: no page faults later

    def reset(self, case: Case) -> None:
        pass

    def run(self, case: Case) -> None:
        view = memoryview(self.buffer)
        for path, size in zip(case.data_files, self.sizes, strict=True):
            with open(path, "rb", buffering=0) as f:
                got = 0
                while got < size:
                    n = f.readinto(view[got:size])
                    if not n:
                        raise OSError(f"{path} ended at {got} of {size} bytes")
                    got += n

    def nbytes(self, case: Case) -> int:
        return sum(self.sizes)

    def teardown(self) -> None:
        self.buffer = None


class Memcpy(Method):
    name, label, verifies = "memcpy", "memcpy (between preallocated buffers)", False

    def setup(self, case: Case) -> None:
        n = min(case.spec.nbytes, MEMCPY_MAX)
        self.src = np.ones(n, dtype=np.uint8)
        self.dst = np.zeros(n, dtype=np.uint8)

    def reset(self, case: Case) -> None:
        pass

    def run(self, case: Case) -> None:
        left = case.spec.nbytes
        while left > 0:
            n = min(left, self.src.size)
            np.copyto(self.dst[:n], self.src[:n])
            left -= n

    def teardown(self) -> None:
        self.src = self.dst = None


class FreshMemory(Method):
    """First writes to fresh anonymous memory: what page faults cost on this machine.

    A restore whose buffers cannot reuse memory the process already has pays this on
    top of the copy; TensorFlow's first restore in a process pays it for the whole
    checkpoint. Up to 512 MiB is mapped at a time, one byte written per page.
    """

    name, label, verifies = "fresh_memory", "first touch of fresh memory (page faults)", False

    def reset(self, case: Case) -> None:
        pass

    def run(self, case: Case) -> None:
        left = case.spec.nbytes
        while left > 0:
            n = min(left, MEMCPY_MAX)
            region = mmap.mmap(-1, n)
            pages = np.frombuffer(region, dtype=np.uint8)
            pages[:: mmap.PAGESIZE] = 1
            del pages
            region.close()
            left -= n


class SaverRestore(Method):
    name, label = "saver_restore", "Saver.restore (eager)"

    def setup(self, case: Case) -> None:
        import tensorflow as tf

        self.saver = tf.compat.v1.train.Saver(var_list=dict(case.variables))

    def run(self, case: Case) -> None:
        self.saver.restore(None, case.prefix)


class SaverRestoreGraph(Method):
    name, label = "saver_restore_graph", "Saver.restore (TF1 graph + session)"

    def setup(self, case: Case) -> None:
        import tensorflow as tf

        self.graph = tf.Graph()
        with self.graph.as_default(), tf.device(case.device):
            self.vars = {
                key: tf.compat.v1.Variable(tf.zeros(v.shape, tf.float32), name=f"g{i}")
                for i, (key, v) in enumerate(case.variables.items())
            }
            self.saver = tf.compat.v1.train.Saver(var_list=self.vars)
            self.init = tf.compat.v1.variables_initializer(list(self.vars.values()))
        self.session = tf.compat.v1.Session(graph=self.graph)

    def reset(self, case: Case) -> None:
        with self.graph.as_default():
            self.session.run(self.init)

    def run(self, case: Case) -> None:
        with self.graph.as_default():  # else Saver takes its eager path
            self.saver.restore(self.session, case.prefix)

    def values(self, case: Case) -> dict[str, np.ndarray]:
        keys = list(self.vars)
        with self.graph.as_default():
            fetched = self.session.run([self.vars[k] for k in keys])
        return dict(zip(keys, fetched, strict=True))

    def teardown(self) -> None:
        self.session.close()
        self.session = self.graph = self.vars = None


class CheckpointRestore(Method):
    name, label = "checkpoint_restore", "tf.train.Checkpoint.restore"

    def setup(self, case: Case) -> None:
        import tensorflow as tf

        attrs = {k.split("/")[0]: v for k, v in case.variables.items()}
        self.checkpoint = tf.train.Checkpoint(**attrs)

    def run(self, case: Case) -> None:
        self.checkpoint.restore(case.prefix).expect_partial()


class GetTensorAssign(Method):
    name, label = "get_tensor_assign", "load_checkpoint + get_tensor + assign loop"

    def run(self, case: Case) -> None:
        import tensorflow as tf

        reader = tf.train.load_checkpoint(case.prefix)
        for key, v in case.variables.items():
            v.assign(reader.get_tensor(key))


class RestoreV2(Method):
    """``RestoreV2`` ops batched by size over threads, then one raw assign per variable."""

    name, label = "restorev2_single", "one RestoreV2 op + assigns"
    threads = 1

    def setup(self, case: Case) -> None:
        import tensorflow as tf

        self.tf = tf
        n = self.threads
        sizes = {k: int(np.prod(v.shape)) * v.dtype.size for k, v in case.variables.items()}
        batches: list[list[str]] = [[] for _ in range(n)]
        load = [0] * n
        for key in sorted(sizes, key=sizes.get, reverse=True):  # greedy: largest first
            i = load.index(min(load))
            batches[i].append(key)
            load[i] += sizes[key]
        self.batches = [b for b in batches if b]
        self.pool = ThreadPoolExecutor(n) if n > 1 else None

    def _restore(self, case: Case, keys: list[str]) -> list[Any]:
        tf = self.tf
        with tf.device("/CPU:0"):
            return tf.raw_ops.RestoreV2(
                prefix=case.prefix,
                tensor_names=keys,
                shape_and_slices=[""] * len(keys),
                dtypes=[case.variables[k].dtype for k in keys],
            )

    def run(self, case: Case) -> None:
        assign = self.tf.raw_ops.AssignVariableOp
        if self.pool is None:
            parts = [(b, self._restore(case, b)) for b in self.batches]
        else:
            futures = [(b, self.pool.submit(self._restore, case, b)) for b in self.batches]
            parts = [(b, f.result()) for b, f in futures]
        for keys, tensors in parts:
            for key, t in zip(keys, tensors, strict=True):
                assign(resource=case.variables[key].handle, value=t)

    def teardown(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


class RestoreV2Parallel(RestoreV2):
    name, label = "restorev2_parallel", "RestoreV2 ops in parallel threads + assigns"
    threads = max(2, os.cpu_count() or 1)


def our_targets(case: Case) -> dict[str, Any]:
    """The case's variables as tf1compat_init targets, named by their checkpoint keys."""
    from tf1compat_init.variables import collect_targets

    names = {id(v): k for k, v in case.variables.items()}
    return collect_targets(case.variables.values(), name_of=lambda v: names[id(v)])


class RestoreV2Batched(RestoreV2Parallel):
    """Our planning and batched assigns around TensorFlow's reads (an experiment).

    Times what the engine would cost if it left every read and checksum to
    TensorFlow's C++ (one ``RestoreV2`` op per thread, all finished before the first
    assign, so a bad checksum still changes nothing), keeping what it cannot hand
    over: opening the index, planning (its result is not needed here: the keys are
    the case's), and assigning, 128 values per call of
    :mod:`tf1compat_init.apply._batch`'s function. CPU variables only.
    """

    name = "restorev2_batched"
    label = "open + plan, RestoreV2 ops in threads, 128 assigns per call"

    def setup(self, case: Case) -> None:
        if "CPU" not in case.device.upper():
            raise Skip("batched assigns are for CPU variables")
        super().setup(case)
        import tf1compat_init as tci
        from tf1compat_init.apply._batch import BatchAssign
        from tf1compat_init.variables import target_specs

        self.tci, self.target_specs, self.targets = tci, target_specs, our_targets(case)
        self.assign_batch = BatchAssign()

    def run(self, case: Case) -> None:
        tci = self.tci  # planned as Ours.run plans
        tci.plan_restore(tci.open_checkpoint(case.prefix), self.target_specs(self.targets))
        futures = [(b, self.pool.submit(self._restore, case, b)) for b in self.batches]
        parts = [(b, f.result()) for b, f in futures]  # every read before any assign
        by_dtype: dict[Any, tuple[list[Any], list[Any]]] = {}
        for keys, tensors in parts:
            for key, tensor in zip(keys, tensors, strict=True):
                handles, values = by_dtype.setdefault(tensor.dtype, ([], []))
                handles.append(case.variables[key].handle)
                values.append(tensor)
        assign, size = self.tf.raw_ops.AssignVariableOp, self.assign_batch.size
        for dtype, (handles, values) in by_dtype.items():
            full = len(handles) - len(handles) % size
            for i in range(0, full, size):
                self.assign_batch(dtype, handles[i : i + size], values[i : i + size])
            for handle, value in zip(handles[full:], values[full:], strict=True):
                assign(resource=handle, value=value)


class _ApplyLog(logging.Handler):
    """Keeps apply_plan's summary line: its peak read-ahead is the restore's own
    high-water mark of bytes read but not yet assigned (exact, unlike process memory)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.read_ahead: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if "peak read-ahead" in str(record.msg) and isinstance(record.args, tuple):
            self.read_ahead = int(record.args[3] * 2**20)


APPLY_LOG = _ApplyLog()


class Ours(Method):
    name, label = "ours", "tf1compat_init apply_plan (open + plan + apply)"
    staging = "stream"

    def setup(self, case: Case) -> None:
        # Imported here, not in run(): a program imports its libraries once, at start
        # (TensorFlow's restores are loaded with ``import tensorflow``), and the first
        # restore of a fresh process is timed too.
        import tf1compat_init as tci
        from tf1compat_init.apply import apply_plan
        from tf1compat_init.variables import target_specs

        self.tci, self.apply_plan, self.target_specs = tci, apply_plan, target_specs
        self.targets = our_targets(case)

    def run(self, case: Case) -> None:
        tci = self.tci
        plan = tci.plan_restore(tci.open_checkpoint(case.prefix), self.target_specs(self.targets))
        self.apply_plan(plan, self.targets, staging=self.staging)


class OursStaged(Ours):
    name, label = "ours_staged", "tf1compat_init apply_plan, staging='all'"
    staging = "all"


class OursV1(Method):
    name, label = "ours_v1", "tf1compat_init.v1.init_from_checkpoint (eager)"

    def setup(self, case: Case) -> None:
        try:
            from tf1compat_init import v1
        except ImportError as e:
            raise Skip(f"tf1compat_init.v1 is not available: {e}") from None
        self.v1 = v1
        self.map = dict(case.variables)

    def run(self, case: Case) -> None:
        self.v1.init_from_checkpoint(case.prefix, self.map)


class OursCheckpoint(Method):
    name, label = "ours_checkpoint", "tf1compat_init.checkpoint.restore"

    def setup(self, case: Case) -> None:
        try:
            from tf1compat_init import checkpoint
        except ImportError as e:
            raise Skip(f"tf1compat_init.checkpoint is not available: {e}") from None
        import tensorflow as tf

        self.restore = checkpoint.restore
        self.root = tf.train.Checkpoint(**{k.split("/")[0]: v for k, v in case.variables.items()})

    def run(self, case: Case) -> None:
        self.restore(self.root, case.prefix)


class OursKeras(Method):
    """``keras.load_checkpoint`` into a Keras layer holding weights of the same shapes."""

    name, label = "ours_keras", "tf1compat_init.keras.load_checkpoint"
    max_bytes = 1 << 30  # a second copy of the variables: skipped above this

    def setup(self, case: Case) -> None:
        if case.spec.nbytes > self.max_bytes:
            raise Skip(
                f"needs a second {case.spec.nbytes / 2**30:.1f} GiB set of weights; run"
                f" sizes up to {self.max_bytes >> 30} GiB for the Keras front end"
            )
        try:
            from tf1compat_init import keras as front
        except ImportError as e:
            raise Skip(f"tf1compat_init.keras is not available: {e}") from None
        import tensorflow as tf

        keras = tf.keras
        self.front = front
        shapes = {k: tuple(v.shape) for k, v in case.variables.items()}

        class Holder(keras.layers.Layer):
            def __init__(self) -> None:
                super().__init__(name="holder")
                self.ws = {}
                for i, (key, shape) in enumerate(shapes.items()):
                    self.ws[key] = self.add_weight(
                        name=f"w{i:05d}", shape=shape, initializer="zeros", dtype="float32"
                    )
                self.built = True

            def call(self, x: Any) -> Any:
                return x

        with tf.device(case.device):
            self.layer = Holder()
        self.weights = dict(self.layer.ws)
        # Keras plans object-based checkpoints by the names the variables were saved
        # under (the attribute names here); map each to its weight object.
        self.map = {key.split("/")[0]: w for key, w in self.weights.items()}

    def reset(self, case: Case) -> None:
        for w in self.weights.values():
            w.assign(np.zeros(tuple(w.shape), np.float32))

    def run(self, case: Case) -> None:
        self.front.load_checkpoint(self.layer, case.prefix, self.map)

    def values(self, case: Case) -> dict[str, np.ndarray]:
        return {k: np.asarray(w.numpy()) for k, w in self.weights.items()}

    def teardown(self) -> None:
        self.layer = self.weights = None


METHODS: list[type[Method]] = [
    RawRead,
    Memcpy,
    FreshMemory,
    SaverRestore,
    SaverRestoreGraph,
    CheckpointRestore,
    GetTensorAssign,
    RestoreV2,
    RestoreV2Parallel,
    RestoreV2Batched,
    Ours,
    OursStaged,
    OursV1,
    OursCheckpoint,
    OursKeras,
]


# -- measuring ------------------------------------------------------------------------


def _anon_bytes() -> int:
    """Resident memory not backed by files (resident - shared pages), from /proc."""
    with open("/proc/self/statm") as f:
        fields = f.read().split()
    return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE")


# Samples another process's anonymous resident memory every half millisecond until a
# line arrives on stdin, then prints the peak. A separate process, because TensorFlow
# holds the GIL through a whole restore op, so a sampling thread would see nothing.
_SAMPLER = """
import os, select, sys
path, page, peak = f"/proc/{sys.argv[1]}/statm", os.sysconf("SC_PAGE_SIZE"), 0
print("ready", flush=True)
while True:
    with open(path) as f:
        fields = f.read().split()
    peak = max(peak, (int(fields[1]) - int(fields[2])) * page)
    if select.select([sys.stdin], [], [], float(sys.argv[2]))[0]:
        break
print(peak, flush=True)
"""


def peak_extra_memory(fn: Callable[[], None], interval: float = 0.0005) -> int | None:
    """The peak of extra anonymous memory while ``fn`` runs (sampled from outside, every
    ``interval`` seconds: the sampler keeps a core busy at the default)."""
    if not os.path.exists("/proc/self/statm"):
        return None
    gc.collect()
    sampler = subprocess.Popen(
        [sys.executable, "-c", _SAMPLER, str(os.getpid()), str(interval)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sampler.stdout is not None and sampler.stdin is not None
        sampler.stdout.readline()  # "ready"
        base = _anon_bytes()
        fn()
        after = _anon_bytes()
        sampler.stdin.write("stop\n")
        sampler.stdin.flush()
        peak = int(sampler.stdout.readline())
    finally:
        sampler.wait(timeout=30)
    return max(0, max(peak, after) - base)


#: Methods whose peak memory is probed, each in a fresh process.
MEMORY_METHODS = ("saver_restore", "checkpoint_restore", "ours", "ours_staged")
#: ``--quick`` probes the memory of one of TensorFlow's restores and ours.
QUICK_MEMORY_METHODS = ("saver_restore", "ours")


#: Methods timed on their first restore in a fresh process (``--cold``).
COLD_METHODS = ("saver_restore", "checkpoint_restore", "ours")


@functools.cache
def _probe_env() -> dict[str, str]:
    """The probes' environment: this package's modules have bytecode, as installed ones do.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machines this was measured on),
    every fresh process would compile our modules from source (60-80 ms), while
    TensorFlow's come with their bytecode; so the probes may write bytecode (in
    ``__pycache__`` beside the sources, which git ignores), compiled here once, before the
    first probe. Not a ``PYTHONPYCACHEPREFIX`` of their own: that hides TensorFlow's
    installed bytecode as well, and the first probe compiled all of TensorFlow (about 8 s).
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "src"), str(ROOT / "benchmarks")],
        env=env,
        check=False,
        capture_output=True,
    )
    return env


def run_probe(kind: str, method: str, size: str, workdir: Path, device: str) -> dict | None:
    """Runs one restore of ``method`` in a fresh process and returns what it measured.

    ``kind`` is ``"memory"`` (the restore's peak extra memory) or ``"cold"`` (its wall
    time). A fresh process, because TensorFlow's allocator keeps freed memory for
    reuse and first uses set things up: in a process that already ran other restores,
    both would depend on them. The first restore of a process is also the one a user
    who warm-starts once pays for.
    """
    proc = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--probe",
            f"{kind}:{method}",
            "--sizes",
            size,
            "--workdir",
            str(workdir),
            "--device",
            device,
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=dict(_probe_env()),
    )
    for line in proc.stdout.splitlines():
        if line.startswith("PROBE "):
            return json.loads(line[len("PROBE ") :])
    print(f"  {kind} probe {method} failed: {proc.stderr[-500:]}", file=sys.stderr)
    return None


def probe_main(probe: str, size: str, workdir: Path, device: str) -> int:
    """The child side of :func:`run_probe`; ``probe`` is ``"<kind>:<method>"``."""
    kind, _, method = probe.partition(":")
    if kind not in ("memory", "cold", "first"):
        raise SystemExit(f"unknown probe kind {kind!r}")
    spec = parse_size(size)
    prefix = write_checkpoint(spec, workdir / spec.name)
    if kind == "first":  # no variables made before the timed part: it makes its own
        hot_page_cache(_data_files(prefix))
        h5 = workdir / spec.name / "holder.weights.h5"
        got = _first_restore.run_child(
            method,
            spec.tensors,
            prefix,
            "/GPU:0" if device == "gpu" else "/CPU:0",
            str(h5) if h5.exists() else None,
        )
        print("PROBE " + json.dumps(got), flush=True)
        return 0
    case = make_case(spec, prefix, "/GPU:0" if device == "gpu" else "/CPU:0")
    m = {cls.name: cls for cls in METHODS}[method]()
    m.setup(case)
    m.reset(case)
    result: dict[str, Any] = {}
    if kind == "memory":
        result["peak_extra_bytes"] = peak_extra_memory(lambda: m.run(case))
    else:
        hot_page_cache(case.data_files)
        gc.collect()
        t0 = time.perf_counter()
        m.run(case)
        result["time_s"] = time.perf_counter() - t0
    result["verified"] = not check_values(case, m.values(case))
    print("PROBE " + json.dumps(result), flush=True)
    return 0


def _data_files(prefix: str) -> list[str]:
    return sorted(str(p) for p in Path(prefix).parent.glob(Path(prefix).name + ".data-*"))


def hot_page_cache(paths: list[str]) -> None:
    for path in paths:
        with open(path, "rb") as f:
            while f.read(64 * MiB):
                pass


def h2d_bandwidth(device: str, repeats: int) -> float | None:
    """Host-to-device copy bandwidth in GB/s (256 MiB, median), or None on CPU."""
    if not device.upper().startswith("/GPU"):
        return None
    import tensorflow as tf

    with tf.device("/CPU:0"):
        host = tf.constant(np.ones(64 * MiB, np.float32))
    sync = getattr(getattr(tf.test, "experimental", None), "sync_devices", None)
    times = []
    for _ in range(max(3, repeats)):
        t0 = time.perf_counter()
        with tf.device(device):
            on_device = tf.identity(host)
        if sync is not None:
            sync()
        else:
            float(tf.reduce_sum(on_device[:1]))
        times.append(time.perf_counter() - t0)
        del on_device
    return 256 * MiB / statistics.median(times) / 1e9


def bench_size(
    spec: Spec,
    prefix: str,
    device: str,
    repeats: int,
    warmup: int,
    selected: list[type[Method]],
    probe: Callable[[str, str], dict[str, Any] | None],
    log: Callable[[str], None],
    *,
    memory: tuple[str, ...] = MEMORY_METHODS,
    cold: int = 0,
    first: int = 0,
) -> dict[str, Any]:
    case = make_case(spec, prefix, device)
    hot_page_cache(case.data_files)
    methods: list[Method] = []
    results: dict[str, dict[str, Any]] = {}
    for cls in selected:
        m = cls()
        try:
            m.setup(case)
        except Skip as e:
            results[m.name] = {"label": m.label, "status": "skipped", "reason": str(e)}
            log(f"  {m.name:<20} skipped: {e}")
            continue
        methods.append(m)
        results[m.name] = {
            "label": m.label,
            "status": "ok",
            "times_s": [],
            "cpu_s": [],  # CPU time of the whole process (all threads) per run
            "verified": True,
        }
    for rep in range(-warmup, repeats):  # negative: warm-up runs, checked but not kept
        for m in methods:  # round-robin: drifting load hits every method alike
            r = results[m.name]
            if r["status"] != "ok":
                continue
            try:
                m.reset(case)
                gc.collect()
                c0 = time.process_time()
                t0 = time.perf_counter()
                m.run(case)
                took = time.perf_counter() - t0
                cpu = time.process_time() - c0
                bad = check_values(case, m.values(case)) if m.verifies else []
            except Exception as e:  # noqa: BLE001 - recorded, the suite goes on
                r.update(status="failed", reason=f"{type(e).__name__}: {e}"[:500])
                log(f"  {m.name:<20} FAILED: {r['reason']}")
                continue
            if rep >= 0:
                r["times_s"].append(took)
                r["cpu_s"].append(cpu)
            if bad:
                r["verified"] = False
                r.setdefault("wrong_values", bad[:5])
            run = "warm-up" if rep < 0 else f"{rep + 1}/{repeats}"
            log(
                f"  [{run}] {m.name:<20} {took * 1e3:9.1f} ms"
                f" {m.nbytes(case) / took / 1e9:7.2f} GB/s  cpu {cpu * 1e3:8.1f} ms"
                f"{'  WRONG VALUES' if bad else ''}"
            )
    for m in methods:
        r = results[m.name]
        if r["status"] == "ok" and r["times_s"]:
            med = statistics.median(r["times_s"])
            r["median_s"] = med
            r["median_cpu_s"] = statistics.median(r["cpu_s"])
            r["gbps"] = m.nbytes(case) / med / 1e9
            r["bytes"] = m.nbytes(case)
            if m.name.startswith("ours"):
                APPLY_LOG.read_ahead = None
                m.reset(case)
                m.run(case)
                r["read_ahead_peak_bytes"] = APPLY_LOG.read_ahead
        m.teardown()
    data_files = case.data_files
    # The probes run in fresh processes: free this one's variables first.
    methods.clear()
    m = None
    del case
    gc.collect()
    for name, r in results.items():
        if r.get("status") == "ok" and name in memory:
            got = probe("memory", name)
            if got is not None:
                r["peak_extra_bytes"] = got["peak_extra_bytes"]
                r["verified_after_memory_run"] = got["verified"]
                log(f"  {name:<20} peak extra memory {got['peak_extra_bytes'] / MiB:8.1f} MiB")
    cold_names = [n for n in COLD_METHODS if results.get(n, {}).get("status") == "ok"]
    for rep in range(cold):  # round-robin, as above
        for name in cold_names:
            r = results[name]
            got = probe("cold", name)
            if got is None:
                continue
            r.setdefault("cold_times_s", []).append(got["time_s"])
            r["verified_after_cold_runs"] = r.get("verified_after_cold_runs", True) and bool(
                got["verified"]
            )
            log(
                f"  [first restore {rep + 1}/{cold}] {name:<20} {got['time_s'] * 1e3:9.1f} ms"
                f"{'' if got['verified'] else '  WRONG VALUES'}"
            )
    for name in cold_names:
        r = results[name]
        if r.get("cold_times_s"):
            r["cold_median_s"] = statistics.median(r["cold_times_s"])
            r["cold_gbps"] = r["bytes"] / r["cold_median_s"] / 1e9
    out: dict[str, Any] = {
        "kind": spec.kind,
        "bytes": spec.nbytes,
        "tensors": len(spec.tensors),
        "largest_tensor_bytes": spec.largest,
        "files": [os.path.basename(p) for p in data_files],
        "methods": results,
    }
    out["ratios"], out["goals"] = ratios_and_goals(spec, results)
    if first:
        if any(sc.front_end == "keras" for sc in _first_restore.scenarios_for(spec.nbytes)):
            try:
                _first_restore.write_weights_h5(spec.tensors, prefix, Path(prefix).parent)
            except Exception as e:  # noqa: BLE001 - the Keras scenarios then fail, logged
                log(f"  no .weights.h5 for Keras' own load_weights: {e}")
        out["first_restore"] = _first_restore.measure(
            spec.nbytes, first, lambda name: probe("first", name), log
        )
    return out


def ratios_and_goals(spec: Spec, results: dict[str, Any]) -> tuple[dict, dict]:
    def gbps(name: str) -> float | None:
        r = results.get(name, {})
        return r.get("gbps") if r.get("status") == "ok" and r.get("verified") else None

    ours = gbps("ours")
    names = (
        "saver_restore",
        "saver_restore_graph",
        "checkpoint_restore",
        "raw_read",
        "memcpy",
        "restorev2_single",
        "restorev2_parallel",
        "restorev2_batched",
        "get_tensor_assign",
        "ours_staged",
    )
    ratios = {}
    for name in names:
        ref = gbps(name)
        ratios[f"ours_vs_{name}"] = ours / ref if ours and ref else None
    targets = {"large": LARGE_GOALS, "small": SMALL_GOALS}.get(spec.kind, {})
    goals = {}
    for name, want in targets.items():
        got = ratios[f"ours_vs_{name}"]
        goals[f"ours >= {want}x {name}"] = {
            "ratio": got,
            "target": want,
            "met": None if got is None else got >= want,
        }

    def cold_gbps(name: str) -> float | None:
        r = results.get(name, {})
        ok = r.get("status") == "ok" and r.get("verified_after_cold_runs")
        return r.get("cold_gbps") if ok else None

    first = cold_gbps("ours")
    for name in COLD_METHODS:
        ref = cold_gbps(name)
        if name != "ours" and first and ref:
            ratios[f"first_ours_vs_{name}"] = first / ref
    for name, want in targets.items():
        got = ratios.get(f"first_ours_vs_{name}")
        if got is not None:
            goals[f"ours >= {want}x {name}, first restore in a fresh process"] = {
                "ratio": got,
                "target": want,
                "met": got >= want,
            }
    return ratios, goals


# -- machine, output, chart ---------------------------------------------------------------


def machine(device: str) -> dict[str, Any]:
    import tensorflow as tf

    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "numpy": np.__version__,
        "device": device,
    }
    try:
        with open("/proc/cpuinfo") as f:
            models = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        info["cpu_model"] = models[0] if models else platform.processor()
    except OSError:
        info["cpu_model"] = platform.processor()
    try:
        with open("/proc/meminfo") as f:
            mem = {ln.split(":")[0]: ln.split(":")[1].strip() for ln in f}
        info["ram_bytes"] = int(mem["MemTotal"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        info["ram_bytes"] = None
    for module in ("crc32c", "google_crc32c"):
        try:
            info[module] = getattr(__import__(module), "__version__", "installed")
        except ImportError:
            info[module] = None
    from tf1compat_init.bundle.crc import backend_name

    info["crc32c_backend"] = backend_name()
    if hasattr(os, "getloadavg"):
        info["load_average_start"] = list(os.getloadavg())
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["git_commit"] = None
    gpus = tf.config.list_physical_devices("GPU")
    info["gpus"] = [g.name for g in gpus]
    if gpus:
        try:
            details = tf.config.experimental.get_device_details(gpus[0])
            info["gpu_model"] = details.get("device_name")
        except Exception:  # noqa: BLE001 - informational only
            pass
    return info


def draw_chart(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = list(result["sizes"])
    names: list[str] = []
    for s in sizes:
        for name, r in result["sizes"][s]["methods"].items():
            if r.get("status") == "ok" and name not in names and name != "raw_read":
                names.append(name)
    width = 0.8 / max(1, len(names))
    has_first = any(s.get("first_restore") for s in result["sizes"].values())
    fig, axes = plt.subplots(
        2 if has_first else 1,
        1,
        figsize=(max(8, 2.2 * len(sizes) + 0.4 * len(names)), 10.5 if has_first else 5.5),
        squeeze=False,
    )
    ax = axes[0][0]
    cmap = plt.get_cmap("tab20")
    for j, name in enumerate(names):
        xs, ys = [], []
        for i, s in enumerate(sizes):
            r = result["sizes"][s]["methods"].get(name, {})
            if r.get("status") == "ok" and r.get("gbps"):
                xs.append(i - 0.4 + width * (j + 0.5))
                ys.append(r["gbps"])
        bars = ax.bar(xs, ys, width, label=name, color=cmap(j % 20))
        if name == "ours":
            for b in bars:
                b.set_edgecolor("black")
                b.set_linewidth(1.5)
    for i, s in enumerate(sizes):
        raw = result["sizes"][s]["methods"].get("raw_read", {})
        if raw.get("gbps"):
            ax.hlines(raw["gbps"], i - 0.45, i + 0.45, colors="black", linestyles="dashed")
            ax.annotate(
                f"raw read {raw['gbps']:.1f}",
                (i + 0.45, raw["gbps"]),
                fontsize=7,
                ha="right",
                va="bottom",
            )
    h2d = result.get("h2d_gbps")
    if h2d:
        ax.axhline(h2d, color="red", linestyle="dotted", label=f"host-to-device {h2d:.1f}")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels(
        [f"{s}\n({result['sizes'][s]['tensors']} tensors)" for s in sizes], fontsize=9
    )
    ax.set_ylabel("throughput, GB/s (median)")
    m = result["machine"]
    loads = [
        f"{n} {s['load_average']['before'][0]:.1f}"
        for n, s in result["sizes"].items()
        if (s.get("load_average") or {}).get("before")
    ]
    ax.set_title(
        f"Restore into existing variables on {result['device']}: {m.get('cpu_model')},"
        f" {m.get('cpu_count')} CPUs, TF {m.get('tensorflow')}"
        + (f"\nload average when measured: {', '.join(loads)}" if loads else ""),
        fontsize=10,
    )
    ax.legend(fontsize=7, ncol=2, loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    if has_first:
        _first_restore.draw(axes[1][0], result)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


TABLE_COLUMNS = [
    ("raw_read", "raw read"),
    ("saver_restore", "Saver.restore"),
    ("saver_restore_graph", "Saver.restore (graph)"),
    ("checkpoint_restore", "Checkpoint.restore"),
    ("get_tensor_assign", "get_tensor + assign"),
    ("restorev2_parallel", "RestoreV2 in threads"),
    ("ours", "**ours**"),
    ("ours_staged", "ours, staging='all'"),
]


def markdown_table(result: dict[str, Any]) -> str:
    """The README's table: GB/s (median) per size and method, and ours' ratios."""
    head = ["checkpoint"] + [label for _, label in TABLE_COLUMNS]
    head += ["ours / Saver", "ours / Checkpoint.restore"]
    head += ["first restore: ours / Saver", "first restore: ours / Checkpoint.restore"]
    head += ["load avg"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, size in result["sizes"].items():
        methods = size["methods"]
        desc = f"{name}: {size['tensors']} tensors, {size['bytes'] / MiB:.0f} MiB"
        cells = [desc]
        for key, _ in TABLE_COLUMNS:
            r = methods.get(key, {})
            ok = r.get("status") == "ok" and r.get("verified", True) and r.get("gbps")
            cells.append(f"{r['gbps']:.2f}" if ok else "-")
        for key in (
            "ours_vs_saver_restore",
            "ours_vs_checkpoint_restore",
            "first_ours_vs_saver_restore",
            "first_ours_vs_checkpoint_restore",
        ):
            ratio = size["ratios"].get(key)
            cells.append(f"{ratio:.2f}x" if ratio else "-")
        load = (size.get("load_average") or {}).get("before")
        cells.append(f"{load[0]:.1f}" if load else "-")
        lines.append("| " + " | ".join(cells) + " |")
    m = result["machine"]
    lines.append("")
    lines.append(
        f"GB/s, median of {result['repeats']} after {result.get('warmup', 0)} warm-up run(s),"
        f" values checked; {m.get('cpu_count')} x {m.get('cpu_model')},"
        f" {(m.get('ram_bytes') or 0) / 2**30:.0f} GiB, TF {m.get('tensorflow')},"
        f" {result['device']}. First restore: the median of {result.get('cold', 0)} fresh"
        f" processes per method, each timing its first restore (page cache hot). Load avg:"
        f" the 1-minute load average when the size was measured (this benchmark alone"
        f" accounts for about 1 to 2 of it)."
    )
    return "\n".join(lines)


def carry_over(result: dict[str, Any], path: Path, log: Callable[[str], None]) -> None:
    """Keeps the sizes of an earlier result file that this run did not measure.

    Each size's numbers come from one run (its ratios are never mixed across runs); a
    kept size says when it was measured and by which run (``carried_over_from``).
    """
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if old.get("device") != result["device"]:
        return
    for name, entry in old.get("sizes", {}).items():
        if name not in result["sizes"]:
            entry.setdefault("carried_over_from", old.get("created"))
            result["sizes"][name] = entry
            log(f"kept {name} from the earlier run of {entry['carried_over_from']}")
    order = sorted(
        result["sizes"],
        key=lambda n: (result["sizes"][n].get("kind") == "small", result["sizes"][n]["bytes"]),
    )
    result["sizes"] = {n: result["sizes"][n] for n in order}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="512M,small2000", help="comma list: 64M,512M,2G,small2000")
    p.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1, help="untimed runs per method first")
    p.add_argument("--methods", default="", help="comma list of method names (default: all)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, 1 repeat (CI smoke test)")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory probes")
    p.add_argument(
        "--cold",
        type=int,
        default=3,
        help="fresh processes per method timing its first restore (0: none; --quick: 1)",
    )
    p.add_argument(
        "--first",
        type=int,
        default=3,
        help="fresh processes per front-end scenario timing a first restore end to end"
        " (import + variables + restore; 0: none; --quick: 1)",
    )
    p.add_argument("--probe", default="", help=argparse.SUPPRESS)
    p.add_argument("--workdir", default="", help="where checkpoints are written and reused")
    p.add_argument("--out", default="", help="JSON path")
    p.add_argument("--table", default="", help="print the markdown table of a result JSON, exit")
    p.add_argument("--redraw", default="", help="redraw the chart of a result JSON, exit")
    p.add_argument(
        "--chart", default="", help="PNG path ('' = next to the JSON, 'none' = no chart)"
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="drop the sizes of an existing --out file instead of keeping those not re-run",
    )
    args = p.parse_args(argv)
    if args.table:
        table = json.loads(Path(args.table).read_text())
        print(markdown_table(table) + "\n\n" + _first_restore.table(table))
        return 0
    if args.probe:
        return probe_main(args.probe, args.sizes, Path(args.workdir), args.device)
    if args.redraw:
        source = Path(args.redraw)
        draw_chart(json.loads(source.read_text()), Path(args.chart or source.with_suffix(".png")))
        return 0

    if args.quick:
        args.sizes = "4M,small40" if args.sizes == p.get_default("sizes") else args.sizes
        args.repeats, args.warmup, args.cold = 1, 0, min(args.cold, 1)
        args.first = min(args.first, 1)  # probes for the last size only (see below)
    specs = [parse_size(t) for t in args.sizes.split(",") if t.strip()]
    apply_logger = logging.getLogger("tf1compat_init.apply")
    apply_logger.setLevel(logging.INFO)
    apply_logger.addHandler(APPLY_LOG)
    apply_logger.propagate = False  # TensorFlow's absl handler on the root would print it
    by_name = {cls.name: cls for cls in METHODS}
    wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in by_name]
    if unknown:
        p.error(f"unknown methods {unknown}; known: {', '.join(by_name)}")
    selected = [by_name[m] for m in wanted] if wanted else list(METHODS)

    import tensorflow as tf

    device = "/CPU:0"
    if args.device == "gpu":
        if not tf.config.list_physical_devices("GPU"):
            print("--device gpu: TensorFlow sees no GPU on this machine", file=sys.stderr)
            return 2
        device = "/GPU:0"

    suffix = "quick" if args.quick else args.device
    out = Path(args.out) if args.out else RESULTS / f"restore_speed_{suffix}.json"
    chart = None if args.chart == "none" else Path(args.chart or out.with_suffix(".png"))
    out.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="tci-bench-"))

    def log(line: str) -> None:
        print(line, flush=True)

    result: dict[str, Any] = {
        "schema": 1,
        "benchmark": "restore_speed",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "quick": args.quick,
        "device": device,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "cold": args.cold,
        "first": args.first,
        "machine": machine(device),
        "h2d_gbps": h2d_bandwidth(device, args.repeats),
        "sizes": {},
    }

    def probes_here(spec: Spec) -> bool:
        # --quick starts its fresh processes (memory, first restore per method and per
        # front end) for the last size only: each costs an import of TensorFlow.
        return not args.quick or spec is specs[-1]

    memory_methods = (
        () if args.no_memory else QUICK_MEMORY_METHODS if args.quick else MEMORY_METHODS
    )

    try:
        for spec in specs:
            log(f"{spec.name}: {len(spec.tensors)} tensors, {spec.nbytes / MiB:.0f} MiB")
            prefix = write_checkpoint(spec, workdir / spec.name)
            load_before = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
            measured = bench_size(
                spec,
                prefix,
                device,
                args.repeats,
                args.warmup,
                selected,
                lambda kind, name, spec=spec: run_probe(
                    kind, name, spec.name, workdir, args.device
                ),
                log,
                memory=memory_methods if probes_here(spec) else (),
                cold=args.cold if probes_here(spec) else 0,
                first=args.first if probes_here(spec) else 0,
            )
            measured["measured_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            measured["load_average"] = {
                "before": load_before,
                "after": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            }
            result["sizes"][spec.name] = measured
            for goal, g in result["sizes"][spec.name]["goals"].items():
                if g["ratio"] is None:
                    log(f"  goal {goal}: n/a (a method was skipped or failed)")
                else:
                    log(f"  goal {goal}: {g['ratio']:.2f} ({'met' if g['met'] else 'NOT met'})")
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    if hasattr(os, "getloadavg"):
        result["machine"]["load_average_end"] = list(os.getloadavg())
    if out.exists() and not args.fresh and not args.quick:
        carry_over(result, out, log)
    out.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    log(f"wrote {out}")
    log(markdown_table(result))
    log("")
    log(_first_restore.table(result))
    if chart is not None:
        try:
            draw_chart(result, chart)
            log(f"wrote {chart}")
        except ImportError as e:  # matplotlib is optional (absent from the TF 2.15 env)
            log(f"no chart: {e}")
    ok = all(
        r.get("verified", True)
        for s in result["sizes"].values()
        for r in s["methods"].values()
        if r.get("status") == "ok"
    ) and all(
        r.get("verified", True)
        for s in result["sizes"].values()
        for r in (s.get("first_restore") or {}).get("scenarios", {}).values()
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
